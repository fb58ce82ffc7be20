"""Small things a new user trips over: plurals, `report show` without a report, which session
`blockers list` shows, and `doctor`'s remedies (in process, through ``stoprule.cli.main.run``)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from clirunner import cli


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, default_pack: Path) -> Path:
    (tmp_path / ".stoprule").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("STOPRULE_POLICY", str(default_pack))
    monkeypatch.setenv("STOPRULE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("STOPRULE_SESSION", raising=False)
    return tmp_path


def test_one_blocker_is_not_plural(project: Path) -> None:
    fact = {"availableTasks": ["t2"], "openBlockerCount": 1, "openBlockers": [{"question": "Which?"}]}
    r = cli("eval", stdin=json.dumps(fact).encode())
    message = json.loads(r.out)["message"]
    assert "1 blockers" not in message and "blockers logged for the user: 1 (Which?)" in message


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_report_show_without_a_report(project: Path, fmt: str) -> None:
    r = cli("report", "show", "--format", fmt)
    assert r.code == 1
    assert "Max turns exceeded" not in r.out + r.err
    assert "no blocked report for this project" in r.err
    assert (json.loads(r.out)["report"] is None) if fmt == "json" else r.out == ""


def test_blockers_list_names_its_session_and_agrees_with_status(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    add = ["blocker", "add", "--category", "missing_dependency", "--context", "c", "--blocks-progress"]
    assert cli(*add, "--question", "Q1?", "--session", "s1").code == 0
    assert cli(*add, "--question", "Q2?", "--session", "s2").code == 0
    status = cli("blockers", "status")
    assert "2 open, 0 resolved (all sessions)" in status.out
    listing = cli("blockers", "list").out.splitlines()
    assert listing[0] == "Session default: (2 more in other sessions: stoprule blockers list --all)"
    assert listing[1] == "Open blockers (0):"
    mine = cli("blockers", "list", "--session", "s1").out.splitlines()
    assert mine[0].startswith("Session s1: (1 more in other sessions") and mine[1] == "Open blockers (1):"
    every = cli("blockers", "list", "--all").out.splitlines()
    assert every[:2] == ["All sessions:", "Open blockers (2):"]


def _exe(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(0o755)


def test_doctor_remedies(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    init = cli("init", "--harness", "claude-code", "--command", "/nonexistent/stoprule hook claude-code")
    assert init.code == 0, init.err
    bin_dir = project / "bin"
    bin_dir.mkdir()
    _exe(bin_dir / "nopy", "#!/bin/sh\nexit 1\n")  # an interpreter without the MCP SDK
    _exe(bin_dir / "stoprule", f"#!{bin_dir / 'nopy'}\n")
    server = {"command": "stoprule", "args": ["mcp"]}
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"stoprule": server}}))
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    r = cli("doctor")
    assert r.code == 1
    lines = r.out.splitlines()
    path_line = next(ln for ln in lines if "resolves to nothing on a PATH" in ln)
    assert path_line.startswith("FAIL") and "stoprule init --harness claude-code" in path_line
    mcp_line = next(ln for ln in lines if "MCP server in .mcp.json" in ln)
    assert mcp_line.startswith("FAIL") and "MCP SDK is not installed" in mcp_line and "stoprule[mcp]" in mcp_line
    _exe(bin_dir / "stoprule", f"#!{sys.executable}\n")  # the SDK is installed in the test's environment
    mcp_line = next(ln for ln in cli("doctor").out.splitlines() if "MCP server in .mcp.json" in ln)
    assert mcp_line.startswith("ok") and "MCP SDK installed" in mcp_line


def test_blocker_category_did_you_mean(project: Path) -> None:
    r = cli(
        "blocker", "add", "--category", "missing_dependncy", "--question", "Q?", "--context", "c", "--blocks-progress"
    )
    assert r.code != 0
    said = r.out + r.err
    assert "category 'missing_dependncy' is not a blocker category" in said
    assert "Did you mean 'missing_dependency'?" in said
