"""The harnesses' real formats: transcripts and payloads recorded from the real programs
(tests/fixtures/hooks/*/recorded/, see its SOURCE.md), and what stoprule reads from them."""

from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path

import pytest

from hookharness import FIXTURES, payload
from stoprule.agent.hook.adapters import adapter
from stoprule.agent.hook.declare import set_facts
from stoprule.agent.hook.event import Decision
from stoprule.agent.hook.runner import run_hook
from stoprule.agent.hook.transcripts.scan import Scan, detect
from stoprule.cli.main import run as cli

TRANSCRIPTS = sorted(p for p in FIXTURES.rglob("*.jsonl") if "payloads" not in p.name)
HARNESS_OF = {"claude-code": "claude-code", "codex": "codex", "gemini": "gemini", "copilot": None, "cursor": None}


def _lines(path: Path) -> list[bytes]:
    return [ln for ln in path.read_bytes().split(b"\n") if ln.strip()]


def _scan(fmt: str, lines: list[bytes], full: bool = False) -> Scan:
    scan = Scan(fmt, full=full)
    for line in lines:
        scan.feed(line)
    return scan


def _fmt(path: Path) -> str:
    harness = path.relative_to(FIXTURES).parts[0]
    fmt = detect(str(path), HARNESS_OF[harness])
    assert fmt is not None, path
    return fmt


def _spaced(lines: list[bytes]) -> list[bytes]:
    """The same lines written with spaces (``"type": "user"``), as another JSON writer would."""
    out = []
    for line in lines:
        try:
            out.append(json.dumps(json.loads(line)).encode())
        except ValueError:
            out.append(line)
    return out


@pytest.mark.parametrize("path", TRANSCRIPTS, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_hook_and_replay_read_every_fixture_alike_compact_or_spaced(path: Path) -> None:
    fmt, lines = _fmt(path), _lines(path)
    states = [_scan(fmt, ls, full).state() for ls in (lines, _spaced(lines)) for full in (False, True)]
    assert all(s == states[0] for s in states), path.name
    assert states[0]["turns"] >= 1


def test_gemini_tool_responses_are_not_turns_and_a_failed_command_is_kept() -> None:
    lines = _lines(FIXTURES / "gemini" / "recorded" / "transcript.jsonl")
    retry = next(i for i, ln in enumerate(lines) if b"Uncommitted work remains" in ln and b'"type":"user"' in ln)
    before = _scan("gemini", lines[:retry])  # what the first stop saw
    assert sum(b'"functionResponse"' in ln and b'"type":"user"' in ln for ln in lines[:retry]) >= 3
    assert before.turns == 1
    assert [f["tool"] for f in before.failed] == ["run_shell_command"]
    assert "Exit Code: 2" in before.failed[0]["error"]
    assert _scan("gemini", lines).turns == 2  # the prompt and the hook's retry


def test_codex_failures_come_from_function_call_output() -> None:
    scan = _scan("codex", _lines(FIXTURES / "codex" / "recorded" / "transcript.jsonl"))
    shell = [f for f in scan.failed if f["tool"] == "exec_command"]
    assert len(shell) == 1 and "cannot access" in shell[0]["error"] and "Chunk ID" not in shell[0]["error"]
    call = {"timestamp": "t", "type": "response_item", "payload": {"type": "function_call", "name": "shell",
            "arguments": "{}", "call_id": "c9"}}  # fmt: skip
    for output, failed in (
        ("Exit code: 1\nWall time: 0.1 seconds\nOutput:\nboom", True),
        (json.dumps({"output": "boom", "metadata": {"exit_code": 3}}), True),
        ("Process exited with code 0\nOutput:\nfine", False),
    ):
        out = {"timestamp": "t", "type": "response_item",
               "payload": {"type": "function_call_output", "call_id": "c9", "output": output}}  # fmt: skip
        s = _scan("codex", [json.dumps(call).encode(), json.dumps(out).encode()])
        assert [f["tool"] for f in s.failed] == (["shell"] if failed else []), output
        assert not failed or "boom" in s.failed[0]["error"]


def test_claude_names_the_failed_tool_and_interrupts_are_not_prompts() -> None:
    rec = _scan("claude", _lines(FIXTURES / "claude-code" / "recorded" / "transcript.jsonl"))
    assert ("Bash", True) in {(f["tool"], "Exit code 2" in f["error"]) for f in rec.failed}
    assert "tool" not in {f["tool"] for f in rec.failed}
    assert rec.turns == 1  # the stop hook's feedback line is not a prompt either
    interrupts = _scan("claude", _lines(FIXTURES / "claude-code" / "interrupts.jsonl"))
    assert interrupts.turns == 1 and [f["tool"] for f in interrupts.failed] == ["Bash"]


def test_a_todo_call_the_harness_refused_leaves_the_task_list() -> None:
    # Claude Code 2.1.332 refuses TodoWrite ("No such tool available"); Codex 0.169 has no update_plan
    assert _scan("claude", _lines(FIXTURES / "claude-code" / "recorded" / "transcript.jsonl")).tasks == []
    assert _scan("codex", _lines(FIXTURES / "codex" / "recorded" / "transcript.jsonl")).tasks == []
    gemini = _scan("gemini", _lines(FIXTURES / "gemini" / "recorded" / "transcript.jsonl"))
    assert [t["status"] for t in gemini.tasks] == ["complete", "complete"]  # write_todos ran


def test_copilot_events_a_block_reason_is_not_a_prompt() -> None:
    path = FIXTURES / "copilot" / "recorded" / "transcript.jsonl"
    assert detect(str(path)) == "copilot"
    scan = _scan("copilot", _lines(path))
    assert scan.turns == 1 and scan.last_text == "Committed notes.txt."
    assert [f["tool"] for f in scan.failed] == ["bash"] and "nonexistent" in scan.failed[0]["error"]


def _copy_until(src: Path, dst: Path, stop: bytes) -> Path:
    """``src`` up to (not including) the first line holding ``stop``: the transcript at a stop."""
    lines = _lines(src)
    cut = next(i for i, ln in enumerate(lines) if stop in ln)
    dst.write_bytes(b"\n".join(lines[:cut]) + b"\n")
    return dst


@pytest.mark.parametrize("harness", ["copilot", "cursor"])
def test_without_a_last_message_the_closure_trailer_is_read_from_the_transcript(harness: str, tmp_path: Path) -> None:
    (tmp_path / ".stoprule").mkdir()
    env = {"STOPRULE_NO_CACHE": "1"}
    if harness == "copilot":
        transcript = _copy_until(
            FIXTURES / "copilot" / "recorded" / "transcript.jsonl", tmp_path / "events.jsonl", b'"hook.start"'
        )
        stop = json.loads(_lines(FIXTURES / "copilot" / "recorded" / "payloads.jsonl")[0])
        stop.update(cwd=str(tmp_path), transcriptPath=str(transcript))
    else:
        stop = payload(
            "cursor", workspace_roots=[str(tmp_path)], transcript_path=str(FIXTURES / "cursor" / "transcript.jsonl")
        )
    assert "last_assistant_message" not in stop
    res = run_hook(harness, None, json.dumps(stop).encode(), cwd=str(tmp_path), env=env)
    assert res.entry["fact"].get("replyClosureState") == "waiting_user", res.entry
    notes = [n for ns in res.entry["provenance"]["notes"].values() for n in ns]
    assert any("read from the transcript" in n for n in notes), notes


def test_cursor_sends_no_followup_unless_the_turn_completed() -> None:
    cursor = adapter("cursor")
    for status, out in (("completed", {"followup_message": "M"}), ("aborted", {}), ("error", {}), (None, None)):
        ev = cursor.parse(payload("cursor", status=status) if status else payload("cursor"))
        assert cursor.render(Decision(True, "M"), ev) == (out if out is not None else {"followup_message": "M"})


def test_a_payload_of_another_harness_sent_to_the_claude_code_hook_is_read_by_its_shape() -> None:
    claude = adapter("claude-code")
    ev = claude.parse(payload("cursor", status="aborted", loop_count=2))
    assert (ev.harness, ev.session_id, ev.loop_count, ev.status) == ("cursor", "cu-conv-1", 2, "aborted")
    assert claude.render(Decision(True, "M"), ev) is None  # aborted: no block, in Claude's form
    rec = json.loads(_lines(FIXTURES / "copilot" / "recorded" / "payloads.jsonl")[1])
    ev = claude.parse(rec)
    assert (ev.harness, ev.session_id, ev.stop_hook_active, ev.flag_known) == ("copilot", rec["sessionId"], True, True)
    assert ev.transcript_path == rec["transcriptPath"]
    assert claude.render(Decision(True, "M"), ev) == {"decision": "block", "reason": "M"}
    # Copilot CLI running a .claude/settings.json hook sends Claude's names (+ stop_reason, timestamp)
    via_claude = json.loads(_lines(FIXTURES / "copilot" / "recorded" / "claude_hook_payloads.jsonl")[1])
    ev = claude.parse(via_claude)
    assert (ev.harness, ev.session_id, ev.stop_hook_active) == ("copilot", via_claude["session_id"], True)
    assert ev.transcript_path == via_claude["transcript_path"]
    for name in ("claude-code", "codex"):
        own = adapter(name).parse(json.loads(_lines(FIXTURES / name / "recorded" / "payloads.jsonl")[0]))
        assert own.harness == name and own.turn_id is not None


@pytest.mark.parametrize(
    ("harness", "var", "rel"),
    [
        ("claude-code", "CLAUDE_CONFIG_DIR", "settings.json"),
        ("codex", "CODEX_HOME", "hooks.json"),
        ("copilot", "COPILOT_HOME", "hooks/stoprule.json"),
    ],
)
def test_init_user_honours_the_harness_config_dir(
    harness: str, var: str, rel: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv(var, str(tmp_path / "moved"))
    out, err = io.StringIO(), io.StringIO()
    assert cli(["init", "--harness", harness, "--user"], io.BytesIO(b""), out, err) == 0, err.getvalue()
    written = tmp_path / "moved" / rel
    assert written.exists() and f"hook {harness}" in written.read_text()
    assert not (tmp_path / "home").exists() or not any((tmp_path / "home").rglob("*.json"))


def test_a_copilot_notice_is_not_dropped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("STOPRULE_NO_CACHE", "1")
    (tmp_path / ".stoprule").mkdir()
    set_facts(str(tmp_path / ".stoprule"), "cp-1", {"requires_user_review": True, "review_reason": "Needs a key"})
    stop = {"sessionId": "cp-1", "timestamp": 1, "cwd": str(tmp_path), "stopReason": "end_turn",
            "stop_hook_active": False}  # fmt: skip
    out, err = io.StringIO(), io.StringIO()
    assert cli(["hook", "copilot"], io.BytesIO(json.dumps(stop).encode()), out, err) == 0
    assert json.loads(out.getvalue()) == {}  # Copilot's agentStop output has no user channel
    assert "user review needed: Needs a key" in err.getvalue()


# ------------------------------------------------------------------ init and doctor, as the harness runs the hook


def _git_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    project = tmp_path / "p"
    project.mkdir()
    monkeypatch.chdir(project)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("STOPRULE_NO_CACHE", "1")
    for k in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "COPILOT_HOME"):
        monkeypatch.delenv(k, raising=False)
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    return project


def _commit_all(project: Path) -> None:
    subprocess.run(["git", "add", "-A"], cwd=project, check=True)
    subprocess.run(
        ["git", "-c", "user.email=t@e.invalid", "-c", "user.name=t", "commit", "-qm", "x"], cwd=project, check=True
    )


@pytest.mark.integration
def test_doctor_fails_a_hook_that_blocks_a_synthetic_stop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A hook that would block a clean session's stop fails doctor, and a dirty tree is named as
    the likely cause (the passing path, and a command outside the venv's PATH: tests/cli/test_first_hour.py)."""
    project = _git_project(tmp_path, monkeypatch)
    assert cli(["init", "--harness", "claude-code"], io.BytesIO(b""), io.StringIO(), io.StringIO()) == 0
    _commit_all(project)

    def doctor() -> tuple[int, str]:
        out = io.StringIO()
        return cli(["doctor"], io.BytesIO(b""), out, io.StringIO()), out.getvalue()

    set_facts(str(project / ".stoprule"), "stoprule-doctor", {"status": "partial"})  # a hook that always blocks
    code, out = doctor()
    assert code == 1 and "FAIL claude-code: synthetic stop: a synthetic stop is blocked" in out, out
    set_facts(str(project / ".stoprule"), "stoprule-doctor", {"status": "implemented"})
    (project / "README.md").write_text("dirty\n")
    code, out = doctor()
    assert code == 1 and "uncommitted changes" in out, out


@pytest.mark.parametrize("path", TRANSCRIPTS, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_replay_reads_every_harness_format(path: Path) -> None:
    from stoprule.agent.hook.replay import boundaries
    from stoprule.config.fields import DEFAULT_FIELDS

    stops = boundaries(str(path), _fmt(path), dict(DEFAULT_FIELDS))
    assert stops and all(b.fact.get("taskBoundaryStop") is True for b in stops)
