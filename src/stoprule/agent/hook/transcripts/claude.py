"""Claude Code's session transcripts (JSONL; checked on 1.0.x and 2.1.80-2.1.332): human
prompts (not the harness's own user lines, nor local slash commands), the ``TodoWrite`` list
and the ``TaskCreate``/``TaskUpdate`` tasks, failed tool results, the last assistant text.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

from stoprule._util.jsonout import dumps
from stoprule._util.regex import compiled, lazy
from stoprule.agent.hook.transcripts._common import USER, ScanState, kv, status, title

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["read", "wanted"]

_ASSISTANT = kv(b"type", b'"assistant"')
_IS_ERROR = kv(b"is_error", b"true")
# Claude Code user lines that are not a human prompt
_NOT_PROMPT = (
    "[Request interrupted by user",
    "<command-name>",
    "<command-message>",
    "<command-args>",
    "<local-command-stdout>",
    "<local-command-stderr>",
    "Caveat: The messages below were generated",
    "<bash-input>",
    "<bash-stdout>",
    "<bash-stderr>",
    "<task-notification>",
)
# Claude Code's built-in slash commands: run locally, not a prompt to the model (a custom command is one)
_LOCAL_COMMANDS = frozenset(
    {
        "/clear",
        "/compact",
        "/model",
        "/help",
        "/cost",
        "/exit",
        "/quit",
        "/config",
        "/status",
        "/memory",
        "/login",
        "/logout",
        "/doctor",
        "/permissions",
        "/hooks",
        "/mcp",
        "/agents",
        "/resume",
        "/context",
        "/usage",
        "/vim",
        "/theme",
        "/terminal-setup",
        "/ide",
        "/add-dir",
        "/export",
        "/rewind",
        "/todos",
        "/bashes",
        "/statusline",
        "/output-style",
        "/privacy-settings",
        "/release-notes",
        "/upgrade",
        "/feedback",
        "/bug",
        "/tasks",
        "/plugin",
    }
)
_COMMAND = lazy(r"<command-name>\s*(/?[^<\s]+)\s*</command-name>")
# Claude Code line types that carry nothing the stop decision reads (seen in 2.1.332's transcripts)
_OTHER = frozenset(
    {
        "system",
        "summary",
        "attachment",
        "file-history-snapshot",
        "progress",
        "queue-operation",
        "atis-latch",
        "api-request",
        "api-request-shape",
        "api-request-blob",
        "tools-used",
        "last-prompt",
        "cost-state",
        None,
    }
)


def wanted(scan: ScanState, line: bytes) -> bool:
    """A compact line worth decoding: user lines but tool results that neither failed nor answer a
    pending ``TaskCreate``; assistant lines with text or a tool call."""
    if USER.search(line):
        return (
            b'"tool_result"' not in line
            or _IS_ERROR.search(line) is not None
            or any(k.encode() in line for k in scan.pending)
        )
    if _ASSISTANT.search(line):  # text, todos, and tool names (a failed tool is named by its tool_use)
        return b'"text"' in line or b'"tool_use"' in line
    return False


def read(scan: ScanState, obj: dict[str, Any]) -> None:
    kind = obj.get("type")
    msg = obj.get("message") if isinstance(obj.get("message"), dict) else {}
    content = msg.get("content") if isinstance(msg, dict) else None
    if kind == "user":
        scan.version(obj.get("version"))
        origin = obj.get("origin")
        not_human = isinstance(origin, dict) and origin.get("kind") not in (None, "human")
        if obj.get("isMeta") or obj.get("isCompactSummary") or not_human:
            if isinstance(content, list):  # a tool result still answers its call
                _results(scan, obj, content)
            return
        if isinstance(content, str):
            if _is_prompt(content):
                scan.prompt(content)
                scan.turn()
            return
        if not isinstance(content, list):
            return
        _results(scan, obj, content)
        texts = [b.get("text") for b in content if isinstance(b, dict) and b.get("type") == "text"]
        human = [t for t in texts if isinstance(t, str) and _is_prompt(t)]
        if human:
            for t in human:
                scan.prompt(t)
            scan.turn()
    elif kind == "assistant" and isinstance(content, list):
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text" and isinstance(block.get("text"), str):
                scan.last_text = block["text"]
            elif block.get("type") == "tool_use":
                _tool(scan, block)
    elif kind not in _OTHER:
        scan.skip(f"unknown line type {kind!r}")


def _is_prompt(text: str) -> bool:
    """A user line's text is a human prompt: not an interrupt, a local slash command, the
    user's ``!`` bash mode, a background task's notification ..., but a custom slash command is."""
    t = text.lstrip()
    if t.startswith("<command-name>") or t.startswith("<command-message>"):
        m = _COMMAND.search(t)
        name = m.group(1) if m else ""
        return bool(name) and ("/" + name.lstrip("/")) not in _LOCAL_COMMANDS
    return not t.startswith(_NOT_PROMPT)


def _results(scan: ScanState, obj: dict[str, Any], content: list[Any]) -> None:
    for block in content:
        if not isinstance(block, dict) or block.get("type") != "tool_result":
            continue
        tid = block.get("tool_use_id")
        if block.get("is_error") is True:
            name = scan.names.get(tid, "tool") if isinstance(tid, str) else "tool"
            scan.fail(name, block.get("content"), tid)
        if isinstance(tid, str) and tid in scan.pending:
            _created(scan, tid, obj.get("toolUseResult"), block.get("content"))


def _tool(scan: ScanState, block: dict[str, Any]) -> None:
    name, tid = block.get("name"), block.get("id")
    inp: dict[str, Any] = block["input"] if isinstance(block.get("input"), dict) else {}
    if isinstance(tid, str) and isinstance(name, str):
        scan.names[tid] = name
    if name == "TodoWrite":
        scan.set_tasks(inp.get("todos"), "content", "activeForm", call_id=tid)
    elif name == "TaskCreate":
        scan.tasks.append(
            {"id": None, "title": title(inp, "subject", "description", "activeForm"), "status": "pending"}
        )
        if isinstance(tid, str):
            scan.pending[tid] = len(scan.tasks) - 1
    elif name == "TaskUpdate":
        key = next((inp[k] for k in ("taskId", "task_id", "id") if k in inp), None)
        task = next((t for t in scan.tasks if t["id"] is not None and t["id"] == str(key)), None)
        if task is None:
            scan.partial_tasks = True
            return
        state = inp.get("status")
        if state == "deleted":
            scan.tasks.remove(task)
        elif isinstance(state, str):
            task["status"] = status(state)
        if isinstance(inp.get("subject"), str):
            task["title"] = inp["subject"]


def _created(scan: ScanState, tid: str, result: Any, content: Any) -> None:
    index = scan.pending.pop(tid)
    if index >= len(scan.tasks):
        return
    found = None
    if isinstance(result, dict):
        task: dict[str, Any] = result["task"] if isinstance(result.get("task"), dict) else result
        found = next((task[k] for k in ("id", "taskId", "task_id") if k in task), None)
    if found is None:
        text = content if isinstance(content, str) else dumps(content)
        m = compiled(r"#(\w+)").search(text)
        found = m.group(1) if m else None
    if found is None:  # Claude Code numbers tasks 1, 2, ... in creation order
        found = str(sum(1 for t in scan.tasks[: index + 1]))
    scan.tasks[index]["id"] = str(found)
