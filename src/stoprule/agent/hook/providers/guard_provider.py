"""``guard``: the agent's refused attempts this session (the guard's and the CLI's journal,
:mod:`stoprule.agent.guard.journal`), read from the project's ``.stoprule/`` and the user's
state directory. It always runs (``providers.enabled`` cannot turn it off: the agent may have
written that list). Observation ``attempts``: each attempt as one line (``via: tool: what``),
the newest :data:`SHOWN`; ``ctx.session["attempts_seen"]`` counts those already named to the
user, and ``ctx.new_attempts`` holds the ones the next answer names.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

from stoprule.agent.hook.event import HookEvent

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["describe", "provide"]

SHOWN = 20


def describe(attempt: dict[str, Any]) -> str:
    """One line: ``guard: Bash: runs `stoprule blockers off` ...``."""
    parts = [str(attempt.get(k)) for k in ("via", "tool") if attempt.get(k)]
    return ": ".join([*parts, str(attempt.get("what", ""))])[:400]


def provide(event: HookEvent, ctx: Any) -> tuple[dict[str, Any], list[str]]:
    import os

    from stoprule.agent.guard.journal import read_attempts, user_state_dir

    homes = dict.fromkeys(h for h in (ctx.project, ctx.home, user_state_dir(os.environ)) if h)
    found: list[dict[str, Any]] = []
    for home in homes:
        found += read_attempts(home, event.session_id)
    found.sort(key=lambda a: a.get("at", 0) if isinstance(a.get("at"), (int, float)) else 0)
    seen = ctx.session.get("attempts_seen")
    seen = seen if isinstance(seen, int) and 0 <= seen <= len(found) else 0
    ctx.new_attempts = [describe(a) for a in found[seen:]]
    ctx.session["attempts_seen"] = len(found)
    if not found:
        return {}, []
    notes = [f"{len(found)} attempt(s) refused this session, {len(found) - seen} new"]
    return {"attempts": [describe(a) for a in found[-SHOWN:]]}, notes
