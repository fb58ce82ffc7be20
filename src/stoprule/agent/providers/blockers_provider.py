"""``blockers``: the session's open and resolved blockers and its latest filed blocked report
(the blocker tool of :mod:`stoprule.agent`), as fact fields.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

import os

from stoprule.agent.event import HookEvent

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["provide"]


def provide(event: HookEvent, ctx: Any) -> tuple[dict[str, Any], list[str]]:
    if ctx.project is None or not os.path.isdir(os.path.join(ctx.project, "blockers")):
        return {}, []  # nothing was ever logged here: no config or store to read
    from types import SimpleNamespace

    from stoprule.agent.blocker_facts import blockers_facts

    cfg = ctx.settings.get("blockers")  # the config's validated blockers section, cached with the hook's
    settings = SimpleNamespace(**cfg) if cfg else None
    return blockers_facts(os.path.dirname(ctx.project), event.session_id, settings), []
