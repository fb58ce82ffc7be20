"""``log import``: export records appended to another ledger exactly as recorded, or refused whole."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from ledger_facts import CONTINUITY, ESCAPE, FIXED, OK, REVIEW
from stoprule.cli.main import run as cli

PACK = str(Path(__file__).resolve().parents[2] / "policies")


def _cli(*argv: str, stdin: bytes = b"") -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return cli(list(argv), io.BytesIO(stdin), out, err), out.getvalue(), err.getvalue()


@pytest.fixture
def exported(tmp_path: Path) -> tuple[str, str]:
    src = str(tmp_path / "src.db")
    data = "\n".join(json.dumps(f) for f in (OK, ESCAPE, CONTINUITY)).encode()
    _cli("eval", "--policy", PACK, "--run", "r1", "--ledger", src, "-", stdin=data)
    token = json.loads(_cli("log", "export", "--ledger", src)[1].splitlines()[-1])["envelope"]
    assert token["verdict"] == "continuity_failure"
    out = _cli(
        "eval",
        "--policy",
        PACK,
        "--run",
        "r2",
        "--ledger",
        src,
        "--format",
        "json",
        "-",
        stdin=json.dumps(CONTINUITY).encode(),
    )[1]
    _cli(
        "eval",
        "--policy",
        PACK,
        "--run",
        "r2",
        "--retry",
        json.loads(out)["retry_token"],
        "--ledger",
        src,
        "-",
        stdin=json.dumps(FIXED).encode(),
    )
    _cli("eval", "--policy", PACK, "--run", "r3", "--ledger", src, "-", stdin=json.dumps(REVIEW).encode())
    return src, _cli("log", "export", "--ledger", src)[1]


def test_import_into_an_empty_ledger_reproduces_it_exactly(tmp_path: Path, exported: tuple[str, str]) -> None:
    src, text = exported
    dst = str(tmp_path / "dst.db")
    code, out, err = _cli("log", "import", "--ledger", dst, stdin=text.encode())
    assert code == 0 and "imported 6 decision(s) of 3 run(s)" in out, err
    assert _cli("log", "export", "--ledger", dst)[1] == text
    assert _cli("log", "verify", "--ledger", dst)[0] == 0
    for argv in (("log", "show", "r2", "--format", "json"), ("log", "runs", "--format", "json")):
        assert _cli(*argv, "--ledger", dst)[1] == _cli(*argv, "--ledger", src)[1]


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (lambda r: r["envelope"].update(verdict="pass"), "does not chain to the exported hash"),
        (lambda r: r.update(at="2000-01-01T00:00:00.000Z"), "does not chain to the exported hash"),
        (lambda r: r["fact"].update(status="failed"), "the fact does not match its digest"),
        (lambda r: r.update(seq=7), "does not follow the run's"),
        (lambda r: r.pop("envelope"), "not a `log export` record"),
    ],
)
def test_an_altered_record_is_refused_and_nothing_is_imported(
    tmp_path: Path,
    exported: tuple[str, str],
    change,
    problem: str,  # noqa: ANN001
) -> None:
    _, text = exported
    lines = text.splitlines()
    rec = json.loads(lines[3])
    change(rec)
    lines[3] = json.dumps(rec)
    dst = str(tmp_path / "dst.db")
    code, _, err = _cli("log", "import", "--ledger", dst, stdin=("\n".join(lines) + "\n").encode())
    assert code == 2 and problem in err
    code, out, _ = _cli("log", "runs", "--ledger", dst, "--format", "json")
    assert code == 0 and json.loads(out) == []  # nothing imported (the import is one transaction)


def test_importing_the_same_export_twice_is_refused(tmp_path: Path, exported: tuple[str, str]) -> None:
    _, text = exported
    dst = str(tmp_path / "dst.db")
    assert _cli("log", "import", "--ledger", dst, stdin=text.encode())[0] == 0
    code, _, err = _cli("log", "import", "--ledger", dst, stdin=text.encode())
    assert code == 2 and "does not follow the run's" in err
