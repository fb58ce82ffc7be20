"""Is this process inside an agent's session? Its ancestry says so.

At session start the hook links the harness process (and the shell it runs hooks in) to the
session (:mod:`stoprule.agent.blockers.procs`), in the project's ``.stoprule/`` and in the
user's state directory. A command whose ancestors include a linked, still-running process
(same pid, same start time) runs inside that session: the agent started it, directly or
through any shell, script or tool of its own. The environment is not asked: the agent sets it.
"""

from __future__ import annotations

from stoprule._util import oslite as os
from stoprule.agent.blockers.procs import linked_session
from stoprule.agent.guard.journal import user_state_dir
from stoprule.project import find_project

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

__all__ = ["homes", "inside_session"]


def homes(env: Mapping[str, str], start: str | None = None) -> list[str]:
    """Where session links are kept: the nearest ``.stoprule/`` (from ``start``) and the user's state directory."""
    found = [find_project(start), user_state_dir(env)]
    return list(dict.fromkeys(h for h in found if h))


def inside_session(env: Mapping[str, str] | None = None, start: str | None = None) -> tuple[str, dict[str, Any]] | None:
    """``(home, link)`` of the agent session this process runs in (``link``: ``session``, ``harness``), or None."""
    env = os.environ if env is None else env
    for home in homes(env, start):
        link = linked_session(home)
        if link is not None:
            return home, link
    return None
