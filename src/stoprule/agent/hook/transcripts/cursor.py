"""Cursor's agent transcripts (JSONL; sniffed from the file, undocumented):
``{"role":"user"|"assistant","message":{"content":[{"type":"text",...}]}}``.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

from stoprule.agent.hook.transcripts._common import ScanState, status, title

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["read", "wanted"]


def wanted(scan: ScanState, line: bytes) -> bool:
    """Every line is decoded (no prefilter)."""
    return True


def read(scan: ScanState, obj: dict[str, Any]) -> None:
    """One message. The user's own prompts are wrapped in ``<user_query>``; once one was seen, a
    user message without it (a follow-up a stop hook generated) is not a turn. The todo list is
    the latest ``TodoWrite``/``todo_write`` call (``merge``: by id)."""
    role = obj.get("role")
    msg = obj.get("message")
    content = msg.get("content") if isinstance(msg, dict) else None
    blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
    texts = [b.get("text") for b in blocks if isinstance(b, dict) and b.get("type") == "text"]
    text = "\n".join(t for t in texts if isinstance(t, str))
    if role == "user" and text.strip():
        if "<user_query>" in text:
            scan.user_query = True
        elif scan.user_query:
            return  # generated (a stop hook's follow-up), not the user's
        scan.prompt(text.replace("<user_query>", "").replace("</user_query>", ""))
        scan.turn()
    elif role == "assistant":
        if text.strip():
            scan.last_text = text
        for b in blocks:
            if isinstance(b, dict) and b.get("type") in ("tool_use", "tool-call", "tool_call"):
                _tool(scan, b)
    elif role is not None:
        scan.skip(f"unknown role {role!r}")


def _tool(scan: ScanState, block: dict[str, Any]) -> None:
    name = block.get("name") or block.get("toolName")
    args = block.get("input") if isinstance(block.get("input"), dict) else block.get("args")
    if name not in ("TodoWrite", "todo_write", "todoWrite") or not isinstance(args, dict):
        return
    todos = args.get("todos")
    if not isinstance(todos, list):
        return
    if args.get("merge") is True and scan.tasks:
        by_id = {t["id"]: t for t in scan.tasks if t.get("id")}
        for item in todos:
            if not isinstance(item, dict):
                continue
            key = str(item.get("id")) if item.get("id") is not None else None
            if key in by_id:
                if isinstance(item.get("status"), str):
                    by_id[key]["status"] = status(item["status"])
                if isinstance(item.get("content"), str):
                    by_id[key]["title"] = item["content"]
            else:
                scan.tasks.append({"id": key, "title": title(item, "content"), "status": status(item.get("status"))})
        return
    scan.set_tasks(todos, "content")
    for task, item in zip(scan.tasks, [t for t in todos if isinstance(t, dict)], strict=False):
        if item.get("id") is not None:
            task["id"] = str(item["id"])
