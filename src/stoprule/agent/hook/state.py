"""Per-session state under ``.stoprule/state/``: declared facts and the hook's own counters.

Declared facts (the ``state`` provider reads them; ``stoprule facts set|clear`` and the
blocker MCP tools write them)::

    set_facts(project, session, fields) -> dict      merge fields in; returns the session's facts
    clear_facts(project, session, keys=None) -> dict  drop keys (None: all); returns what is left
    read_facts(project, session) -> dict             project-wide facts overlaid with the session's

``project`` is the ``.stoprule/`` directory (:func:`stoprule.project.find_project`);
``session`` is the harness's session id, or None for facts that hold for every session
of the project (a session's own facts win over them). Values are JSON values; field
names are the pack's. Files: ``state/facts/<session>.json`` (``_project.json`` for None).

Every change is a read-modify-write under an exclusive lock (``fcntl.flock`` on a
``.lock`` file beside it, where available) and lands with an atomic rename, so concurrent
writers (several hooks, an MCP server, the CLI) never lose an update or leave a torn file.
The hook's own session record (loop-guard counter, transcript read position) lives in
``state/sessions/<session>.json`` and is changed the same way (:func:`update_session`).

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable, Mapping
from contextlib import suppress

from stoprule._util.files import FileTooLarge, NotRegular, atomic_write, locked, read_bounded
from stoprule._util.redact import redact_obj
from stoprule._util.text import clean_obj
from stoprule.diagnostics import AgentError
from stoprule.project import PROJECT_WIDE, state_file

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "PROJECT_WIDE",
    "StateError",
    "clear_facts",
    "declare_facts",
    "facts_file",
    "read_facts",
    "read_session",
    "session_file",
    "set_facts",
    "update_session",
]


class StateError(AgentError, ValueError):
    """A state file that cannot be read or written (the message names it)."""


def facts_file(project: str, session: str | None) -> str:
    return state_file(project, "facts", session)


def session_file(project: str, session: str | None) -> str:
    return state_file(project, "sessions", session)


MAX_STATE_BYTES = 4 << 20  # one state file; larger is damage (quarantined)
MAX_QUARANTINED = 5  # damaged copies kept per state file


def _read(path: str, notes: list[str] | None = None) -> dict[str, Any]:
    """The JSON object in ``path`` ({} when missing). A damaged file (not JSON, not an object,
    too large, not a regular file) is moved aside as ``<name>.corrupt-<time>`` and read as {}
    with a note; only when it cannot be moved aside is it a :class:`StateError`."""
    try:
        raw = read_bounded(path, MAX_STATE_BYTES)
    except FileNotFoundError:
        return {}
    except (NotRegular, FileTooLarge) as exc:
        return _quarantine(path, f"{type(exc).__name__}: {exc}", notes)
    except OSError as exc:  # unreadable (permissions, a file where a folder should be): not damage
        raise StateError(f"cannot read {path}: {exc}") from None
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        return _quarantine(path, f"{type(exc).__name__}: {exc}", notes)
    if not isinstance(data, dict):
        return _quarantine(path, "not a JSON object", notes)
    return data


def _quarantine(path: str, why: str, notes: list[str] | None) -> dict[str, Any]:
    """Move a damaged state file aside (keeping the newest few) so the next write rebuilds it."""
    aside = f"{path}.corrupt-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}"
    try:
        os.rename(path, aside)
    except OSError as exc:
        raise StateError(f"cannot read {path} ({why}) nor move it aside: {exc}") from None
    folder, name = os.path.split(path)
    with suppress(OSError):
        old = sorted(f for f in os.listdir(folder) if f.startswith(name + ".corrupt-"))
        for f in old[:-MAX_QUARANTINED]:
            os.unlink(os.path.join(folder, f))
    if notes is not None:
        notes.append(f"state file {path} was damaged ({why[:200]}): moved aside to {aside}, rebuilt")
    return {}


def _write(path: str, data: Mapping[str, Any], sync: bool) -> None:
    text = json.dumps(redact_obj(clean_obj(dict(data))), ensure_ascii=False, sort_keys=True)
    atomic_write(path, text, sync=sync)  # the C encoder (dump's is Python)


def _change(path: str, fn: Callable[[dict[str, Any]], dict[str, Any]], sync: bool = True) -> dict[str, Any]:
    try:
        with locked(path + ".lock"):
            new = fn(_read(path))
            _write(path, new, sync)
            return new
    except OSError as exc:
        raise StateError(f"cannot write {path}: {exc}") from None


def set_facts(project: str, session: str | None, fields: Mapping[str, Any]) -> dict[str, Any]:
    """Merge ``fields`` (pack field names -> JSON values) into the session's declared facts."""
    json.dumps(dict(fields))  # only JSON values are stored (TypeError otherwise)
    return _change(facts_file(project, session), lambda cur: {**cur, **fields})


def declare_facts(project: str, session: str | None, fields: Mapping[str, Any]) -> dict[str, Any]:
    """Merge ``fields`` in one locked change, a ``None`` value removing its field (the blocker
    tools' ``report_status``); returns the session's declared facts."""
    json.dumps(dict(fields))
    return _change(
        facts_file(project, session),
        lambda cur: {k: v for k, v in {**cur, **fields}.items() if v is not None or k not in fields},
    )


def clear_facts(project: str, session: str | None, keys: Iterable[str] | None = None) -> dict[str, Any]:
    """Drop ``keys`` (None: every fact) from the session's declared facts; returns what is left."""
    drop = None if keys is None else set(keys)
    return _change(
        facts_file(project, session),
        lambda cur: {} if drop is None else {k: v for k, v in cur.items() if k not in drop},
    )


def read_facts(
    project: str, session: str | None, notes: list[str] | None = None, project_wide: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The facts declared for ``session``: project-wide ones (``project_wide`` when given: as the
    session froze them) overlaid with the session's own (a damaged file is moved aside and read
    as none, with a note in ``notes``)."""
    out = dict(project_wide) if project_wide is not None else _read(facts_file(project, None), notes)
    if session is not None:
        out.update(_read(facts_file(project, session), notes))
    cleaned: dict[str, Any] = clean_obj(out)  # a hand-edited NUL or lone surrogate cannot fail the stop check
    return cleaned


def read_session(project: str, session: str | None, notes: list[str] | None = None) -> dict[str, Any]:
    """The hook's own record for ``session`` (loop guard, transcript position); a damaged
    record is moved aside and started afresh (noted in ``notes``)."""
    return _read(session_file(project, session), notes)


def update_session(project: str, session: str | None, fn: Callable[[dict[str, Any]], dict[str, Any]]) -> dict[str, Any]:
    """Change the hook's record for ``session`` under the lock; returns the new record."""
    return _change(session_file(project, session), fn, sync=False)  # a lost counter is harmless
