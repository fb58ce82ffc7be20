"""``stoprule serve``'s refusals before it listens (in process): each is exit 2 with a clear message."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from stoprule.cli.main import run as cli


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return cli(list(argv), io.BytesIO(), out, err), out.getvalue(), err.getvalue()


def test_new_token_prints_a_token_and_its_hash() -> None:
    code, out, _ = _cli("serve", "--new-token")
    assert code == 0 and out.startswith("token: srv1_") and "sha256: sha256:" in out


@pytest.mark.parametrize(
    ("config", "flags", "message"),
    [
        ("", (), "no bearer tokens configured"),
        ("colour: blue\n", (), "serve.yaml:1:1: config.unknown_key: unknown key 'colour'"),
        ("tokens: [{name: a, sha256: nope}]\n", (), "tokens[0].sha256"),
        ("", ("--no-auth", "--host", "0.0.0.0"), "--no-auth listens on loopback only"),
        ("", ("--no-auth", "--policy", "MISSING"), "error(s) in"),
    ],
)
def test_refusals(tmp_path: Path, config: str, flags: tuple[str, ...], message: str) -> None:
    cfg = tmp_path / "serve.yaml"
    cfg.write_text(config)
    flags = tuple(str(tmp_path / "nowhere") if f == "MISSING" else f for f in flags)
    code, out, err = _cli("serve", "--config", str(cfg), *flags)
    assert code == 2 and message in err and out == ""
