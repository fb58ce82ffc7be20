"""A project's stoprule state: the nearest ``.stoprule/`` at or above the working directory.

Found the way git finds ``.git``: agent hooks run from subdirectories and worktrees.
It holds ``config.yaml`` (hook, provider and blocker settings), ``policies/`` (an
optional pack), the ledger, session state (``state/<kind>/<session>.json``,
:func:`state_file`), blockers and reports. Whatever creates it writes its ``.gitignore``
(:func:`ensure_state_dir`): only ``config.yaml`` and ``policies/`` are the team's to commit.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

from stoprule._util import oslite as os

__all__ = [
    "CONFIG_FILE",
    "GITIGNORE",
    "GUARD_OFF_FILE",
    "PROJECT_WIDE",
    "STATE_DIR",
    "ensure_state_dir",
    "find_project",
    "project_root",
    "session_name",
    "state_file",
]

STATE_DIR = ".stoprule"
CONFIG_FILE = "config.yaml"  # the project's settings, in STATE_DIR
GUARD_OFF_FILE = "guard.off"  # in STATE_DIR: the user's switch (``stoprule guard off``)
PROJECT_WIDE = "_project"  # the file name of state that holds for every session of the project
#: ``.stoprule/.gitignore``: everything but the team's settings stays out of git
GITIGNORE = """\
# Written by stoprule. The team commits config.yaml and policies/; everything else here
# belongs to this machine: the ledger and its signing keys, session state, the hook's log,
# the blockers record and view, blocked reports.
/*
!/.gitignore
!/config.yaml
!/policies/
"""


def find_project(start: str | os.PathLike[str] | None = None) -> str | None:
    """The nearest ``.stoprule/`` directory at or above ``start`` (default: the working
    directory), or None. The search stops at the filesystem root and never follows a
    ``.stoprule`` that is not a directory."""
    cur = os.path.abspath(os.fspath(start) if start is not None else os.getcwd())
    while True:
        candidate = os.path.join(cur, STATE_DIR)
        if os.path.isdir(candidate):
            return candidate
        parent = os.path.dirname(cur)
        if parent == cur:
            return None
        cur = parent


def project_root(start: str | os.PathLike[str] | None = None) -> str | None:
    """The directory holding the nearest ``.stoprule/`` (the project), or None."""
    found = find_project(start)
    return os.path.dirname(found) if found else None


def ensure_state_dir(path: str | os.PathLike[str]) -> str:
    """Create the state directory ``path`` (a ``.stoprule/``) if it is missing, and its
    ``.gitignore`` (:data:`GITIGNORE`) if that is missing; an existing one is left as it is.
    Returns the path. Raises ``OSError``."""
    folder = os.fspath(path)
    os.makedirs(folder, exist_ok=True)
    ignore = os.path.join(folder, ".gitignore")
    if not os.path.lexists(ignore):
        try:
            fd = os.open(ignore, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:  # another process made it first
            return folder
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(GITIGNORE)
    return folder


def session_name(session: str | None) -> str:
    """A file name for ``session``: readable, and distinct sessions never share one
    (:data:`PROJECT_WIDE` for None)."""
    if session is None:
        return PROJECT_WIDE
    # (no regex: this module is on the guard's path, which never imports re)
    safe = "".join(c if c.isascii() and (c.isalnum() or c in "._-") else "_" for c in session)[:80]
    if safe == session and not safe.startswith((".", "_")):
        return safe
    from stoprule._util.native import adler32, crc32

    raw = session.encode("utf-8", "surrogatepass")
    return f"{safe.lstrip('._')[:60]}~{crc32(raw):08x}{adler32(raw):08x}"


def state_file(project: str, kind: str, session: str | None) -> str:
    """``<project>/state/<kind>/<session>.json``: one session's state of one kind (``facts``,
    ``sessions``, ``config``); ``project`` is the ``.stoprule/`` directory."""
    return os.path.join(project, "state", kind, session_name(session) + ".json")
