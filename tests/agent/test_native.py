"""The harnesses' own routes, in process: Codex's MCP registration, the plugins and extensions
stoprule generates, the in-session ``/blockers`` command, the newer hook events (the real
binaries run them in ``tests/harness/test_native.py``)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import tomllib

from stoprule.cli.main import run as cli


def _cli(*args: str, stdin: bytes = b"") -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli(list(args), io.BytesIO(stdin), out, err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    return tmp_path


@pytest.mark.parametrize("before", ["", 'model = "o4"\n\n[mcp_servers.docs]\ncommand = "docs"\n', "x = 1"])
def test_init_registers_the_codex_mcp_server_as_required_in_the_projects_config(project: Path, before: str) -> None:
    toml = project / ".codex" / "config.toml"
    if before:
        toml.parent.mkdir()
        toml.write_text(before)
    code, out, _ = _cli("init", "--harness", "codex")
    assert code == 0, out
    config = tomllib.loads(toml.read_text())
    server = config["mcp_servers"]["stoprule"]
    assert server["required"] is True and server["args"][-1] == "mcp"
    if before:  # kept, with a backup of the file as it was
        old = tomllib.loads(before)
        old.setdefault("mcp_servers", {})["stoprule"] = server
        assert config == old
        assert (project / ".codex" / "config.toml.bak").read_text() == before
    again = _cli("init", "--harness", "codex")
    assert "already there" in again[1] and tomllib.loads(toml.read_text()) == config


def test_init_keeps_a_codex_server_it_did_not_write_and_says_when_it_is_not_required(project: Path) -> None:
    toml = project / ".codex" / "config.toml"
    toml.parent.mkdir()
    toml.write_text('[mcp_servers.stoprule]\ncommand = "stoprule"\nargs = ["mcp"]\n')
    code, out, _ = _cli("init", "--harness", "codex")
    assert code == 0 and "required = true" in out
    assert "required" not in toml.read_text()


def test_init_writes_nothing_into_a_codex_config_it_cannot_read(project: Path) -> None:
    toml = project / ".codex" / "config.toml"
    toml.parent.mkdir()
    toml.write_text("[broken\n")
    code, _, err = _cli("init", "--harness", "codex")
    assert code == 0 and "cannot use" in err and "required = true" in err  # the snippet to add by hand
    assert toml.read_text() == "[broken\n"
