"""Turns as a person counts them, record kinds the harnesses write (shapes as the public
transcripts of tests/fixtures/sessions/ and the harnesses' own files show them), and a
transcript still being written when the stop hook reads it."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from stoprule.agent.hook.event import HookEvent
from stoprule.agent.hook.providers import Context, gather
from stoprule.agent.hook.transcripts.scan import Scan, scan_file
from stoprule.config.fields import DEFAULT_FIELDS


def _user(content: Any, **extra: Any) -> dict[str, Any]:
    return {"type": "user", "message": {"role": "user", "content": content}, **extra}


def _said(text: str) -> dict[str, Any]:
    return {"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": text}]}}


def _cursor(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "message": {"content": [{"type": "text", "text": text}]}}


def _content(role: str, *parts: dict[str, Any]) -> dict[str, Any]:
    return {"role": role, "parts": list(parts)}


def _codex(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"timestamp": "2025-11-17T09:42:20Z", "type": kind, "payload": payload}


def _codex_msg(role: str, text: str) -> dict[str, Any]:
    kind = "input_text" if role == "user" else "output_text"
    return _codex("response_item", {"type": "message", "role": role, "content": [{"type": kind, "text": text}]})


CASES = [
    ("claude: a background task's notification is not the user's turn", "claude", [
        _user("Run the suite in the background."), _said("Started."),
        _user("<task-notification>bash 1 completed</task-notification>", origin={"kind": "task-notification"}),
        _said("The suite passed."),
    ], 1),
    ("claude: the ! bash mode is not a prompt", "claude", [
        _user("Fix the bug."), _said("Fixed."),
        _user("<bash-input>git status</bash-input>"),
        _user("<bash-stdout>clean</bash-stdout><bash-stderr></bash-stderr>"),
    ], 1),
    ("claude: a custom slash command carries the user's prompt; a built-in one does not", "claude", [
        _user("<command-message>review is running…</command-message>\n<command-name>/review</command-name>\n"
              "<command-args>the parser</command-args>"),
        _said("Reviewed."),
        _user("<command-name>/compact</command-name>\n<command-message>compact</command-message>"),
        _user("<local-command-stdout>Compacted</local-command-stdout>"),
    ], 1),
    ("codex 0.58: turn_context without turn_id before every model request", "codex", [
        _codex("session_meta", {"id": "s", "cli_version": "0.58.0", "source": "cli"}),
        _codex("turn_context", {"cwd": "/w", "model": "gpt-5"}),
        _codex_msg("user", "<environment_context>\n  <cwd>/w</cwd>\n</environment_context>"),
        _codex_msg("user", "Add a test."),
        _codex("turn_context", {"cwd": "/w", "model": "gpt-5"}),
        _codex_msg("assistant", "Added."),
        _codex("turn_context", {"cwd": "/w", "model": "gpt-5"}),
    ], 1),
    ("codex 0.40 (VS Code): the first prompt before the first turn_context", "codex", [
        _codex("session_meta", {"id": "s", "cli_version": "0.40.0", "originator": "codex_vscode"}),
        _codex_msg("user", "<environment_context>\n  <cwd>/w</cwd>\n</environment_context>"),
        _codex_msg("user", "# Context from my IDE setup:\n\n## My request for Codex:\nSpeed it up."),
        _codex("turn_context", {"cwd": "/w", "model": "gpt-5-codex"}), _codex_msg("assistant", "Done."),
        _codex("event_msg", {"type": "turn_aborted", "reason": "interrupted"}),
        _codex_msg("user", "# Context from my IDE setup:\n\n## My request for Codex:\nIs this done?"),
        _codex("turn_context", {"cwd": "/w", "model": "gpt-5-codex"}),
    ], 2),
    ("codex: a turn_id turn whose prompt came first", "codex", [
        _codex_msg("user", "Add a test."), _codex("turn_context", {"turn_id": "t1"}), _codex_msg("assistant", "Added."),
        _codex_msg("user", "And another."), _codex("turn_context", {"turn_id": "t2"}),
    ], 2),
    ("codex 0.135: one turn_context per turn_id", "codex", [
        _codex("turn_context", {"turn_id": "t1"}), _codex_msg("user", "Add a test."),
        _codex("turn_context", {"turn_id": "t1"}), _codex_msg("assistant", "Added."),
    ], 1),
    ("gemini checkpoint: setup, shell mode and a prompt resent after a tool round are not turns", "gemini", [[
        _content("user", {"text": "This is the Gemini CLI. We are setting up the context for our chat."}),
        _content("user", {"text": "I ran the following shell command:\n```sh\nls\n```"}),
        _content("user", {"text": "Document the settings."}),
        _content("model", {"functionCall": {"name": "read_file", "args": {}, "id": "r1"}}),
        _content("user", {"functionResponse": {"id": "r1", "name": "read_file", "response": {"output": "{}"}}}),
        _content("user", {"text": "Document the settings."}),
        _content("model", {"text": "Documented."}),
        _content("user", {"text": "list git commands"}), _content("user", {"text": "list git commands"}),
        _content("model", {"text": "git status, git log."}),
    ]], 3),
    ("codex 0.60: apply_patch as a custom tool call", "codex", [
        _codex("session_meta", {"id": "s", "cli_version": "0.60.1", "source": "cli"}),
        _codex("turn_context", {"cwd": "/w"}), _codex_msg("user", "Fix the board."),
        _codex("response_item", {"type": "custom_tool_call", "call_id": "c1", "name": "apply_patch", "input": "*"}),
        _codex("response_item", {"type": "custom_tool_call_output", "call_id": "c1",
                                 "output": "apply_patch verification failed: Failed to find expected lines"}),
    ], 1),
    ("cursor: a stop hook's follow-up is not the user's turn", "cursor", [
        _cursor("user", "<user_query>\nAdd a test.\n</user_query>"), _cursor("assistant", "Added."),
        _cursor("user", "Uncommitted work remains; commit it before stopping."), _cursor("assistant", "Committed."),
    ], 1),
]  # fmt: skip


@pytest.mark.parametrize(("name", "fmt", "lines", "turns"), CASES, ids=[c[0] for c in CASES])
def test_turns_as_a_person_counts_them(name: str, fmt: str, lines: list[dict[str, Any]], turns: int) -> None:
    scan = Scan(fmt, full=True)
    for line in lines:
        scan.feed(json.dumps(line).encode())
    assert scan.turns == turns, name
    assert scan.skipped == {}


def test_a_failed_apply_patch_is_a_failed_tool() -> None:
    scan = Scan("codex", full=True)
    for line in next(c[2] for c in CASES if c[0].startswith("codex 0.60")):
        scan.feed(json.dumps(line).encode())
    assert [f["tool"] for f in scan.failed] == ["apply_patch"]


_DOC = '[\n  {\n    "role": "user",\n    "parts": [{"text": "Hi."}]\n  }'


@pytest.mark.parametrize(
    ("text", "turns", "incomplete"),
    [
        (_DOC + "\n]", 1, False),  # as the CLI writes it: no final newline
        (_DOC + "\n]\n", 1, False),
        (_DOC + ",\n  {", 0, True),  # cut short
    ],
)
def test_a_gemini_document_is_read_whole_without_its_final_newline(
    tmp_path: Path, text: str, turns: int, incomplete: bool
) -> None:
    path = tmp_path / "checkpoint-review.json"
    path.write_text(text)
    saved, notes = scan_file(str(path), "gemini", None)
    assert saved["scan"]["turns"] == turns
    assert any("incomplete" in n for n in notes) == incomplete, notes


def test_cursors_todo_list_is_read_with_its_merges() -> None:
    scan = Scan("cursor", full=True)
    todo = {"type": "tool_use", "name": "TodoWrite", "input": {"merge": False, "todos": [
        {"id": "1", "content": "Write the parser", "status": "completed"},
        {"id": "2", "content": "Write its tests", "status": "in_progress"},
        {"id": "3", "content": "Document it", "status": "pending"}]}}  # fmt: skip
    merge = {"type": "tool_use", "name": "TodoWrite",
             "input": {"merge": True, "todos": [{"id": "2", "status": "completed"}]}}  # fmt: skip
    for blocks in ([todo], [merge]):
        scan.feed(json.dumps({"role": "assistant", "message": {"content": blocks}}).encode())
    assert [(t["title"], t["status"]) for t in scan.tasks] == [
        ("Write the parser", "complete"),
        ("Write its tests", "complete"),
        ("Document it", "pending"),
    ]


def _stop(path: Path, last_message: str | None, session: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    event = HookEvent(harness="claude-code", event="stop", transcript_path=str(path), last_message=last_message)
    settings = {"enabled": ["hook", "transcript", "closure"], "fields": dict(DEFAULT_FIELDS), "timeout_ms": 5000}
    ctx = Context(None, str(path.parent), str(path.parent), settings, session)
    fact, prov = gather(event, ctx)
    return fact, prov.notes.get("transcript", [])


def test_a_transcript_whose_last_records_arrive_after_the_stop_is_waited_for(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    call = {"type": "tool_use", "id": "tu1", "name": "TaskCreate", "input": {"subject": "Ship the release"}}
    create = {"type": "assistant", "message": {"role": "assistant", "content": [call]}}
    path.write_text("".join(json.dumps(x) + "\n" for x in (_user("Plan the release."), create)))
    late = [_user([{"type": "tool_result", "tool_use_id": "tu1", "content": "Task #1 created"}]), _said("Planned.")]

    def flush() -> None:
        time.sleep(0.1)
        with open(path, "a") as fh:
            fh.write("".join(json.dumps(x) + "\n" for x in late))

    t = threading.Thread(target=flush)
    t.start()
    fact, notes = _stop(path, "Planned.", {})
    t.join()
    assert fact["availableTasks"] == ["Ship the release"] and fact["nextTaskId"] == "1"
    assert any(n.startswith("waited") for n in notes), notes


def test_a_transcript_that_stays_behind_is_named_in_a_note(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(_user("Plan the release.")) + "\n" + json.dumps(_said("Thinking"))[:-5])
    _, notes = _stop(path, "Planned.", {})
    assert any("still being written" in n for n in notes), notes
