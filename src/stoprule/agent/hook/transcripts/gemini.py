"""Gemini CLI's chats: the JSONL records (0.4x, 0.61.0), the single-document ``.json`` chats,
and the model history of ``/chat save`` checkpoints and ``/chat share`` JSON exports (2026-01):
prompts (not the CLI's setup message, tool responses or shell-mode commands), the
``write_todos`` list, failed tool calls, the last model text.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

from stoprule.agent.hook.transcripts._common import EXIT, USER, ScanState, kv

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["read", "wanted"]

_GEMINI = kv(b"type", b'"gemini"')
# the setup message Gemini CLI sends before the user's first prompt (0.1x: plain; 0.5x: tagged)
_SETUP = (
    "This is the Gemini CLI. We are setting up the context",
    "<session_context>",
    "I ran the following shell command:",  # the user's `!` shell mode, recorded in the history
)


def wanted(scan: ScanState, line: bytes) -> bool:
    """A compact line worth decoding: a user or a model (``gemini``) record."""
    return USER.search(line) is not None or _GEMINI.search(line) is not None


def read(scan: ScanState, obj: dict[str, Any]) -> None:
    if isinstance(obj.get("history"), list) and "type" not in obj:  # a checkpoint (/chat save, /chat share)
        _history(scan, obj["history"])
        return
    if isinstance(obj.get("messages"), list) and "type" not in obj:  # the single-document .json chat
        scan.document = True
        for message in obj["messages"]:
            if isinstance(message, dict):
                read(scan, message)
        return
    if "$rewindTo" in obj or "$set" in obj:
        return
    kind = obj.get("type")
    if kind == "user":
        # tool responses are recorded as user records too (Gemini CLI >= 0.44): not a turn
        content = obj.get("content")
        parts = content if isinstance(content, list) else []
        if parts and all(isinstance(p, dict) and "text" not in p for p in parts):
            return
        scan.prompt(
            content if isinstance(content, str) else "\n".join(p.get("text", "") for p in parts if isinstance(p, dict))
        )
        scan.turn()
    elif kind == "gemini":
        content = obj.get("content")
        if isinstance(content, list):
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        if isinstance(content, str) and content.strip():
            scan.last_text = content
        calls = obj.get("toolCalls")
        for call in calls if isinstance(calls, list) else []:
            if not isinstance(call, dict):
                continue
            name = str(call.get("name") or "tool")
            if name == "write_todos" and isinstance(call.get("args"), dict) and call.get("status") != "error":
                scan.set_tasks(call["args"].get("todos"), "description")
            if call.get("status") == "error":
                scan.fail(name, call.get("result"), call.get("id"))
            elif call.get("status") == "success":
                m = EXIT.search(_output(call.get("result")))
                if m and int(m.group(1)) != 0:
                    scan.fail(name, _output(call.get("result")), call.get("id"))
    elif kind in ("model",):  # some versions name the agent's records "model"
        read(scan, {**obj, "type": "gemini"})
    elif kind is None and not ({"sessionId", "projectHash", "startTime", "lastUpdated", "kind"} & obj.keys()):
        scan.skip("a record without a type")
    elif kind not in ("info", "error", "warning", None):
        scan.skip(f"unknown line type {kind!r}")


def _history(scan: ScanState, history: list[Any]) -> None:
    """Gemini CLI's model history as ``/chat save`` checkpoints and ``/chat share`` JSON exports
    hold it: ``[{"role": "user"|"model", "parts": [{"text"}|{"functionCall"}|{"functionResponse"}]}]``.
    The CLI's own setup message is not a turn, nor is a tool response, a command the user
    ran in shell mode (``!``: recorded as "I ran the following shell command"), or the same
    prompt again right after a tool round the model left unanswered (the CLI sends it again)."""
    scan.document = True
    prompt, tool_round = None, False
    for item in history:
        parts = item.get("parts") if isinstance(item, dict) else None
        if not isinstance(parts, list):
            scan.skip("a history entry without parts")
            continue
        parts = [p for p in parts if isinstance(p, dict)]
        text = "".join(p["text"] for p in parts if isinstance(p.get("text"), str))
        if item.get("role") == "user":
            for p in parts:
                resp = p.get("functionResponse")
                out = resp.get("response") if isinstance(resp, dict) else None
                if isinstance(resp, dict) and isinstance(out, dict) and "error" in out:
                    scan.fail(str(resp.get("name") or "tool"), out["error"], resp.get("id"))
            if any(isinstance(p.get("functionResponse"), dict) for p in parts):
                tool_round = True
            if not text.strip() or text.lstrip().startswith(_SETUP) or (text == prompt and tool_round):
                continue
            scan.prompt(text)
            scan.turn()
            prompt, tool_round = text, False
        elif item.get("role") == "model":
            if text.strip():
                scan.last_text, tool_round = text, False
            for p in parts:
                call = p.get("functionCall")
                args = call.get("args") if isinstance(call, dict) else None
                if isinstance(call, dict) and call.get("name") == "write_todos" and isinstance(args, dict):
                    scan.set_tasks(args.get("todos"), "description")
        else:
            scan.skip(f"unknown history role {item.get('role')!r}")


def _output(result: Any) -> str:
    """The text of a Gemini tool call's result (``[{"functionResponse":{"response":{"output":...}}}]``)."""
    out: list[str] = []
    for part in result if isinstance(result, list) else [result]:
        resp = part.get("functionResponse", {}).get("response") if isinstance(part, dict) else None
        value = resp.get("output") if isinstance(resp, dict) else part
        if isinstance(value, str):
            out.append(value)
    return "\n".join(out)
