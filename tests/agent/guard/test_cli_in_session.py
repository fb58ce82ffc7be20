"""Inside an agent's session (its process ancestry links to the harness), stoprule's commands that
change what a stop decides refuse, say how the user does it, and are written to the session's
attempts; outside any session, and for the commands that only read, nothing changes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from clirunner import invoke
from stoprule.agent.blockers.procs import link_session
from stoprule.agent.guard.journal import read_attempts


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "p"
    (root / ".stoprule").mkdir(parents=True)
    return root


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("STOPRULE_")}
    full.update(HOME=str(tmp_path / "home"), XDG_STATE_HOME=str(tmp_path / "state"))
    return full


def _inside(project: Path) -> None:
    """This test process's ancestors linked to a session, as the harness's session start links them."""
    assert link_session(str(project / ".stoprule"), "sess-1", "claude-code") > 0


REFUSED = [
    ["facts", "set", "uncommittedWork=false"], ["facts", "clear", "--session", "x"], ["blockers", "off"],
    ["blockers", "on"], ["blockers", "resolve", "b-1"], ["pack", "init"], ["init", "--harness", "codex"],
    ["keys", "rotate"], ["keys", "retire", "k1"], ["guard", "off"], ["guard", "on"], ["log", "import", "x.ndjson"],
]  # fmt: skip


@pytest.mark.parametrize("argv", REFUSED, ids=[" ".join(a) for a in REFUSED])
def test_mutating_commands_refuse_inside_a_session(argv: list[str], project: Path, env: dict[str, str]) -> None:
    _inside(project)
    r = invoke(argv, env=env, cwd=project)
    assert r.returncode == 2
    assert "refused" in r.stderr and "claude-code session sess-1" in r.stderr
    assert "terminal outside the agent's session" in r.stderr  # how the user does it
    (attempt,) = read_attempts(str(project / ".stoprule"), "sess-1")
    assert attempt["via"] == "cli" and f"stoprule {argv[0]}" in attempt["what"]
    assert not (project / ".stoprule" / "guard.off").exists() and not (project / ".stoprule" / "policies").exists()


@pytest.mark.parametrize(
    "argv",
    [["facts", "show"], ["blockers", "status"], ["blockers", "list"], ["guard", "status"], ["keys", "list"], ["check"]],
)
def test_reading_commands_run_inside_a_session(argv: list[str], project: Path, env: dict[str, str]) -> None:
    _inside(project)
    r = invoke(argv, env=env, cwd=project)
    assert "refused" not in r.stderr
    assert read_attempts(str(project / ".stoprule"), "sess-1") == []


def test_outside_any_session_the_user_runs_them(project: Path, env: dict[str, str]) -> None:
    r = invoke(["facts", "set", "status=partial"], env=env, cwd=project)
    assert r.returncode == 0, r.stderr
    assert invoke(["guard", "off"], env=env, cwd=project).returncode == 0


def test_a_session_linked_in_the_users_state_directory_is_seen_from_anywhere(
    tmp_path: Path, env: dict[str, str]
) -> None:
    link_session(str(tmp_path / "state" / "stoprule"), "sess-2", "codex")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    r = invoke(["facts", "set", "status=implemented"], env=env, cwd=elsewhere)
    assert r.returncode == 2 and "codex session sess-2" in r.stderr
