"""Each harness's pre-tool payload as a :class:`~.rules.Call`, and its answer to refuse one.

    claude-code  PreToolUse {tool_name, tool_input}; ConfigChange {source, file_path}
                 deny: hookSpecificOutput.permissionDecision "deny" + permissionDecisionReason;
                 a settings change: {"decision": "block", "reason"}
    codex        PreToolUse {tool_name, tool_input: {command}}: the same deny (its strict schema)
    gemini       BeforeTool {tool_name, tool_input}: {"decision": "deny", "reason"}
    copilot      preToolUse {toolName, toolArgs (a JSON string or object)}:
                 {"permissionDecision": "deny", "permissionDecisionReason"}
    cursor       beforeShellExecution {command, cwd}, preToolUse {tool_name, tool_input}:
                 {"permission": "deny", "user_message", "agent_message"}
    opencode     the plugin's tool.execute.before {tool_name, tool_input}: {"deny": reason} (it throws)

Nothing is printed for a call the guard lets through (``{}`` where the harness wants JSON):
the guard never approves anything, the harness's own permissions still apply.

On the cold path when the guard runs, before every tool call (tools/import_graph.py,
COLD_PATH_WHEN): its imports stay few, light and lazy.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["READ_TOOLS", "allow", "deny", "event_of", "session_of", "tool_call"]

# tools that only read: no path of theirs is a write
READ_TOOLS = frozenset(
    {
        "Read",
        "Glob",
        "Grep",
        "LS",
        "WebFetch",
        "WebSearch",
        "ToolSearch",
        "TodoWrite",
        "TaskCreate",
        "TaskUpdate",
        "read_file",
        "read_many_files",
        "list_directory",
        "glob",
        "search_file_content",
        "grep",
        "web_fetch",
        "google_web_search",
        "read",
        "list",
        "view",
        "webfetch",
        "todowrite",
        "todoread",
        "ls",
        "find",
        "search",
    }
)
_PATH_KEYS = ("file_path", "filePath", "path", "notebook_path", "target_file", "absolute_path", "filename", "file")
_PATCH_KEYS = ("patchText", "patch", "input", "diff")
_CWD_KEYS = ("dir_path", "directory", "workdir", "cwd", "working_directory")


def event_of(payload: dict[str, Any]) -> str:
    """``config-change`` for a settings change, else ``tool``."""
    return "config-change" if payload.get("hook_event_name") == "ConfigChange" else "tool"


def session_of(payload: dict[str, Any]) -> str | None:
    for key in ("session_id", "sessionId", "conversation_id", "sessionID"):
        value = payload.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def _input(payload: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    tool = payload.get("tool_name") or payload.get("toolName") or payload.get("tool") or ""
    raw = payload.get("tool_input", payload.get("toolArgs", payload.get("args")))
    if isinstance(raw, str):
        try:
            from stoprule._util.jsonin import loads

            raw = loads(raw)
        except ValueError:
            raw = {"command": raw}
    if not isinstance(raw, dict):
        raw = {}
    if "command" in payload and "command" not in raw:  # Cursor's beforeShellExecution
        raw = {**raw, "command": payload["command"]}
    return str(tool), raw


def tool_call(payload: dict[str, Any], cwd: str) -> tuple[str, str | None, list[str]]:
    """``(tool, shell command or patch, paths written)`` of a pre-tool payload; ``cwd`` updated by
    the tool's own directory argument is the caller's (see :func:`call_cwd`)."""
    tool, args = _input(payload)
    command = args.get("command", args.get("cmd"))
    if isinstance(command, list) and all(isinstance(a, str) for a in command):
        shell = (
            len(command) >= 3 and command[0].rsplit("/", 1)[-1] in ("sh", "bash", "zsh") and command[1] in ("-c", "-lc")
        )
        command = command[2] if shell else " ".join(_quote(a) for a in command)
    if not isinstance(command, str):
        command = next((args[k] for k in _PATCH_KEYS if isinstance(args.get(k), str)), None)
    paths: list[str] = []
    if tool not in READ_TOOLS:
        paths = [args[k] for k in _PATH_KEYS if isinstance(args.get(k), str) and args[k]]
        edits = args.get("edits")
        if isinstance(edits, list):
            paths += [e["file_path"] for e in edits if isinstance(e, dict) and isinstance(e.get("file_path"), str)]
    return tool, command, paths


def _quote(word: str) -> str:
    """``word`` as one shell word (single quotes where it needs any)."""
    if word and all(c.isalnum() or c in "@%+=:,./-_" for c in word):
        return word
    return "'" + word.replace("'", "'\"'\"'") + "'"


def call_cwd(payload: dict[str, Any], cwd: str) -> str:
    """The directory the tool runs in: its own argument (Gemini's ``dir_path``...), else ``cwd``."""
    from stoprule._util import oslite as os

    _, args = _input(payload)
    for key in _CWD_KEYS:
        value = args.get(key)
        if isinstance(value, str) and value:
            return os.path.normpath(os.path.join(cwd, value))
    return cwd


def deny(harness: str, event: str, reason: str) -> dict[str, Any]:
    """The harness's answer that refuses the call (or the settings change) with ``reason``."""
    if event == "config-change":
        return {"decision": "block", "reason": reason}
    if harness in ("claude-code", "codex"):
        return {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": reason,
            }
        }
    if harness == "gemini":
        return {"decision": "deny", "reason": reason}
    if harness == "copilot":
        return {"permissionDecision": "deny", "permissionDecisionReason": reason}
    if harness == "cursor":
        return {"permission": "deny", "user_message": reason, "agent_message": reason}
    return {"deny": reason}


def allow(harness: str) -> dict[str, Any] | None:
    """No decision: nothing (Claude Code, Codex), ``{}`` where the harness wants a JSON object."""
    return None if harness in ("claude-code", "codex", "opencode") else {}
