"""A project's stoprule state: the nearest ``.stoprule/`` at or above the working directory.

Found the way git finds ``.git``: agent hooks run from subdirectories and worktrees.
It holds ``config.yaml`` (hook, provider and blocker settings), ``policies/`` (an
optional pack), the ledger, session state, blockers and reports. On the CLI's
cold-start path: ``os`` only.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

import os

__all__ = ["STATE_DIR", "find_project", "project_root"]

STATE_DIR = ".stoprule"


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
