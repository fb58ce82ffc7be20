"""Which stops belong to one user turn (for the providers that keep per-turn marks).

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

from stoprule.agent.hook.event import HookEvent

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["fresh_turn"]


def fresh_turn(event: HookEvent, session: dict[str, Any]) -> bool:
    """Whether this stop is the first of a user turn (not a continuation a stop hook caused):
    a new turn id, Cursor's (or the OpenCode plugin's) loop count 0, else the harness's flag."""
    guard = session.get("guard")
    guard = guard if isinstance(guard, dict) else {}
    if event.turn_id is not None:
        return event.turn_id != guard.get("turn")
    if event.loop_count is not None:
        return event.loop_count == 0
    return not event.stop_hook_active
