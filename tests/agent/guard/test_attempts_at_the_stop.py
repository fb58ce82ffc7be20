"""Every refused attempt reaches the user: the next stop names what is new (the harness's user
channel, and the agent's instruction on a block), the stop's fact carries the session's
attempts into the ledger (``stoprule log show`` lists them), and with nothing else to do the
pack's verdict is user review naming them."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from clirunner import invoke
from hookharness import payload, run_hook
from stoprule.agent.guard.journal import read_attempts, record_attempt


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "p"
    root.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return root


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("STOPRULE_", "CLAUDE_"))}
    full.update(
        HOME=str(tmp_path / "home"), XDG_STATE_HOME=str(tmp_path / "state"), STOPRULE_CACHE_DIR=str(tmp_path / "cache")
    )
    return full


def _wired(project: Path, env: dict[str, str]) -> None:
    assert invoke(["init", "--harness", "claude-code", "--no-mcp"], env=env, cwd=project).returncode == 0
    subprocess.run(["git", "add", "-A"], cwd=project, check=True)
    subprocess.run(
        ["git", "-c", "user.email=t@e.invalid", "-c", "user.name=t", "commit", "-qm", "w"], cwd=project, check=True
    )


def _stop(project: Path, env: dict[str, str], **changes: object):  # noqa: ANN202
    return run_hook(
        "claude-code", payload("claude-code", session_id="sess-1", cwd=str(project), **changes), project, env
    )


def test_the_next_stop_names_each_new_attempt_once_and_the_ledger_keeps_them(
    project: Path, env: dict[str, str]
) -> None:
    _wired(project, env)
    record_attempt(
        str(project / ".stoprule"),
        "sess-1",
        {"via": "guard", "tool": "Bash", "kind": "command", "what": "runs `stoprule blockers off`"},
    )
    first = _stop(project, env)
    assert first.stops  # nothing else to do: the stop is allowed, for the user to review
    assert "refused 1 attempt(s)" in first.user_sees and "stoprule blockers off" in first.user_sees
    log = [json.loads(line) for line in (project / ".stoprule" / "hook.log").read_text().splitlines()]
    stop = log[-1]
    assert stop["verdict"]["reason"] == "tamper_attempts"
    assert stop["fact"]["tamperAttempts"] == ["guard: Bash: runs `stoprule blockers off`"]
    second = _stop(project, env)
    assert "stoprule refused" not in (second.user_sees or "")  # named once (the review reason still lists them)
    (project / "notes.txt").write_text("work\n")
    cli = {"via": "cli", "kind": "command", "what": "ran `stoprule facts set` inside the session"}
    record_attempt(str(project / ".stoprule"), "sess-1", cli)
    third = _stop(project, env)
    assert not third.stops and "notes.txt" in third.instruction  # the work still comes first
    assert "stoprule facts set" in third.instruction and "stoprule facts set" in third.user_sees
    shown = invoke(["log", "show", "sess-1"], env=env, cwd=project)
    assert shown.returncode == 0, shown.stderr
    assert "refused attempts by the agent (2):" in shown.stdout
    assert "guard: Bash: runs `stoprule blockers off`" in shown.stdout
    assert "cli: ran `stoprule facts set`" in shown.stdout


def test_attempts_are_named_even_with_the_providers_turned_off(project: Path, env: dict[str, str]) -> None:
    _wired(project, env)
    cfg = project / ".stoprule" / "config.yaml"
    cfg.write_text(cfg.read_text().replace("enabled: [hook, state, blockers, transcript, closure, git]", "enabled: []"))
    record_attempt(str(project / ".stoprule"), "sess-1", {"via": "guard", "tool": "Write", "what": "writes x"})
    assert "writes x" in (_stop(project, env).user_sees or "")


def test_a_session_without_attempts_is_decided_as_before(project: Path, env: dict[str, str]) -> None:
    _wired(project, env)
    out = _stop(project, env)
    assert out.stops and out.user_sees is None
    assert "tamperAttempts" not in json.loads((project / ".stoprule" / "hook.log").read_text().splitlines()[-1])["fact"]


def _use(tid: str, path: str) -> str:
    block = {
        "type": "tool_use",
        "id": tid,
        "name": "Edit",
        "input": {"file_path": path, "old_string": "a", "new_string": "b"},
    }
    return json.dumps({"type": "assistant", "message": {"role": "assistant", "content": [block]}})


def _denied(tid: str) -> str:
    text = "Permission to use Edit has been denied because of your permission settings."
    result = {"type": "tool_result", "tool_use_id": tid, "is_error": True, "content": text}
    return json.dumps({"type": "user", "message": {"role": "user", "content": [result]}})


def test_a_refusal_by_the_harness_deny_rules_is_read_from_what_the_transcript_gained(
    project: Path, env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Claude Code's own deny rules refuse a call before any hook sees it: the stop reads the
    refusal from the transcript once, and reads the transcript's tail only when what it gained
    since the last stop names a refusal (a long session's transcript is not read again per stop)."""
    from stoprule._util import regular

    _wired(project, env)
    transcript = tmp_path / "t.jsonl"
    config = str(project / ".stoprule" / "config.yaml")
    padding = json.dumps({"type": "user", "message": {"role": "user", "content": "x" * 1000}})
    transcript.write_text("\n".join([padding] * 200 + [_use("toolu_1", config)]) + "\n")
    tails: list[str] = []
    real_tail = regular.read_regular

    def read_regular(path: str, limit: int, *, tail: bool = False) -> bytes | None:
        if path == str(transcript):
            tails.append(path)
        return real_tail(path, limit, tail=tail)

    monkeypatch.setattr(regular, "read_regular", read_regular)
    first = _stop(project, env, transcript_path=str(transcript))
    assert "refused" not in (first.user_sees or "") and tails == []  # nothing refused yet: no tail read
    with open(transcript, "a") as fh:  # the refusal lands after the call (which the last stop saw)
        fh.write(_denied("toolu_1") + "\n")
    second = _stop(project, env, transcript_path=str(transcript))
    assert "refused by the harness's deny rules" in (second.user_sees or ""), second.user_sees
    assert len(tails) == 1
    with open(transcript, "a") as fh:
        fh.write(padding + "\n")
    _stop(project, env, transcript_path=str(transcript))
    assert len(tails) == 1  # what it gained names no refusal: the tail is not read again
    journaled = [a for a in read_attempts(str(project / ".stoprule"), "sess-1") if a.get("via") == "harness"]
    assert [a.get("id") for a in journaled] == ["toolu_1"]  # journaled once
