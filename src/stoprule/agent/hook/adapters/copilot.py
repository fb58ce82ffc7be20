"""GitHub Copilot CLI / cloud agent ``agentStop`` / ``subagentStop`` (its hooks documentation).

Block: ``{"decision":"block","reason":M}`` with exit 0; allow: ``{}``. Copilot CLI 1.0.102
sends ``sessionId, timestamp, cwd, transcriptPath, stopReason, stop_hook_active`` (seen in
its ``events.jsonl``; the SDK types name it ``stopHookActive``): both spellings are read. Its
output has no user channel (``decision``/``reason`` only): notes go to stderr and the log.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

from stoprule.agent.hook.adapters._common import as_bool, as_str
from stoprule.agent.hook.event import Decision, HookEvent

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["parse", "render"]


def parse(payload: dict[str, Any], event: str | None = None) -> HookEvent:
    name = payload.get("hook_event_name") or payload.get("hookEventName")
    return HookEvent(
        harness="copilot",
        event=event or ("subagent-stop" if name in ("subagentStop", "SubagentStop") else "stop"),
        session_id=as_str(payload.get("sessionId")) or as_str(payload.get("session_id")),
        turn_id=as_str(payload.get("turn_id")) or as_str(payload.get("turnId")),
        cwd=as_str(payload.get("cwd")),
        transcript_path=as_str(payload.get("transcript_path")) or as_str(payload.get("transcriptPath")),
        stop_hook_active=as_bool(payload.get("stop_hook_active")) or as_bool(payload.get("stopHookActive")),
        last_message=as_str(payload.get("last_assistant_message")) or as_str(payload.get("lastAssistantMessage")),
        flag_known="stop_hook_active" in payload or "stopHookActive" in payload,
        raw=payload,
    )


def render(decision: Decision, event: HookEvent) -> dict[str, Any] | None:
    if decision.block:
        return {"decision": "block", "reason": decision.message or "Continue working."}
    return {}
