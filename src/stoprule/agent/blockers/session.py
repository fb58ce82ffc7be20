"""The one adapter between this package and the session state the hook's ``state`` provider
reads (:mod:`stoprule.agent.hook.state`: ``.stoprule/state/facts/<session>.json``, locked and
replaced atomically). ``report_status`` declares facts here; the blocker tool reads the
session's ``availableTasks`` from here.
"""

from __future__ import annotations

import os
from typing import Any

from stoprule.agent.hook.declare import declare_facts
from stoprule.agent.hook.state import StateError, read_facts
from stoprule.project import STATE_DIR

__all__ = ["declare_session_facts", "read_session_facts"]


def read_session_facts(project_dir: str, session_id: str) -> dict[str, Any]:
    """The facts declared for the session (empty when none, or unreadable)."""
    try:
        return read_facts(os.path.join(project_dir, STATE_DIR), session_id)
    except (StateError, OSError):
        return {}


def declare_session_facts(project_dir: str, session_id: str, fields: dict[str, Any]) -> dict[str, Any]:
    """Merge ``fields`` into the session's declared facts (``None`` removes a field); returns them all.

    Raises ``OSError`` when the state cannot be written (nothing is half-written)."""
    try:
        return declare_facts(os.path.join(project_dir, STATE_DIR), session_id, fields)
    except StateError as exc:
        raise OSError(str(exc)) from None
