"""Where each harness keeps its hook config, and how stoprule's entry looks in it.

Used by ``stoprule init`` (write or merge the entry) and ``stoprule doctor`` (find it).
All five harnesses take JSON; Codex also reads inline ``[hooks]`` tables in
``config.toml``, which init does not edit (it writes ``.codex/hooks.json``; both merge).
Beside the stop hook, :data:`EXTRA_EVENTS` names each harness's session-start hook (the
triage instructions and the session's baseline) and permission hook (opt-in triage).
OpenCode has no command hooks: init writes a generated plugin (:data:`OPENCODE_PLUGIN`)
and registers the MCP server in ``opencode.json``.

The guard (:mod:`stoprule.agent.guard`) is wired on every event that can veto a tool call
(:data:`GUARD_EVENTS`), run by its own fast entry (:func:`guard_argv`); Claude Code also gets
``permissions.deny`` rules (:func:`deny_rules`), a second line the harness itself enforces.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from stoprule.agent.guard.commands import MUTATING

__all__ = [
    "EXTRA_EVENTS",
    "GUARD_EVENTS",
    "OPENCODE_PLUGIN",
    "TARGETS",
    "Target",
    "add_deny_rules",
    "add_entry",
    "deny_rules",
    "find_entry",
    "find_guard",
    "guard_argv",
    "opencode_plugin",
]


@dataclass(frozen=True)
class Target:
    harness: str
    project_file: str  # relative to the project root
    user_file: str  # relative to the home directory (its first part is the harness's config directory)
    event: str  # the key under "hooks"
    grouped: bool  # Claude-style {"hooks": [handler]} groups
    versioned: bool  # root needs "version": 1
    user_env: str | None = None  # the variable that moves the harness's config directory

    def path(self, root: str, user: bool, env: Mapping[str, str] | None = None) -> str:
        """The config file: the project's, or the user's (``$CLAUDE_CONFIG_DIR``, ``$CODEX_HOME``,
        ``$COPILOT_HOME`` when set, else in the home directory)."""
        if not user:
            return os.path.join(root, self.project_file)
        env = os.environ if env is None else env
        moved = env.get(self.user_env) if self.user_env else None
        if moved:
            return os.path.join(os.path.expanduser(moved), *self.user_file.split("/")[1:])
        return os.path.join(os.path.expanduser("~"), self.user_file)

    def handler(self, command: str) -> dict[str, Any]:
        if self.harness == "gemini":
            return {"type": "command", "command": command, "name": "stoprule", "timeout": 30000}
        if self.harness == "cursor":
            return {"command": command}
        if self.harness == "copilot":
            return {"type": "command", "bash": command, "powershell": command, "timeoutSec": 30}
        return {"type": "command", "command": command, "timeout": 30}


TARGETS: dict[str, Target] = {
    "claude-code": Target(
        "claude-code", ".claude/settings.json", ".claude/settings.json", "Stop", True, False, "CLAUDE_CONFIG_DIR"
    ),
    "codex": Target("codex", ".codex/hooks.json", ".codex/hooks.json", "Stop", True, False, "CODEX_HOME"),
    "gemini": Target("gemini", ".gemini/settings.json", ".gemini/settings.json", "AfterAgent", True, False),
    "cursor": Target("cursor", ".cursor/hooks.json", ".cursor/hooks.json", "stop", False, True),
    "copilot": Target(
        "copilot",
        ".github/hooks/stoprule.json",
        ".copilot/hooks/stoprule.json",
        "agentStop",
        False,
        True,
        "COPILOT_HOME",
    ),
}


# harness -> stoprule's ``--event`` -> the harness's hook event (each harness's hooks documentation)
EXTRA_EVENTS: dict[str, dict[str, str]] = {
    "claude-code": {
        "session-start": "SessionStart",
        "task-completed": "TaskCompleted",  # a block refuses marking the task done (measured on 2.1.332)
        "permission": "PermissionRequest",
    },
    "codex": {"session-start": "SessionStart", "permission": "PermissionRequest"},
    "gemini": {"session-start": "SessionStart"},
    "copilot": {"session-start": "sessionStart", "permission": "permissionRequest"},
}

# harness -> the events (and tool matchers) where its guard runs: every event that can veto a
# tool call or a settings change (each harness's hooks documentation, checked on the pinned binaries)
GUARD_EVENTS: dict[str, tuple[tuple[str, str | None], ...]] = {
    "claude-code": (("PreToolUse", "Bash|Write|Edit|MultiEdit|NotebookEdit"), ("ConfigChange", None)),
    "codex": (("PreToolUse", None),),
    "gemini": (("BeforeTool", None),),
    "copilot": (("preToolUse", None),),
    "cursor": (("beforeShellExecution", None), ("preToolUse", None)),
}


def guard_argv(harness: str | None = None) -> list[str]:
    """How a harness runs the guard: this interpreter without ``site`` and isolated (``-S -I``) on
    the guard's own entry (its cold start: about a bare interpreter's), then ``harness``."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    entry = os.path.join(here, "guard", "__main__.py")
    return [sys.executable, "-S", "-I", entry, *([harness] if harness else [])]


def deny_rules() -> list[str]:
    """Claude Code ``permissions.deny`` rules: edits of stoprule's files and the harness's wiring,
    runs of stoprule's mutating commands (the guard's table). The harness enforces them itself."""
    edits = ["Edit(/.stoprule/**)", "Edit(**/.stoprule/**)", "Edit(/.claude/**)", "Edit(/.mcp.json)",
             "Edit(~/.claude/**)", "Edit(~/.config/stoprule/**)", "Edit(~/.cache/stoprule/**)",
             "Edit(~/.local/state/stoprule/**)"]  # fmt: skip
    commands: list[str] = []
    for name, subs in MUTATING.items():
        for words in [name] if subs is None else [f"{name} {sub}" for sub in sorted(subs)]:
            commands.append(f"stoprule {words}")
    runs = [
        f"Bash({prefix}{c.removeprefix('stoprule ')}:*)"
        for c in commands
        for prefix in ("stoprule ", "python -m stoprule ", "python3 -m stoprule ")
    ]
    return edits + runs


def add_deny_rules(config: dict[str, Any]) -> int:
    """Add the :func:`deny_rules` missing from ``permissions.deny`` (others kept); how many were added."""
    perms = config.setdefault("permissions", {})
    if not isinstance(perms, dict):
        raise ValueError("its 'permissions' is not an object")
    deny = perms.setdefault("deny", [])
    if not isinstance(deny, list):
        raise ValueError("its 'permissions.deny' is not a list")
    missing = [r for r in deny_rules() if r not in deny]
    deny.extend(missing)
    return len(missing)


# where init writes the OpenCode plugin (project root / home), and its MCP config
OPENCODE_PLUGIN = (os.path.join(".opencode", "plugins", "stoprule.js"),
                   os.path.join(".config", "opencode", "plugins", "stoprule.js"))  # fmt: skip
OPENCODE_CONFIG = ("opencode.json", os.path.join(".config", "opencode", "opencode.json"))


def opencode_plugin(argv: list[str], guard: list[str] | None = None) -> str:
    """The plugin's source, running ``argv`` (``stoprule`` or ``python -m stoprule``) and the
    guard as ``guard`` (default: :func:`guard_argv`; ``[]``: no guard)."""
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "opencode_plugin.js"), encoding="utf-8") as fh:
        text = fh.read().replace("__STOPRULE_COMMAND__", json.dumps(argv))
    return text.replace("__STOPRULE_GUARD__", json.dumps(guard_argv("opencode") if guard is None else guard))


def _handlers(config: dict[str, Any], t: Target, event: str | None = None) -> list[dict[str, Any]]:
    hooks = config.get("hooks")
    entries = hooks.get(event or t.event) if isinstance(hooks, dict) else None
    out: list[dict[str, Any]] = []
    for e in entries if isinstance(entries, list) else []:
        if not isinstance(e, dict):
            continue
        if t.grouped:
            out.extend(h for h in e.get("hooks", []) if isinstance(h, dict))
        else:
            out.append(e)
    return out


def _command(handler: dict[str, Any]) -> str:
    c = handler.get("command") or handler.get("bash") or ""
    return c if isinstance(c, str) else ""


def find_guard(config: dict[str, Any], t: Target, event: str) -> str | None:
    """The command of stoprule's guard under ``event``, if the config has one."""
    return next(
        (
            _command(h)
            for h in _handlers(config, t, event)
            if "stoprule" in _command(h) and _command(h).rstrip().endswith(f" {t.harness}") and "guard" in _command(h)
        ),
        None,
    )


def find_entry(config: dict[str, Any], t: Target, event: str | None = None) -> str | None:
    """The command of stoprule's entry for this harness (under ``event``, default the stop's),
    if the config has one."""
    needle = f"hook {t.harness}"
    return next(
        (_command(h) for h in _handlers(config, t, event) if "stoprule" in _command(h) and needle in _command(h)), None
    )


def add_entry(
    config: dict[str, Any],
    t: Target,
    command: str,
    event: str | None = None,
    matcher: str | None = None,
    *,
    guard: bool = False,
) -> bool:
    """Add stoprule's entry (``guard``: the guard's) under ``event`` (default the stop's) with a
    tool ``matcher``, keeping every other entry; False if one is already there."""
    present = find_guard(config, t, event or t.event) if guard else find_entry(config, t, event)
    if present is not None:
        return False
    if t.versioned:
        config.setdefault("version", 1)
    hooks = config.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise ValueError("its 'hooks' is not an object")
    key = event or t.event
    entries = hooks.setdefault(key, [])
    if not isinstance(entries, list):
        raise ValueError(f"its 'hooks.{key}' is not a list")
    handler = t.handler(command)
    if t.grouped:
        entries.append({**({"matcher": matcher} if matcher else {}), "hooks": [handler]})
    else:
        entries.append({**handler, **({"matcher": matcher} if matcher else {})})
    return True
