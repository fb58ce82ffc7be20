"""`stoprule mcp` through the real protocol: a subprocess, the SDK's stdio client, every tool."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from blocker_helpers import DEFAULT_PACK, SECRETS, secret_values

mcp = pytest.importorskip("mcp")

import anyio  # noqa: E402
from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

HARD = {
    "category": "missing_dependency",
    "question": "Which auth framework?",
    "context": "login",
    "blocksProgress": True,
}
REPORT = {
    "blocking_issues": [{"issue": "No keys", "category": "external_dependency", "details": "needs real keys"}],
    "attempts_made": [{"turn": 1, "action": "mock", "result": "Failed", "why_failed": "signatures"}],
    "suggested_alternatives": ["use test mode"],
    "human_action_required": "Provide test keys",
}


def _text(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


async def _session(project: Path, log: Any, calls: list[tuple[str, dict[str, Any]]]) -> tuple[list[str], list]:
    env = {**os.environ, "STOPRULE_POLICY": str(DEFAULT_PACK), "STOPRULE_SESSION": "mcp-s1",
           "STOPRULE_CACHE_DIR": str(project / ".cache")}  # fmt: skip
    params = StdioServerParameters(command=sys.executable, args=["-m", "stoprule", "mcp"], cwd=str(project), env=env)
    async with stdio_client(params, errlog=log) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = [t.name for t in (await session.list_tools()).tools]
        results = [await session.call_tool(name, args) for name, args in calls]
    return tools, results


@pytest.mark.integration
def test_every_tool_with_good_and_bad_arguments(tmp_path: Path) -> None:
    (tmp_path / ".stoprule").mkdir()
    calls = [
        ("report_status", {"task_id": "T-1", "turn": 3, "max_turns": 5, "available_tasks": ["task-2"]}),  # 0
        ("blocker", HARD),  # 1
        ("blocker", {**HARD, "category": "no_such_category"}),  # 2
        ("blocker", {"category": "missing_dependency"}),  # 3: missing required fields
        (
            "blocker",
            {
                "category": "timeout",
                "question": "Name?",
                "context": "c",
                "blocksProgress": False,
                "options": ["a", "b"],
                "chosenOption": "a",
                "chosenReasoning": "convention",
            },
        ),  # 4  # fmt: skip
        ("report_status", {"status": "nearly"}),  # 5
        ("blocked_report", {**REPORT, "blocking_issues": [{**REPORT["blocking_issues"][0], "category": "flaky"}]}),
        ("blocked_report", {k: v for k, v in REPORT.items() if k != "attempts_made"}),  # 7
        ("blocked_report", REPORT),  # 8
        ("blockers_list", {}),  # 9
        ("blockers_list", {"all_sessions": "not a bool"}),  # 10
        ("blocker", {**HARD, "question": "Deploy with " + SECRETS[0] + " and " + SECRETS[9]}),  # 11
    ]
    with open(tmp_path / "server.log", "w") as log:
        tools, r = anyio.run(_session, tmp_path, log, calls)
    assert sorted(tools) == ["blocked_report", "blocker", "blockers_list", "report_status"]
    assert not r[0].is_error and "escape_hatch/blocked_report_required" in _text(r[0])
    assert not r[1].is_error and "✓ Blocker logged to .stoprule/blockers.md" in _text(r[1])
    assert "Next available tasks:\n1. task-2" in _text(r[1])
    assert r[2].is_error and "is not a blocker category of this pack" in _text(r[2])
    assert r[3].is_error and "question" in _text(r[3]) and "blocksProgress" in _text(r[3])
    assert not r[4].is_error and "soft: your choice is recorded" in _text(r[4])
    assert r[5].is_error and "status" in _text(r[5])
    assert r[6].is_error and "unknown category" in _text(r[6]) and '"category": "flaky"' in _text(r[6])
    assert r[7].is_error and "section attempts_made is missing or empty" in _text(r[7])
    assert not r[8].is_error and ".stoprule/reports/T-1/blocked_report.json" in _text(r[8])
    assert "Open blockers (1):" in _text(r[9]) and "Resolved blockers (1):" in _text(r[9])
    assert r[10].is_error and "all_sessions: must be true or false, not a string" in _text(r[10])
    assert "not a bool" not in _text(r[10])  # the rejected value is never echoed
    assert not any("pydantic" in _text(x) or "Input should" in _text(x) for x in r)  # our words only
    assert not r[11].is_error
    saved = json.loads((tmp_path / ".stoprule" / "reports" / "T-1" / "blocked_report.json").read_text())
    assert saved["human_action_required"] == "Provide test keys"
    md = (tmp_path / ".stoprule" / "blockers.md").read_text()
    assert md.count("- [ ] **[missing_dependency]**") == 2 and "## Session: mcp-s1" in md
    written = md + (tmp_path / "server.log").read_text()
    assert all(v not in written for v in secret_values()[:1] + secret_values()[9:10])
