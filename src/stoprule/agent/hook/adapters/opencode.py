"""OpenCode: the generated plugin ``.opencode/plugins/stoprule.js``
runs ``stoprule hook opencode`` on ``session.idle`` with this payload on stdin::

    {"hook_event_name": "session.idle", "session_id": ..., "cwd": ..., "loop_count": N,
     "last_assistant_message": ..., "todos": [{"content", "status"}...], "turns": N}

``loop_count``: the continuations the plugin sent in a row for the session (its own loop
guard, as Cursor's); ``todos``: the latest ``todo.updated`` list (the ``transcript``
provider reads it). Answer: ``{"decision":"block","reason":M}`` (the plugin continues the
session with ``client.session.prompt``), ``{}`` to allow, ``systemMessage`` a note the
plugin shows as a toast.
"""

from __future__ import annotations

from stoprule.agent.hook.adapters._common import as_int, as_str, render_block_or_note
from stoprule.agent.hook.event import Decision, HookEvent

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["parse", "render"]


def parse(payload: dict[str, Any], event: str | None = None) -> HookEvent:
    props = payload.get("properties")
    props = props if isinstance(props, dict) else {}
    loop_count = as_int(payload.get("loop_count"))
    return HookEvent(
        harness="opencode",
        event=event or "stop",
        session_id=as_str(payload.get("session_id")) or as_str(props.get("sessionID")),
        turn_id=None,
        cwd=as_str(payload.get("cwd")),
        transcript_path=None,
        stop_hook_active=bool(loop_count),
        loop_count=loop_count if loop_count is not None else 0,
        last_message=as_str(payload.get("last_assistant_message")),
        raw=payload,
    )


def render(decision: Decision, event: HookEvent) -> dict[str, Any] | None:
    return render_block_or_note(decision) or {}
