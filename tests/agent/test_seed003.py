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
