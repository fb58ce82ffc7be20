"""``state``: facts declared for this session (``stoprule facts set``, the blocker tools),
read from ``.stoprule/state/facts/`` (see :mod:`stoprule.agent.hook.state`).

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

from stoprule.agent.hook.event import HookEvent
from stoprule.agent.hook.state import read_facts

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from stoprule.agent.hook.providers.context import Context

__all__ = ["provide"]


def provide(event: HookEvent, ctx: Context) -> tuple[dict[str, Any], list[str]]:
    """The session's own declared facts over the project-wide ones as they were when the session
    started (its frozen record; declared facts never reach past the session that declared them)."""
    if ctx.project is None:
        return {}, []
    frozen = ctx.frozen
    wide = frozen.get("facts") if frozen is not None and isinstance(frozen.get("facts"), dict) else None
    return read_facts(ctx.project, event.session_id, project_wide=wide), []
