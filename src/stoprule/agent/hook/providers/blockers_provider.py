"""``blockers``: the session's open and resolved blockers and its latest filed blocked report
(the blocker tool of :mod:`stoprule.agent`), as fact fields; ``logged_this_turn``: how many
the agent logged since the user's last prompt (the count at the turn's first stop is kept
in the hook's session record); ``blocked_tasks``: the tasks open progress-blocking blockers
are about (never offered as the next task). Imports neither pydantic nor YAML.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

from stoprule._util import oslite as os
from stoprule.agent.hook.event import HookEvent

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from stoprule.agent.hook.providers.context import Context

__all__ = ["provide"]


def provide(event: HookEvent, ctx: Context) -> tuple[dict[str, Any], list[str]]:
    # blockers logged, a report filed, or a session's own switch (/blockers off): else nothing to read
    places = ("blockers", "reports", os.path.join("state", "blockers"))
    if ctx.project is None or not any(os.path.isdir(os.path.join(ctx.project, d)) for d in places):
        return {}, []
    from types import SimpleNamespace

    from stoprule.agent.blockers.facts import blockers_facts
    from stoprule.agent.hook.providers._turn import fresh_turn

    cfg = ctx.blockers  # the config's validated section, cached with the hook's
    notes: list[str] = []  # damaged record lines, skipped
    obs = blockers_facts(os.path.dirname(ctx.project), event.session_id, SimpleNamespace(**cfg), notes)
    if not obs:
        return {}, notes
    logged = len(obs.get("openBlockers", [])) + len(obs.get("resolvedBlockers", []))
    mark = ctx.session.get("blockers_turn")
    mark = mark if isinstance(mark, dict) else {}
    base = int(mark.get("count", 0)) if fresh_turn(event, ctx.session) else int(mark.get("base", 0))
    ctx.session["blockers_turn"] = {"base": base, "count": logged}
    obs["logged_this_turn"] = max(0, logged - base)
    blocked = obs.pop("blockedTasks", [])
    if blocked:
        obs["blocked_tasks"] = blocked
    return obs, notes
