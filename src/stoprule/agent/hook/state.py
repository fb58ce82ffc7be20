"""Per-session state under ``.stoprule/state/``: declared facts and the hook's own counters.

Declared facts (the ``state`` provider reads them; ``stoprule facts set|clear`` and the
blocker MCP tools write them, with :mod:`stoprule.agent.hook.declare`)::

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

import time

from stoprule._util import oslite as os
from stoprule._util.files import FileTooLarge, NotRegular, atomic_write, locked, read_bounded
from stoprule._util.jsonin import loads
from stoprule._util.jsonout import dumps
from stoprule._util.redact import redact_obj
from stoprule._util.text import clean_obj
from stoprule.diagnostics import AgentError
from stoprule.project import PROJECT_WIDE, state_file

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

__all__ = [
    "PROJECT_WIDE",
    "StateError",
    "facts_file",
    "read_facts",
    "read_session",
    "session_file",
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


def _read(path: str, notes: list[str] | None = None, copies: int = 1) -> Any:
    """The JSON object in ``path`` ({} when missing). A damaged file (not JSON, not an object,
    too large, not a regular file) is moved aside as ``<name>.corrupt-<time>`` and read as {}
    with a note; only when it cannot be moved aside is it a :class:`StateError`. With
    ``copies`` 2: two separate copies of it."""
    try:
        raw = read_bounded(path, MAX_STATE_BYTES)
    except FileNotFoundError:
        return ({}, {}) if copies == 2 else {}
    except (NotRegular, FileTooLarge) as exc:
        return _quarantine(path, f"{type(exc).__name__}: {exc}", notes, copies)
    except OSError as exc:  # unreadable (permissions, a file where a folder should be): not damage
        raise StateError(f"cannot read {path}: {exc}") from None
    try:
        data = loads(raw)
    except (ValueError, RecursionError) as exc:
        return _quarantine(path, f"{type(exc).__name__}: {exc}", notes, copies)
    if not isinstance(data, dict):
        return _quarantine(path, "not a JSON object", notes, copies)
    return (data, loads(raw)) if copies == 2 else data


def _quarantine(path: str, why: str, notes: list[str] | None, copies: int = 1) -> Any:
    """Move a damaged state file aside (keeping the newest few) so the next write rebuilds it."""
    aside = f"{path}.corrupt-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}"
    try:
        os.rename(path, aside)
    except OSError as exc:
        raise StateError(f"cannot read {path} ({why}) nor move it aside: {exc}") from None
    folder, name = os.path.split(path)
    try:
        old = sorted(f for f in os.listdir(folder) if f.startswith(name + ".corrupt-"))
        for f in old[:-MAX_QUARANTINED]:
            os.unlink(os.path.join(folder, f))
    except OSError:
        pass
    if notes is not None:
        notes.append(f"state file {path} was damaged ({why[:200]}): moved aside to {aside}, rebuilt")
    return ({}, {}) if copies == 2 else {}


def _write(path: str, data: Mapping[str, Any], sync: bool, held: dict[str, Any] | None = None) -> None:
    """Write ``data`` cleaned and redacted; with ``held`` (what the file held, read apart from
    ``data``), what is equal to it is written as it is: it was cleaned and redacted when written
    (a session record keeps its history: redacting all of it again at every stop costs ~1 ms)."""
    out = _unchanged_kept(dict(data), held) if held else redact_obj(clean_obj(dict(data)))
    text = dumps(out, ensure_ascii=False, sort_keys=True)
    atomic_write(path, text, sync=sync)  # the C encoder (dump's is Python)


def _unchanged_kept(new: Any, held: Any) -> Any:
    """``new`` cleaned and redacted, except its parts equal to ``held``'s at the same key (and
    a list's items ``held`` had, when ``new`` only appends to it)."""
    if new == held:
        return new
    if type(new) is list and type(held) is list and len(new) > len(held) and new[: len(held)] == held:
        return new[: len(held)] + redact_obj(clean_obj(new[len(held) :]))  # a history, appended to
    if type(new) is not dict or type(held) is not dict:
        return redact_obj(clean_obj(new))
    out: dict[str, Any] = {}
    for k, v in new.items():
        if type(k) is str and k in held:
            out[k] = _unchanged_kept(v, held[k])
        else:
            out.update(redact_obj(clean_obj({k: v})))
    return out


def _change(path: str, fn: Callable[[dict[str, Any]], dict[str, Any]], sync: bool = True) -> dict[str, Any]:
    try:
        with locked(path + ".lock"):
            held, cur = _read(path, copies=2)  # two copies: ``fn`` may change its own in place
            new = fn(cur)
            _write(path, new, sync, held)
            return new
    except OSError as exc:
        raise StateError(f"cannot write {path}: {exc}") from None


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
    record: dict[str, Any] = _read(session_file(project, session), notes)
    return record


def update_session(project: str, session: str | None, fn: Callable[[dict[str, Any]], dict[str, Any]]) -> dict[str, Any]:
    """Change the hook's record for ``session`` under the lock; returns the new record."""
    return _change(session_file(project, session), fn, sync=False)  # a lost counter is harmless
