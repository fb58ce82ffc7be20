"""The harnesses' own routes, in process: Codex's MCP registration, the plugins and extensions
stoprule generates, the in-session ``/blockers`` command, the newer hook events (the real
binaries run them in ``tests/harness/test_harness_native.py``)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

try:
    import tomllib
except ImportError:  # Python 3.10: the backport, a dependency there
    import tomli as tomllib  # type: ignore[no-redef]

from blocker_helpers import DEFAULT_PACK
from hookharness import payload
from stoprule.agent.hook.declare import set_facts
from stoprule.agent.hook.runner import run_hook
from stoprule.cli.main import run as cli


def _cli(*args: str, stdin: bytes = b"") -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli(list(args), io.BytesIO(stdin), out, err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    return tmp_path


def test_init_registers_the_codex_mcp_server_as_required_in_the_projects_config(project: Path) -> None:
    """``required = true``: ``codex exec`` waits for the server before its first request."""
    code, out, err = _cli("init", "--harness", "codex")
    assert code == 0, out + err
    server = tomllib.loads((project / ".codex" / "config.toml").read_text())["mcp_servers"]["stoprule"]
    assert server["required"] is True and server["args"][-1] == "mcp"


# ------------------------------------------------------------------ /goal beside stoprule

NO_GIT = "hook:\n  loop_cap: 3\nproviders:\n  enabled: [hook, state, blockers, closure]\n"


def _goal_stop(tmp_path: Path, root: Path, active: bool, status: str | None = None) -> dict:
    if status:
        set_facts(str(root / ".stoprule"), "s1", {"status": status})
    data = {**payload("claude-code"), "cwd": str(root), "session_id": "s1", "prompt_id": "p1",
            "stop_hook_active": active, "last_assistant_message": "Working on it."}  # fmt: skip
    data.pop("transcript_path", None)
    env = {"STOPRULE_POLICY": str(DEFAULT_PACK), "STOPRULE_NO_CACHE": "1", "STOPRULE_STATE_DIR": str(tmp_path / "u")}
    return run_hook("claude-code", None, json.dumps(data).encode(), cwd=str(root), env=env).entry


def test_a_goal_continuation_shares_stoprules_loop_budget_and_the_log_names_who_continued(tmp_path: Path) -> None:
    """Claude Code's ``/goal`` is a stop hook beside stoprule's: after stoprule allowed a stop, a
    stop with ``stop_hook_active`` in the same turn was continued by the other hook. It counts
    against the same loop cap; each log entry says who continued the session into it."""
    root = tmp_path / "proj"
    (root / ".stoprule").mkdir(parents=True)
    (root / ".stoprule" / "config.yaml").write_text(NO_GIT)
    first = _goal_stop(tmp_path, root, False)
    assert first["decision"]["block"] is False and "continued_by" not in first["loop"]
    goal = _goal_stop(tmp_path, root, True)  # /goal continued the session
    assert goal["loop"]["continued_by"] == "another stop hook" and goal["loop"]["blocks_before"] == 1
    # /goal again, and now stoprule wants to continue too (a partial status): 2 of the budget of 3 are spent
    mine = _goal_stop(tmp_path, root, True, status="partial")
    assert mine["loop"]["continued_by"] == "another stop hook" and mine["loop"]["blocks_before"] == 2
    assert mine["decision"]["block"] is True
    capped = _goal_stop(tmp_path, root, True)
    assert capped["loop"]["continued_by"] == "stoprule"
    assert capped["loop"]["capped"] is True and capped["decision"]["block"] is False


# ------------------------------------------------------------------ Cursor: no session-start hook


def test_cursor_leaves_the_users_work_in_progress_alone_at_the_first_stop(tmp_path: Path) -> None:
    """Cursor has no session-start hook: the files dirty at a session's first stop are the user's
    (not "commit it"); what changes after that is the session's."""
    import subprocess

    root = tmp_path / "proj"
    (root / ".stoprule").mkdir(parents=True)
    (root / ".stoprule" / "config.yaml").write_text("providers:\n  enabled: [hook, state, blockers, closure, git]\n")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    (root / "wip.txt").write_text("the user's own edit\n")
    env = {"STOPRULE_POLICY": str(DEFAULT_PACK), "STOPRULE_NO_CACHE": "1", "STOPRULE_STATE_DIR": str(tmp_path / "u")}

    def stop(loop: int) -> dict:
        data = {**payload("cursor"), "workspace_roots": [str(root)], "conversation_id": "c1", "loop_count": loop,
                "status": "completed"}  # fmt: skip
        data.pop("transcript_path", None)
        return run_hook("cursor", None, json.dumps(data).encode(), cwd=str(root), env=env).entry

    first = stop(0)
    assert first["fact"]["uncommittedWork"] is False, first["provenance"]
    assert first["decision"]["block"] is False
    (root / "agent.txt").write_text("the agent's work\n")
    second = stop(0)
    assert second["fact"]["uncommittedWork"] is True and second["fact"]["uncommittedFiles"] == ["agent.txt"]


def test_the_claude_code_plugin_carries_inits_wiring_through_the_plugin_root(project: Path) -> None:
    """``stoprule plugin claude-code``: a local marketplace listing the plugin, whose hooks are
    init's Claude Code events (stop, session start, the guard) and whose MCP server is the
    blocker tools', every command run through ``${CLAUDE_PLUGIN_ROOT}/bin/stoprule``."""
    from stoprule.agent.hook.wiring import EXTRA_EVENTS, GUARD_EVENTS

    code, out, err = _cli("plugin", "claude-code", "--out", "m")
    assert code == 0, err
    assert "claude plugin marketplace add" in out and "stoprule@stoprule" in out
    market = json.loads((project / "m" / ".claude-plugin" / "marketplace.json").read_text())
    (entry,) = market["plugins"]
    root = project / "m" / entry["source"]
    manifest = json.loads((root / ".claude-plugin" / "plugin.json").read_text())
    assert manifest["name"] == entry["name"] == "stoprule"
    assert manifest["mcpServers"]["stoprule"]["args"] == ["${CLAUDE_PLUGIN_ROOT}/bin/stoprule", "mcp"]
    hooks = json.loads((root / "hooks" / "hooks.json").read_text())["hooks"]
    wanted = {"Stop", *(n for e, n in EXTRA_EVENTS["claude-code"].items() if e != "permission")}
    # and the user's /blockers (commands/blockers.md, read by UserPromptSubmit)
    wanted |= {"UserPromptSubmit", *(n for n, _ in GUARD_EVENTS["claude-code"])}
    assert (root / "commands" / "blockers.md").is_file()
    assert set(hooks) == wanted
    commands = [h["command"] for groups in hooks.values() for g in groups for h in g["hooks"]]
    assert all(c.startswith('sh "${CLAUDE_PLUGIN_ROOT}/bin/stoprule" ') for c in commands), commands
    assert "PermissionRequest" not in hooks  # opt-in, as in init


def test_the_plugins_script_runs_this_stoprule(project: Path) -> None:
    """``bin/stoprule`` runs this interpreter's stoprule (the launcher; the guard's own entry)."""
    import subprocess

    assert _cli("plugin", "claude-code", "--out", "m")[0] == 0
    script = project / "m" / "plugins" / "stoprule" / "bin" / "stoprule"
    p = subprocess.run(["sh", str(script), "--version"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stdout.strip(), p.stderr
    from stoprule.agent.hook.wiring import guard_argv

    call = {"hook_event_name": "PreToolUse", "session_id": "s", "cwd": str(project), "tool_name": "Write",
            "tool_input": {"file_path": str(project / ".stoprule" / "config.yaml"), "content": "x"}}  # fmt: skip
    answers = [
        subprocess.run(argv, input=json.dumps(call), capture_output=True, text=True, timeout=60, cwd=project).stdout
        for argv in (["sh", str(script), "guard", "claude-code"], guard_argv("claude-code"))
    ]
    assert answers[0] == answers[1] and "deny" in answers[0], answers


def test_the_plugin_command_never_writes_over_files_it_did_not_write(project: Path) -> None:
    (project / "m").mkdir()
    (project / "m" / "notes.txt").write_text("mine\n")
    code, _, err = _cli("plugin", "claude-code", "--out", "m")
    assert code != 0 and "notes.txt" in err
    assert sorted(p.name for p in (project / "m").iterdir()) == ["notes.txt"]
    assert _cli("plugin", "claude-code", "--out", "n")[0] == 0 and _cli("plugin", "claude-code", "--out", "n")[0] == 0


def test_init_offers_the_claude_code_plugin_route(project: Path) -> None:
    for harness in ("claude-code", "gemini", "opencode", "antigravity"):
        code, out, _ = _cli("init", "--harness", harness)
        assert code == 0 and f"stoprule plugin {harness}" in out, out
    assert "stoprule plugin" not in _cli("init", "--harness", "codex")[1]


def test_the_opencode_plugin_package_is_inits_plugin_with_a_package_json(project: Path) -> None:
    from stoprule.agent.hook.wiring import guard_argv, opencode_plugin
    from stoprule.cli.init_cmd import stoprule_argv

    code, out, err = _cli("plugin", "opencode", "--out", "pkg")
    assert code == 0, err
    entry = f"file://{project / 'pkg' / 'index.js'}"
    assert f'"{entry}"' in out and '"plugin"' in out
    package = json.loads((project / "pkg" / "package.json").read_text())
    assert package["main"] == "index.js" and package["type"] == "module"
    assert (project / "pkg" / "index.js").read_text() == opencode_plugin(stoprule_argv(), guard_argv("opencode"))


def test_the_gemini_extension_carries_inits_gemini_wiring_through_the_extension_path(project: Path) -> None:
    from stoprule.agent.hook.wiring import EXTRA_EVENTS, GUARD_EVENTS

    code, out, err = _cli("plugin", "gemini", "--out", "ext")
    assert code == 0 and "gemini extensions install" in out, err
    manifest = json.loads((project / "ext" / "gemini-extension.json").read_text())
    assert manifest["name"] == "stoprule" and manifest["mcpServers"]["stoprule"]["args"][-1] == "mcp"
    hooks = json.loads((project / "ext" / "hooks" / "hooks.json").read_text())["hooks"]
    assert set(hooks) == {"AfterAgent", *EXTRA_EVENTS["gemini"].values(), *(n for n, _ in GUARD_EVENTS["gemini"])}
    commands = [h["command"] for groups in hooks.values() for g in groups for h in g["hooks"]]
    assert all(c.startswith('sh "${extensionPath}/bin/stoprule" ') for c in commands), commands
    assert (project / "ext" / "bin" / "stoprule").read_text().startswith("#!/bin/sh")
