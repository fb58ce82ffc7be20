"""Seed 003 complete: the tool's categories, the question at the stop, standing instructions,
permission triage, tasks and blockers agreeing, whose work is uncommitted, and the session
an MCP write lands in."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from blocker_helpers import DEFAULT_PACK
from stoprule.agent.blocker_service import BlockerService

HARD_003 = ["permission", "architecture", "security", "destructive", "question", "other"]
SOFT_003 = ["naming", "formatting", "style", "minor-refactor"]


@pytest.fixture()
def service(tmp_path: Path) -> BlockerService:
    (tmp_path / ".stoprule").mkdir()
    return BlockerService(str(tmp_path), policy=str(DEFAULT_PACK))


def test_the_default_pack_declares_seed_003s_categories(service: BlockerService) -> None:
    hard, soft = service.categories()
    assert set(HARD_003) <= set(hard) and set(SOFT_003) <= set(soft)
    assert "timeout" in soft and "missing_dependency" in hard  # seed 000's stay
    reply = service.log_blocker("s1", {"category": "permission", "question": "May I read /mnt/backups?",
                                       "context": "backup check", "blocksProgress": True})  # fmt: skip
    assert reply.ok and "hard, blocks progress" in reply.text
    soft_reply = service.log_blocker("s1", {"category": "naming", "question": "getUserData or fetchUserData?",
                                            "context": "c", "blocksProgress": False, "chosenOption": "getUserData"})
    assert soft_reply.ok and "soft" in soft_reply.text


def test_the_mcp_tools_publish_an_enum_and_a_description_for_every_field(service: BlockerService) -> None:
    pytest.importorskip("mcp")
    from stoprule.agent.mcp_server import build_server

    server = build_server(service)
    hard, soft = service.categories()
    for name in ("blocker", "report_status", "blocked_report", "blockers_list"):
        schema: dict[str, Any] = server._tool_manager.get_tool(name).parameters
        assert "title" not in schema
        for field, prop in schema["properties"].items():
            assert prop.get("description"), (name, field)
            assert "title" not in prop, (name, field)
    category = server._tool_manager.get_tool("blocker").parameters["properties"]["category"]
    assert category["enum"] == [*hard, *soft] and category["type"] == "string"


# ---------------------------------------------------------------- the hook, in process

import json  # noqa: E402
import os  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402

from stoprule.agent.runner import run_hook  # noqa: E402

QUESTION = "I prepared the migration script. Should I go ahead and apply it to staging?"


def _project(tmp_path: Path, config: str = "") -> Path:
    (tmp_path / ".stoprule").mkdir(exist_ok=True)
    (tmp_path / ".stoprule" / "config.yaml").write_text(config or "hook:\n  log: false\n")
    return tmp_path


def _env(tmp_path: Path) -> dict[str, str]:
    return {"STOPRULE_POLICY": str(DEFAULT_PACK), "STOPRULE_CACHE_DIR": str(tmp_path / ".cache"),
            "HOME": str(tmp_path)}  # fmt: skip


def _stop(tmp_path: Path, harness: str = "claude-code", **payload: Any) -> Any:
    data = {"session_id": "s1", "cwd": str(tmp_path), "hook_event_name": "Stop", "stop_hook_active": False,
            "transcript_path": None, **payload}  # fmt: skip
    return run_hook(harness, None, json.dumps(data).encode(), cwd=str(tmp_path), env=_env(tmp_path))


def test_a_question_at_the_stop_is_pushed_back_once(tmp_path: Path) -> None:
    _project(tmp_path)
    first = _stop(tmp_path, last_assistant_message=QUESTION)
    assert first.decision.block
    assert "Should I go ahead and apply it to staging?" in first.decision.message
    assert "blocker" in first.decision.message and "permission" in first.decision.message
    # --explain-facts shows the matched sentence, and which provider found it
    assert first.entry["provenance"]["fields"]["questionText"] == {
        "provider": "closure", "key": "question", "value": "Should I go ahead and apply it to staging?"}
    again = _stop(tmp_path, last_assistant_message=QUESTION, stop_hook_active=True)
    assert not again.decision.block and again.entry["verdict"]["reason"] == "ok"
    # a new user turn: asked again, pushed back again
    assert _stop(tmp_path, last_assistant_message=QUESTION).decision.block


def test_no_question_no_push_back(tmp_path: Path) -> None:
    _project(tmp_path)
    for text in ("The parser is written and its tests pass.", "Done. What changed: `a?.b` is now `a && a.b`.",
                 "Why did it fail? Because the cache was stale; fixed and committed."):  # fmt: skip
        out = _stop(tmp_path, last_assistant_message=text)
        assert not out.decision.block, text


def test_a_blocker_logged_this_turn_or_a_legal_closure_ends_the_push_back(tmp_path: Path) -> None:
    svc = BlockerService(str(_project(tmp_path)), policy=str(DEFAULT_PACK))
    assert _stop(tmp_path, last_assistant_message="All done.").decision.block is False  # the turn's baseline
    reply = svc.log_blocker("s1", {"category": "destructive", "question": "Apply the migration to staging?",
                                   "context": "migration", "blocksProgress": True})  # fmt: skip
    assert reply.ok
    out = _stop(tmp_path, last_assistant_message=QUESTION)
    assert not out.decision.block and out.entry["fact"]["blockersThisTurn"] == 1
    # next turn: nothing logged in it, the question is pushed back again
    assert _stop(tmp_path, last_assistant_message=QUESTION).decision.block
    closed = _stop(tmp_path, last_assistant_message=QUESTION + "\n\nstoprule: closure=waiting_user")
    assert not closed.decision.block


def test_a_declared_closure_stops_the_push_to_available_tasks(tmp_path: Path) -> None:
    _project(tmp_path)
    from stoprule.agent.state import set_facts

    set_facts(str(tmp_path / ".stoprule"), "s1", {"availableTasks": ["Run the production migration"]})
    pushed = _stop(tmp_path, last_assistant_message="Staging is migrated.")
    assert pushed.decision.block and "Run the production migration" in pushed.decision.message
    held = _stop(tmp_path, last_assistant_message="Staging is migrated.\nstoprule: closure=waiting_user")
    assert not held.decision.block


def test_the_trailer_and_the_question_are_read_from_the_transcript_when_the_payload_has_none(tmp_path: Path) -> None:
    _project(tmp_path)
    lines = [
        {"sessionId": "s1", "type": "user", "uuid": "u1", "parentUuid": None,
         "message": {"role": "user", "content": "Migrate staging"}},
        {"sessionId": "s1", "type": "assistant", "uuid": "u2", "parentUuid": "u1",
         "message": {"id": "m1", "role": "assistant", "content": [{"type": "text", "text": QUESTION}]}},
    ]  # fmt: skip
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("".join(json.dumps(x, separators=(",", ":")) + "\n" for x in lines))
    payload = {"sessionId": "s1", "cwd": str(tmp_path), "transcriptPath": str(transcript), "stopReason": "end_turn"}
    out = run_hook("copilot", None, json.dumps(payload).encode(), cwd=str(tmp_path), env=_env(tmp_path))
    assert out.decision.block and out.entry["verdict"]["reason"] == "unlogged_question"
    lines[1]["message"]["content"][0]["text"] = QUESTION + "\nstoprule: closure=waiting_user"  # type: ignore[index]
    transcript.write_text("".join(json.dumps(x, separators=(",", ":")) + "\n" for x in lines))
    payload["sessionId"] = "s2"
    out = run_hook("copilot", None, json.dumps(payload).encode(), cwd=str(tmp_path), env=_env(tmp_path))
    assert not out.decision.block and out.entry["fact"]["replyClosureState"] == "waiting_user"
