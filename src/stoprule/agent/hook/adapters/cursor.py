"""Cursor ``stop`` / ``subagentStop`` (its hooks documentation).

Block: ``{"followup_message":M}`` (sent as the next *user* message); allow: ``{}``. The
stop hook has no user channel: notes go to the log only. The session is
``conversation_id``; ``loop_count`` is Cursor's own follow-up count. Cursor submits any
non-empty ``followup_message``, so none is sent unless ``status`` is ``completed`` (the user
aborted, or the turn ended in an error: the stop stands). Cursor sends no last message: the
``hook`` provider reads it from the transcript.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

from stoprule.agent.hook.adapters._common import as_int, as_str
from stoprule.agent.hook.event import Decision, HookEvent

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["SESSION_START", "parse", "render"]

# Cursor has no session-start hook: the first stop's dirty files are the session's baseline
SESSION_START = False


def parse(payload: dict[str, Any], event: str | None = None) -> HookEvent:
    name = payload.get("hook_event_name")
    roots = payload.get("workspace_roots")
    cwd = as_str(payload.get("cwd")) or (as_str(roots[0]) if isinstance(roots, list) and roots else None)
    loop_count = as_int(payload.get("loop_count"))
    return HookEvent(
        harness="cursor",
        event=event or ("subagent-stop" if name == "subagentStop" else "stop"),
        session_id=as_str(payload.get("conversation_id")) or as_str(payload.get("session_id")),
        turn_id=None,
        cwd=cwd,
        transcript_path=as_str(payload.get("transcript_path")),  # newer builds only (UNCONFIRMED)
        stop_hook_active=bool(loop_count),
        loop_count=loop_count,
        last_message=as_str(payload.get("last_assistant_message")),
        status=as_str(payload.get("status")),
        raw=payload,
    )


def render(decision: Decision, event: HookEvent) -> dict[str, Any] | None:
    if decision.block and event.status in (None, "completed"):
        return {"followup_message": decision.message or "Continue working."}
    return {}
