"""``hook``: what the payload says — session, harness, event, the loop flag, the last message,
and ``stopping`` (the agent is trying to stop: a task-boundary stop).

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

from stoprule.agent.hook.event import HookEvent

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from stoprule.agent.hook.providers.context import Context

__all__ = ["provide"]


def provide(event: HookEvent, ctx: Context) -> tuple[dict[str, Any], list[str]]:
    obs: dict[str, Any] = {
        "harness": event.harness,
        "event": event.event,
        "stop_hook_active": event.stop_hook_active,
        "stopping": True,
    }
    if event.session_id is not None:
        obs["session_id"] = event.session_id
    if event.last_message is not None:
        obs["last_message"] = event.last_message[-2000:]
    return obs, []
