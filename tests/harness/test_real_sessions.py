"""stoprule inside the real harness programs, each against a scripted model on 127.0.0.1.

Every scenario runs the harness headless in a fresh git project wired by
``stoprule init --harness H``; it asserts on what the harness did (the hook's decisions,
the commits) and on what it sent back to the model (a block's reason is the content of
the model's next request). Run alone: ``python -m pytest -m harness -n 0``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from harnesses import DRIVERS, Session, require, run_session
from model_servers import Turn
from scenarios import AWS_KEY, QUESTION, SECRET, blocker, commit, never_complies, report_status

pytestmark = pytest.mark.harness

HARNESSES = list(DRIVERS)


def blocks(s: Session) -> list[bool]:
    return [e["decision"]["block"] for e in s.stops()]


@pytest.mark.parametrize("harness", HARNESSES)
def test_uncommitted_work_blocks_once_then_the_commit_lets_the_agent_stop(
    harness: str, run_session_: Callable[..., Session]
) -> None:
    s = run_session_(harness, *commit(DRIVERS[harness]))
    assert s.result is not None and s.result.returncode == 0, s.describe()
    stops = s.stops()
    assert blocks(s) == [True, False], s.describe()
    assert stops[0]["verdict"]["reason"] == "uncommitted_work"
    assert stops[0]["fact"]["uncommittedWork"] is True
    # the reason (naming the file) came back to the model as the content of the request after the stop
    reason = stops[0]["decision"]["message"]
    assert "notes.txt" in reason
    assert s.script.first_seeing(reason) == 2, s.describe()
    assert s.script.exhausted()
    assert "add notes" in s.git("log", "--format=%s")
    assert "notes.txt" not in s.git("status", "--porcelain")  # (OpenCode itself rewrites its opencode.json)


@pytest.mark.parametrize("harness", HARNESSES)
def test_an_agent_that_never_complies_is_let_go_at_the_loop_cap(
    harness: str, run_session_: Callable[..., Session]
) -> None:
    s = run_session_(harness, *never_complies(DRIVERS[harness]))
    assert s.result is not None and s.result.returncode == 0, s.describe()
    stops = s.stops()
    assert blocks(s) == [True, True, True, False], s.describe()  # loop_cap 3 (init's config)
    assert [e["loop"]["capped"] for e in stops] == [False, False, False, True]
    assert "allowed this stop after 3 consecutive blocks" in (stops[-1]["decision"]["notice"] or "")
    # one request for the tool, one for each stop: the fourth stop ended the session
    assert len(s.script.main) == 5, s.describe()
    assert "notes.txt" in s.git("status", "--porcelain")


@pytest.mark.parametrize("harness", HARNESSES)
def test_the_blocker_tool_over_mcp_logs_the_blocker_redacted(
    harness: str, run_session_: Callable[..., Session]
) -> None:
    s = run_session_(harness, *blocker(DRIVERS[harness]))
    assert s.result is not None and s.result.returncode == 0, s.describe()
    # the tool's answer reached the model
    assert s.script.first_seeing("Blocker logged") is not None, s.describe()
    # logged, redacted: the question is in the project's files, the secrets nowhere
    texts = {p: p.read_bytes() for p in s.project.rglob("*") if p.is_file() and ".git" not in p.parts}
    assert any(QUESTION.encode() in t for t in texts.values()), sorted(map(str, texts))
    leaked = [str(p) for p, t in texts.items() if SECRET.encode() in t or AWS_KEY.encode() in t]
    assert leaked == []
    # the stop after it reports the blocker (user review), it does not demand a commit
    last = s.stops()[-1]
    assert last["verdict"]["reason"] == "open_blockers", s.describe()
    assert last["decision"]["block"] is False


@pytest.mark.parametrize("harness", HARNESSES)
def test_report_status_facts_decide_the_next_stop(harness: str, run_session_: Callable[..., Session]) -> None:
    s = run_session_(harness, *report_status(DRIVERS[harness]))
    assert s.result is not None and s.result.returncode == 0, s.describe()
    stops = s.stops()
    assert blocks(s) == [True, False], s.describe()
    assert stops[0]["fact"].get("status") == "partial"
    assert stops[0]["verdict"]["reason"] == "soft_blocker"
    assert stops[1]["fact"].get("status") == "implemented"
    assert s.script.first_seeing(stops[0]["verdict"]["message"][:40]) is not None


def test_copilot_runs_a_claude_code_hook_and_stoprule_reads_copilots_session(tmp_path: Path) -> None:
    """Copilot CLI also runs a project's ``.claude/settings.json`` hooks: in a project wired only
    for Claude Code, the hook recognises Copilot's payload and reads Copilot's transcript."""
    require("copilot")
    d = DRIVERS["copilot"]
    s = run_session("copilot", tmp_path, *commit(d), wire="claude-code")
    assert s.result is not None and s.result.returncode == 0, s.describe()
    assert not (s.project / ".github" / "hooks").exists()
    stops = s.stops()
    assert blocks(s) == [True, False], s.describe()
    assert s.script.first_seeing(stops[0]["decision"]["message"]) == 2, s.describe()
    # read as Copilot's: its events.jsonl gives the turn (Claude's reader would find none). Copilot
    # 1.0.102 sometimes creates that file only after this hook has run: then the note says so
    notes = stops[0]["provenance"]["notes"].get("transcript") or []
    if any("not found" in n for n in notes):
        assert "turn" not in stops[0]["fact"], stops[0]
    else:
        assert stops[0]["fact"].get("turn") == 1, stops[0]["fact"]
        # its assistant.message may also reach the file only after the hook ran: then no last
        # message is read from it (none rather than a wrong one), and no note says one was
        assert notes in ([], ["last message read from the transcript"]), notes


ASKS = "The migration script is ready. Should I apply it to the staging database?"


@pytest.mark.parametrize("harness", ["claude-code", "codex"])
@pytest.mark.parametrize("mode", ["autonomous", "interactive"])
def test_the_same_question_is_pushed_back_only_in_an_autonomous_session(
    harness: str, mode: str, run_session_: Callable[..., Session]
) -> None:
    """The headless run is autonomous as the harness says (``claude -p``: its entrypoint; ``codex
    exec``: the rollout's source); the user's switch in the prompt makes the same run interactive."""
    from harnesses import PROMPT

    prompt = PROMPT + ("\nstoprule: mode=interactive" if mode == "interactive" else "")
    s = run_session_(
        harness, [Turn(ASKS)], Turn("Decided myself: not applying it; logged for the user."), prompt=prompt
    )
    assert s.result is not None and s.result.returncode == 0, s.describe()
    first = s.stops()[0]
    assert first["fact"]["sessionMode"] == mode, first["provenance"]["fields"].get("sessionMode")
    assert first["fact"]["questionAsked"] is True
    if mode == "autonomous":
        assert blocks(s)[0] is True and first["verdict"]["reason"] == "unlogged_question", s.describe()
        assert s.script.first_seeing("nobody will answer") is not None
    else:
        assert blocks(s) == [False], s.describe()
        assert first["provenance"]["fields"]["sessionMode"]["source"].startswith("the user's switch")
