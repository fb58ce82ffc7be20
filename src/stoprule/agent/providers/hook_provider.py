"""``hook``: what the payload says — session, harness, event, the loop flag, the last message,
and ``stopping`` (the agent is trying to stop: a task-boundary stop).

Cursor and Copilot send no last message: it is then read from the end of the transcript
(and set on the event, so the providers after this one read it too).

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

from stoprule.agent.event import HookEvent

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["provide"]


def provide(event: HookEvent, ctx: Any) -> tuple[dict[str, Any], list[str]]:
    obs: dict[str, Any] = {
        "harness": event.harness,
        "event": event.event,
        "stop_hook_active": event.stop_hook_active,
        "stopping": True,
    }
    notes: list[str] = []
    if event.session_id is not None:
        obs["session_id"] = event.session_id
    if event.last_message is None and event.transcript_path:
        from stoprule.agent.transcripts import last_text

        event.last_message = last_text(event.transcript_path, event.harness)
        if event.last_message is not None:
            notes.append("no last message in the payload: read from the transcript")
    if event.last_message is not None:
        obs["last_message"] = event.last_message[-2000:]
    return obs, notes
