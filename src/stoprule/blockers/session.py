"""The one adapter between this package and the session state the hook's ``state`` provider reads.

Issue 8 builds the real session-state store (``set_facts`` / ``read_facts`` /
``clear_facts``). Until it is merged, :func:`declare_session_facts` and
:func:`read_session_facts` write and read this stand-in format; at merge time only
these two functions change (point them at the real store).

Assumed format: ``.stoprule/state/<session>.json`` holds one JSON object::

    {"session": "<id>", "updated": "<UTC ISO-8601>", "facts": {<fact field>: <value>, ...}}

``facts`` are fields of the pack's fact schema (``status``, ``errors``, ``turn``,
``max_turns``, ``replyClosureState``, ``blocked_report``, ``availableTasks``, ...).
A declaration merges into what is there (a field set to ``null`` is removed); the file
is replaced atomically (temp file, fsync, rename), under an advisory lock so that two
writers of one session do not lose each other's fields.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from typing import Any

__all__ = ["declare_session_facts", "read_session_facts", "session_file"]

_SAFE = re.compile(r"[^A-Za-z0-9._-]")


def session_file(project_dir: str, session_id: str) -> str:
    """``.stoprule/state/<session>.json`` (the id made a safe file name)."""
    name = _SAFE.sub("_", session_id)[:200] or "_"
    if name in (".", ".."):
        name = "_" + name
    return os.path.join(project_dir, ".stoprule", "state", name + ".json")


def read_session_facts(project_dir: str, session_id: str) -> dict[str, Any]:
    """The facts declared for the session (empty when none, or unreadable)."""
    try:
        with open(session_file(project_dir, session_id), encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return {}
    facts = data.get("facts") if isinstance(data, dict) else None
    return facts if isinstance(facts, dict) else {}


def declare_session_facts(project_dir: str, session_id: str, fields: dict[str, Any]) -> dict[str, Any]:
    """Merge ``fields`` into the session's declared facts (``None`` removes a field); returns them all.

    Raises ``OSError`` when the state cannot be written (nothing is half-written)."""
    import fcntl
    import tempfile
    from datetime import datetime, timezone

    path = session_file(project_dir, session_id)
    folder = os.path.dirname(path)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        facts = read_session_facts(project_dir, session_id)
        for key, value in fields.items():
            if value is None:
                facts.pop(key, None)
            else:
                facts[key] = value
        body = {"session": session_id, "updated": datetime.now(timezone.utc).isoformat(), "facts": facts}
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(body, fh, ensure_ascii=False, indent=1)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    return facts
