"""The ``blockers`` fact provider: what the stop check sees of blockers and reports.

:func:`blockers_facts` is a plain function the hook's ``blockers`` provider calls. It returns
fact fields only (names from :data:`.fields.FIELDS`):

- ``openBlockers``: open blockers of the session, each ``{id, category, question, blocksProgress}``
- ``openBlockerCount``: their number
- ``resolvedBlockers``: resolved ones (soft choices, or resolved by a person), each
  ``{id, category, question, chosenOption}``
- ``blocked_report``: the four sections of the latest report this session filed (if any)
- ``blockedTasks``: the tasks open progress-blocking blockers are about (:func:`bind_task`;
  the hook's ``blockers`` provider observes them and never offers them as the next task)

A session's blockers are those logged with its id, plus those logged without one
(:data:`.service.DEFAULT_SESSION`: an agent whose MCP server does not know the
session). With blocker logging off (``stoprule blockers off``, ``/blockers off`` in the
session, or ``enabled: false``) it returns only ``blockersOff: true`` (the pack's question rule
then lets a question to the user stand). It never raises for a missing or damaged store: no fields, then.

On the cold path when the agent has logged blockers (tools/import_graph.py, COLD_PATH_WHEN): its imports
stay few, light and lazy.
"""

from __future__ import annotations

import json
from typing import Any

from stoprule._util import oslite as os
from stoprule._util.files import read_bounded
from stoprule._util.text import clean_obj
from stoprule.config.fields import FIELDS, REPORT_SECTIONS

__all__ = ["bind_task", "blockers_facts"]

DEFAULT_SESSION = "default"
MAX_REPORT_BYTES = 4 << 20


def blockers_facts(
    project_dir: str, session_id: str | None, settings: Any = None, notes: list[str] | None = None
) -> dict[str, Any]:
    """Fact fields for ``session_id`` in the project at ``project_dir`` (the directory holding ``.stoprule/``).

    ``settings``: a :class:`~stoprule.config.sections.BlockerSettings`; read from the project's config when None.
    ``notes`` gets a line per kind of damaged record line skipped."""
    from stoprule.agent.blockers.store import BlockerStore
    from stoprule.diagnostics import ConfigError

    if settings is None:
        from stoprule.config.loader import load_config

        try:
            settings = load_config(os.path.join(project_dir, ".stoprule", "config.yaml"), sections=("blockers",))[
                "blockers"
            ]
        except ConfigError:
            return {}
    try:
        store = BlockerStore(project_dir, settings)
    except ConfigError:
        return {}
    if not store.enabled(session_id):
        return {FIELDS["blockers_off"]: True}  # the triage is off: nothing diverts to the blocker tool
    sessions = {DEFAULT_SESSION, session_id} if session_id else None
    mine = [b for b in store.blockers() if sessions is None or b.session in sessions]
    if notes is not None:
        notes += [f"{n} blocker record line(s) skipped: {why}" for why, n in store.notes.items()]
    open_ = [
        {"id": b.id, "category": b.category, "question": b.question, "blocksProgress": b.blocksProgress}
        for b in mine
        if b.open
    ]
    resolved = [
        {
            "id": b.id,
            "category": b.category,
            "question": b.question,
            **({"chosenOption": b.chosenOption} if b.chosenOption is not None else {}),
        }
        for b in mine
        if not b.open
    ]
    out: dict[str, Any] = {
        FIELDS["open_blockers"]: open_,
        FIELDS["open_blocker_count"]: len(open_),
        FIELDS["resolved_blockers"]: resolved,
    }
    bound = _bound_tasks(project_dir)
    blocked = [bound[b.id] for b in mine if b.open and b.blocksProgress and b.id in bound]
    if blocked:
        out["blockedTasks"] = list(dict.fromkeys(blocked))
    report = _latest_report(project_dir, session_id)
    if report is not None:
        out[FIELDS["blocked_report"]] = report
    return out


TASKS_FILE = "tasks.jsonl"  # in .stoprule/blockers/: {"id": blocker id, "task": the task it is about}


def bind_task(project_dir: str, blocker_id: str, task: str) -> None:
    """Record that blocker ``blocker_id`` is about ``task`` (one appended line; never raises)."""
    line = json.dumps({"id": blocker_id, "task": task[:500]}, ensure_ascii=False) + "\n"
    try:
        path = os.path.join(project_dir, ".stoprule", "blockers", TASKS_FILE)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode("utf-8"))
        finally:
            os.close(fd)
    except OSError:
        return


def _bound_tasks(project_dir: str) -> dict[str, str]:
    out: dict[str, str] = {}
    try:
        with open(os.path.join(project_dir, ".stoprule", "blockers", TASKS_FILE), encoding="utf-8") as fh:
            for line in fh:
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                if isinstance(rec, dict) and isinstance(rec.get("id"), str) and isinstance(rec.get("task"), str):
                    out[rec["id"]] = rec["task"]
    except OSError:
        pass
    return out


def _latest_report(project_dir: str, session_id: str | None) -> dict[str, Any] | None:
    base = os.path.join(project_dir, ".stoprule", "reports")
    best: tuple[float, dict[str, Any]] | None = None
    try:
        tasks = os.listdir(base)
    except OSError:
        return None
    for task in tasks:
        path = os.path.join(base, task, "blocked_report.json")
        try:
            data = json.loads(read_bounded(path, MAX_REPORT_BYTES))  # a FIFO or a huge file: skipped unread
            mtime = os.stat(path).st_mtime
        except (OSError, ValueError, RecursionError):
            continue
        if not isinstance(data, dict):
            continue
        meta = data.get("_meta")
        meta = meta if isinstance(meta, dict) else {}
        if session_id and meta.get("session") not in (session_id, DEFAULT_SESSION):
            continue
        if best is None or mtime > best[0]:
            best = (mtime, clean_obj({k: data[k] for k in REPORT_SECTIONS if k in data}))
    return best[1] if best else None
