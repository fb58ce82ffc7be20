"""Copilot CLI's ``events.jsonl`` (0.0.420-1.0.102; sniffed from the file, undocumented): prompts
(not a hook's block reason, which comes back as a user message), failed tool executions, the
last assistant message.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from stoprule.agent.hook.transcripts._common import ScanState

__all__ = ["read", "wanted"]

_WANTED = (b'"user.message"', b'"assistant.message"', b'"tool.execution_complete"', b'"hook.end"', b'"session.start"')


def wanted(scan: ScanState, line: bytes) -> bool:
    """A compact line worth decoding: an event of a type the reader takes."""
    return any(k in line for k in _WANTED)


def read(scan: ScanState, obj: dict[str, Any]) -> None:
    kind, data = obj.get("type"), obj.get("data")
    if not isinstance(data, dict):
        return
    if kind == "session.start":
        scan.version(data.get("copilotVersion"))
    if kind == "user.message":
        if not scan.after_block:  # a hook's block reason comes back as a user message
            scan.prompt(data.get("content"))
            scan.turn()
        scan.after_block = False
    elif kind == "hook.end":
        out = data.get("output")
        scan.after_block = isinstance(out, dict) and out.get("decision") == "block"
    elif kind == "assistant.message":
        text = data.get("content")
        if isinstance(text, str) and text.strip():
            scan.last_text = text
        for req in data.get("toolRequests") or []:
            cid = req.get("toolCallId") if isinstance(req, dict) else None
            if isinstance(cid, str) and isinstance(req.get("name"), str):
                scan.names[cid] = req["name"]
    elif kind == "tool.execution_complete":
        shell = data.get("shellExecution")
        code = shell.get("exitCode") if isinstance(shell, dict) else None
        if data.get("success") is False or (isinstance(code, int) and code != 0):
            cid = data.get("toolCallId")
            name = scan.names.get(cid, "tool") if isinstance(cid, str) else "tool"
            result = data.get("result")
            text = result.get("content") if isinstance(result, dict) else result
            scan.fail(name, text if text is not None else data.get("error"), cid)
