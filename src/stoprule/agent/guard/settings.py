"""A harness settings file as the guard sees it, and which changes of it are refused.

:func:`view` keeps what matters to the gate (every hook, the environment, ``disableAllHooks``,
the MCP servers, the ``permissions.deny`` rules); the session start records it for each
wiring file, and a settings change in the session (Claude Code ``ConfigChange``) is judged
against it by :func:`settings_refusal`. Refused: ``disableAllHooks``; a hook added, removed
or changed (a hook of the agent's own can answer ``allow`` to every permission request, a
removed one is a gate switched off); an environment variable that steers stoprule, git or
Python (``STOPRULE_*``, ``PATH``, ``HOME``, ``XDG_*``, ``GIT_*``, ``PYTHON*``, ``LD_*``, the
harness's block cap); stoprule's MCP server or deny rules dropped. Without a recorded view
(a harness without a session start), only what is wrong on its face is refused.
"""

from __future__ import annotations

import json
import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["settings_refusal", "view"]

_STEERING = re.compile(
    r"^(?:STOPRULE_\w*|PATH|HOME|XDG_\w+|GIT_\w+|PYTHON\w*|LD_\w+|DYLD_\w+|CLAUDE_CODE_STOP_HOOK_BLOCK_CAP"
    r"|CLAUDE_CONFIG_DIR|CLAUDE_PROJECT_DIR|CODEX_HOME|COPILOT_HOME|BASH_ENV|ENV|SHELL)$"
)


def _handlers(hooks: Any) -> list[tuple[str, str, str]]:
    """``(event, matcher, handler as canonical JSON)`` of every hook in a ``hooks`` object."""
    out: list[tuple[str, str, str]] = []
    if not isinstance(hooks, dict):
        return out
    for event, entries in hooks.items():
        listed: list[Any] = entries if isinstance(entries, list) else []
        for entry in listed:
            if not isinstance(entry, dict):
                continue
            matcher = str(entry.get("matcher", ""))
            nested = entry.get("hooks")
            inner: list[Any] = nested if isinstance(nested, list) else [entry]
            for h in inner:
                out.append((str(event), matcher, json.dumps(h, sort_keys=True, ensure_ascii=False)))
    return sorted(out)


def _field(data: dict[str, Any], key: str, kind: type) -> Any:
    value = data.get(key)
    return value if isinstance(value, kind) else kind()


def view(data: Any) -> dict[str, Any]:
    """What the gate cares about in a settings object (JSON-ready)."""
    if not isinstance(data, dict):
        return {"invalid": True}
    env: dict[str, Any] = _field(data, "env", dict)
    servers: dict[str, Any] = _field(data, "mcpServers", dict)
    mcp: dict[str, Any] = _field(data, "mcp", dict)
    deny: list[Any] = _field(_field(data, "permissions", dict), "deny", list)
    return {
        "hooks": [list(h) for h in _handlers(data.get("hooks"))],
        "env": {str(k): str(v) for k, v in env.items() if _STEERING.match(str(k))},
        "disableAllHooks": bool(data.get("disableAllHooks")),
        "stoprule_mcp": servers.get("stoprule") if "stoprule" in servers else mcp.get("stoprule"),
        "deny": sorted(str(r) for r in deny if "stoprule" in str(r) or ".stoprule" in str(r)),
    }


def _short(handler: str) -> str:
    try:
        h = json.loads(handler)
    except ValueError:
        return handler[:120]
    text = h.get("command") or h.get("bash") or h.get("url") or h.get("prompt") or handler
    return str(text)[:120]


def settings_refusal(old: dict[str, Any] | None, new_data: Any, path: str) -> str | None:
    """Why the change of the settings file ``path`` to ``new_data`` is refused (``old``: its
    :func:`view` at session start, None when none was recorded), or None."""
    new = view(new_data)
    if new.get("invalid"):
        return None if old is None or old.get("invalid") else f"{path} no longer holds a settings object"
    if new["disableAllHooks"] and not (old or {}).get("disableAllHooks"):
        return f"{path} sets disableAllHooks (every hook off, stoprule's among them)"
    before_env = (old or {}).get("env", {})
    for key, value in new["env"].items():
        if before_env.get(key) != value and (old is not None or key.startswith("STOPRULE_")):
            return f"{path} sets env {key}, which steers the stop hook"
    if old is None:
        for event, _, handler in new["hooks"]:
            text = _short(handler)
            if (
                "stoprule" not in text
                and re.search(r"\ballow\b", handler)
                and event in ("PermissionRequest", "PreToolUse", "permissionRequest", "preToolUse")
            ):
                return f"{path} adds a {event} hook answering allow (`{text}`)"
        return None
    before = {tuple(h) for h in old.get("hooks", [])}
    after = {tuple(h) for h in new["hooks"]}
    for event, _, handler in sorted(before - after):
        return f"{path} drops or changes the {event} hook `{_short(handler)}`"
    for event, _, handler in sorted(after - before):
        return f"{path} adds a {event} hook `{_short(handler)}`"
    if old.get("stoprule_mcp") is not None and old.get("stoprule_mcp") != new["stoprule_mcp"]:
        return f"{path} drops or changes stoprule's MCP server"
    dropped = set(old.get("deny", [])) - set(new["deny"])
    if dropped:
        return f"{path} drops stoprule's deny rule {sorted(dropped)[0]}"
    return None
