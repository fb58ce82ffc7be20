"""Blockers reach the stop decision (issues 8 and 9 together): a blocker logged with the CLI
is read by the hook's ``blockers`` provider, and ``init`` registers the MCP server."""

from __future__ import annotations

import json
from pathlib import Path

CONFIG = "providers:\n  enabled: [hook, state, blockers, closure, transcript]\n"


def _stop(run_cli, cwd: Path, session: str = "s1") -> dict:
    payload = {"session_id": session, "transcript_path": str(cwd / "none.jsonl"), "cwd": str(cwd),
               "hook_event_name": "Stop", "stop_hook_active": False, "last_assistant_message": "done"}  # fmt: skip
    proc = run_cli("hook", "claude-code", input=json.dumps(payload), cwd=cwd)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    return json.loads(proc.stdout) if proc.stdout.strip() else {}


def test_open_blockers_decide_the_stop(run_cli, tmp_path: Path) -> None:
    (tmp_path / ".stoprule").mkdir()
    (tmp_path / ".stoprule" / "config.yaml").write_text(CONFIG)
    assert _stop(run_cli, tmp_path) == {}  # nothing logged, nothing to do: the stop is allowed
    q = "Which database should the cache use?"
    add = run_cli(
        "blocker",
        "add",
        "--category",
        "missing_dependency",
        "--question",
        q,
        "--blocks-progress",
        "--session",
        "s1",
        cwd=tmp_path,
    )
    assert add.returncode == 0, add.stderr
    # an open blocker and nothing else to do: stop for the user, who sees the question (row 16)
    out = _stop(run_cli, tmp_path)
    assert "decision" not in out and q in out["systemMessage"]
    # other work remains: keep working on it, the blocker stays logged (row 15)
    assert run_cli("facts", "set", "--session", "s1", 'availableTasks=["T2"]', cwd=tmp_path).returncode == 0
    out = _stop(run_cli, tmp_path)
    assert out["decision"] == "block" and "T2" in out["reason"] and "blockers logged for the user: 1" in out["reason"]


def test_init_registers_the_mcp_server_once(run_cli, tmp_path: Path) -> None:
    for _ in range(2):
        assert run_cli("init", "--harness", "claude-code", cwd=tmp_path).returncode == 0
    servers = json.loads((tmp_path / ".mcp.json").read_text())["mcpServers"]
    assert list(servers) == ["stoprule"] and servers["stoprule"]["args"][-1] == "mcp"
    assert run_cli("init", "--harness", "cursor", "--no-mcp", cwd=tmp_path).returncode == 0
    assert not (tmp_path / ".cursor" / "mcp.json").exists()


def test_a_report_filed_before_any_blocker_reaches_the_stop(run_cli, tmp_path: Path) -> None:
    """The escape hatch asks for a blocked report; once filed, the next stop sees it, even when the
    project never logged a blocker (no blockers store yet)."""
    from stoprule.agent.blockers.service import BlockerService

    (tmp_path / ".stoprule").mkdir()
    (tmp_path / ".stoprule" / "config.yaml").write_text(CONFIG)
    assert (
        run_cli(
            "facts", "set", "--session", "s1", "turn=8", "max_turns=10", "status=partial", "task_id=T1", cwd=tmp_path
        ).returncode
        == 0
    )
    assert "blocked_report" in _stop(run_cli, tmp_path)["reason"]  # near the limit without a report
    report = {"blocking_issues": [{"issue": "no DB", "category": "external_dependency", "details": "none here"}],
              "attempts_made": [{"turn": 8, "action": "tried a fake", "result": "Failed"}],
              "suggested_alternatives": ["give a DB"], "human_action_required": "Provide a database URL."}  # fmt: skip
    assert BlockerService(str(tmp_path)).file_report("s1", {"task_id": "T1", **report}).ok
    out = _stop(run_cli, tmp_path)
    assert "blocked_report" not in out.get("reason", ""), out
