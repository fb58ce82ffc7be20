"""``stoprule init`` wires the guard on every harness event that can veto a tool call (and Claude
Code's deny rules); ``doctor`` reports which guards are wired and runs a refused call through
them; ``init --managed`` prints Claude Code's managed settings."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from clirunner import invoke
from stoprule.agent.hook.wiring import GUARD_EVENTS, TARGETS, deny_rules, find_guard

VETOING = {"claude-code": ["PreToolUse", "ConfigChange"], "codex": ["PreToolUse"], "gemini": ["BeforeTool"],
           "copilot": ["preToolUse"], "cursor": ["beforeShellExecution", "preToolUse"]}  # fmt: skip


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("STOPRULE_", "CLAUDE_", "CODEX_", "COPILOT_"))}
    full.update(HOME=str(tmp_path / "home"), XDG_STATE_HOME=str(tmp_path / "state"))
    full["PATH"] = str(Path(sys.executable).parent) + os.pathsep + full.get("PATH", "")
    return full


@pytest.mark.parametrize("harness", list(VETOING))
def test_init_wires_the_guard_on_each_vetoing_event(harness: str, tmp_path: Path, env: dict[str, str]) -> None:
    assert [ev for ev, _ in GUARD_EVENTS[harness]] == VETOING[harness]
    r = invoke(["init", "--harness", harness, "--no-mcp"], env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    t = TARGETS[harness]
    config = json.loads(Path(t.path(str(tmp_path), "local")).read_text())  # init's default: this clone's files
    for event in VETOING[harness]:
        command = find_guard(config, t, event)
        assert command is not None and command.endswith(f"guard/__main__.py {harness}"), (event, config)
    if harness == "claude-code":
        (group,) = config["hooks"]["PreToolUse"]
        assert group["matcher"] == "Bash|Write|Edit|MultiEdit|NotebookEdit"
        assert set(deny_rules()) <= set(config["permissions"]["deny"])
    again = invoke(["init", "--harness", harness, "--no-mcp"], env=env, cwd=tmp_path)
    assert "unchanged" in again.stdout  # nothing doubled


def test_init_adds_the_guard_to_a_project_wired_before_it(tmp_path: Path, env: dict[str, str]) -> None:
    invoke(["init", "--harness", "claude-code", "--no-mcp", "--no-guard"], env=env, cwd=tmp_path)
    settings = tmp_path / ".claude" / "settings.local.json"
    assert "PreToolUse" not in json.loads(settings.read_text())["hooks"]
    user_rule = {"permissions": {"deny": ["Bash(rm -rf /:*)"]}}
    settings.write_text(json.dumps({**json.loads(settings.read_text()), **user_rule}))
    r = invoke(["init", "--harness", "claude-code", "--no-mcp"], env=env, cwd=tmp_path)
    assert "the guard on PreToolUse, ConfigChange" in r.stdout
    config = json.loads(settings.read_text())
    assert (
        config["permissions"]["deny"][0] == "Bash(rm -rf /:*)"
        and "Bash(stoprule blockers off:*)" in config["permissions"]["deny"]
    )


@pytest.mark.integration
def test_doctor_reports_the_guards_and_a_missing_one(tmp_path: Path, env: dict[str, str]) -> None:
    invoke(["init", "--harness", "claude-code", "--no-mcp"], env=env, cwd=tmp_path)
    out = invoke(["doctor"], env=env, cwd=tmp_path).stdout
    assert "ok   claude-code: guard on PreToolUse, ConfigChange" in out
    assert "ok   claude-code: synthetic tool call through the guard: refuses `stoprule blockers off`" in out
    assert f"ok   claude-code: {len(deny_rules())} permissions.deny rules" in out
    settings = tmp_path / ".claude" / "settings.local.json"
    config = json.loads(settings.read_text())
    del config["hooks"]["ConfigChange"]
    settings.write_text(json.dumps(config))
    r = invoke(["doctor"], env=env, cwd=tmp_path)
    assert r.returncode == 1 and "FAIL claude-code: no guard on ConfigChange" in r.stdout
    invoke(["guard", "off"], env=env, cwd=tmp_path)
    assert "guard switch: off" in invoke(["doctor"], env=env, cwd=tmp_path).stdout


def test_init_managed_prints_claude_codes_managed_settings(tmp_path: Path, env: dict[str, str]) -> None:
    r = invoke(["init", "--harness", "claude-code", "--managed"], env=env, cwd=tmp_path)
    assert r.returncode == 0 and "managed-settings.json" in r.stderr
    managed = json.loads(r.stdout)
    assert managed["allowManagedHooksOnly"] is True
    assert set(managed["hooks"]) == {
        "Stop",
        "SessionStart",
        "TaskCompleted",
        "UserPromptSubmit",
        "PreToolUse",
        "ConfigChange",
    }
    assert managed["permissions"]["deny"] == deny_rules()
    assert not (tmp_path / ".claude").exists() and not (tmp_path / ".stoprule").exists()  # nothing written
    assert invoke(["init", "--harness", "codex", "--managed"], env=env, cwd=tmp_path).returncode == 2


def test_the_opencode_plugin_carries_the_guard(tmp_path: Path, env: dict[str, str]) -> None:
    invoke(["init", "--harness", "opencode", "--no-mcp"], env=env, cwd=tmp_path)
    text = (tmp_path / ".opencode" / "plugins" / "stoprule.js").read_text()
    line = next(ln for ln in text.splitlines() if ln.startswith("const GUARD = "))
    assert line.split(" // ")[0].endswith('guard/__main__.py", "opencode"]')
    invoke(["init", "--harness", "opencode", "--no-mcp", "--no-guard"], env=env, cwd=tmp_path)
    assert "const GUARD = [] //" in (tmp_path / ".opencode" / "plugins" / "stoprule.js").read_text()
