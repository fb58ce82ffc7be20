"""``transcript``: turns, the latest task list and this turn's failed tool results, read
from the harness's transcript incrementally (position kept in the session record). A
harness whose plugin sends its task list and turn count in the payload (OpenCode:
``todos`` from ``todo.updated`` events, ``turns``) is read from there.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

import os

from stoprule.agent.hook.event import HookEvent
from stoprule.agent.hook.transcripts import detect, observations, scan_file

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from stoprule.agent.hook.providers.context import Context

__all__ = ["provide"]


def provide(event: HookEvent, ctx: Context) -> tuple[dict[str, Any], list[str]]:
    path = event.transcript_path
    if not path and isinstance(event.raw.get("todos"), list):
        return _from_payload(event.raw), []
    if not path:
        return {}, ["no transcript path in the payload"]
    path = os.path.expanduser(path)
    if not os.path.isfile(path):
        return {}, [f"transcript {path} not found"]
    fmt = detect(path, event.harness)
    if fmt is None:
        return {}, [f"transcript {path}: unknown format"]
    saved = ctx.session.get("transcript")
    try:
        state, notes = scan_file(
            path,
            fmt,
            saved if isinstance(saved, dict) else None,
            tail=int(ctx.settings.get("transcript_tail_bytes", 262144)),
            max_scan=int(ctx.settings.get("transcript_max_scan_bytes", 8388608)),
            deadline=ctx.deadline,
        )
    except OSError as exc:
        return {}, [f"transcript {path} unreadable: {exc.strerror or exc}"]
    ctx.session["transcript"] = state
    return observations(state["scan"]), notes


def _from_payload(raw: dict[str, Any]) -> dict[str, Any]:
    """Observations from a payload's ``todos`` (``content``/``status``) and ``turns``."""
    from stoprule.agent.hook.transcripts import Scan

    scan = Scan("claude")
    scan._set_tasks([t for t in raw["todos"] if isinstance(t, dict)], "content", "title", "description")
    state = scan.state()
    turns = raw.get("turns")
    state["turns"] = turns if isinstance(turns, int) and not isinstance(turns, bool) else None
    if isinstance(raw.get("last_assistant_message"), str):
        state["last_text"] = raw["last_assistant_message"]
    return observations(state)
