"""Where each harness keeps its hook config, and how stoprule's entry looks in it.

Used by ``stoprule init`` (write or merge the entry) and ``stoprule doctor`` (find it).
All five harnesses take JSON; Codex also reads inline ``[hooks]`` tables in
``config.toml``, which init does not edit (it writes ``.codex/hooks.json``; both merge).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["TARGETS", "Target", "add_entry", "find_entry"]


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
        "copilot", ".github/hooks/stoprule.json", ".copilot/hooks/stoprule.json", "agentStop", False, True,
        "COPILOT_HOME",
    ),
}


def _handlers(config: dict[str, Any], t: Target) -> list[dict[str, Any]]:
    hooks = config.get("hooks")
    entries = hooks.get(t.event) if isinstance(hooks, dict) else None
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


def find_entry(config: dict[str, Any], t: Target) -> str | None:
    """The command of stoprule's entry for this harness, if the config has one."""
    needle = f"hook {t.harness}"
    return next((_command(h) for h in _handlers(config, t) if "stoprule" in _command(h) and needle in _command(h)),
                None)  # fmt: skip


def add_entry(config: dict[str, Any], t: Target, command: str) -> bool:
    """Add stoprule's entry (keeping every other entry); False if one is already there."""
    if find_entry(config, t) is not None:
        return False
    if t.versioned:
        config.setdefault("version", 1)
    hooks = config.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise ValueError("its 'hooks' is not an object")
    entries = hooks.setdefault(t.event, [])
    if not isinstance(entries, list):
        raise ValueError(f"its 'hooks.{t.event}' is not a list")
    entries.append({"hooks": [t.handler(command)]} if t.grouped else t.handler(command))
    return True
