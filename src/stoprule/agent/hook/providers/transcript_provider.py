"""``transcript``: turns, the latest task list and this turn's failed tool results, read
from the harness's transcript incrementally (position kept in the session record). A
harness whose plugin sends its task list and turn count in the payload (OpenCode:
``todos`` from ``todo.updated`` events, ``turns``) is read from there.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

import time

from stoprule._util import oslite as os
from stoprule.agent.hook.event import HookEvent
from stoprule.agent.hook.transcripts.scan import detect, observations, scan_file

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from stoprule.agent.hook.providers.context import Context

__all__ = ["provide"]


SETTLE_S = 0.3  # how long a stop waits for a transcript that is still being written
_STEP_S = 0.05


def provide(event: HookEvent, ctx: Context) -> tuple[dict[str, Any], list[str]]:
    if ctx.scan is not None:  # replay: the reader's state at this stop
        return observations(ctx.scan), []
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
        state, notes = _read(path, fmt, saved if isinstance(saved, dict) else None, ctx)
        waited = 0.0
        while _unsettled(state, notes, event) and waited < SETTLE_S and time.monotonic() + _STEP_S < ctx.deadline:
            time.sleep(_STEP_S)  # the harness may flush its last records after the stop hook starts
            waited += _STEP_S
            state, more = _read(path, fmt, state, ctx)
            notes = [n for n in notes if "incomplete" not in n] + more
        if _unsettled(state, notes, event):
            notes.append(
                f"the transcript is still being written (waited {waited * 1000:.0f} ms): its last "
                "records may be missing, so the task list and the last message may be stale"
            )
        elif waited:
            notes.append(f"waited {waited * 1000:.0f} ms for the transcript's last records")
    except OSError as exc:
        return {}, [f"transcript {path} unreadable: {exc.strerror or exc}"]
    ctx.session["transcript"] = state
    obs = observations(state["scan"])
    if state["scan"].get("versions"):
        obs["versions"] = state["scan"]["versions"]
    return obs, notes


def _read(path: str, fmt: str, saved: dict[str, Any] | None, ctx: Any) -> tuple[dict[str, Any], list[str]]:
    return scan_file(
        path,
        fmt,
        saved,
        tail=int(ctx.settings.get("transcript_tail_bytes", 262144)),
        max_scan=int(ctx.settings.get("transcript_max_scan_bytes", 8388608)),
        deadline=ctx.deadline,
    )


def _unsettled(state: dict[str, Any], notes: list[str], event: HookEvent) -> bool:
    """The transcript's end is not the stop's: a record cut short, a task created whose result
    is not written yet, or (where the payload has it) a last message the file does not hold yet."""
    scan = state["scan"]
    if any("incomplete" in n for n in notes) or scan.get("pending"):
        return True
    said = event.last_message
    if said and said.strip():
        last = scan.get("last_text") or ""
        return " ".join(said.split())[-200:] != " ".join(last.split())[-200:]
    return False


def _from_payload(raw: dict[str, Any]) -> dict[str, Any]:
    """Observations from a payload's ``todos`` (``content``/``status``) and ``turns``."""
    from stoprule.agent.hook.transcripts.scan import Scan

    scan = Scan("claude")
    scan.set_tasks([t for t in raw["todos"] if isinstance(t, dict)], "content", "title", "description")
    state = scan.state()
    turns = raw.get("turns")
    state["turns"] = turns if isinstance(turns, int) and not isinstance(turns, bool) else None
    if isinstance(raw.get("last_assistant_message"), str):
        state["last_text"] = raw["last_assistant_message"]
    return observations(state)
