"""Which session an MCP server serves: the harness process links it at session start.

No harness tells an MCP server its session id, but the harness process is an ancestor of
both its hook commands and its MCP servers. At session start the hook writes, for each of
its nearest ancestors, ``state/procs/<pid>.json`` = ``{session, harness, start}`` (``start``:
the process's start time, so a reused pid never matches); ``stoprule mcp`` walks up from
itself and takes the nearest ancestor with a link. Two sessions in one project never mix:
each harness process has its own link, and a new session in the same process (``/clear``)
replaces it. Where the ancestry cannot be read, nothing is linked (the server falls back to
``$STOPRULE_SESSION``, then ``default``).

The linked ancestors are the shells the hook runs in, the harness (the first that is not a
shell) and the wrappers above it, never the shell the harness was started from: the CLI
(:mod:`stoprule.agent.guard.session`) refuses its mutating commands inside a linked ancestry,
and the user's own terminal must stay outside it.

On the cold path when a session starts (tools/import_graph.py, COLD_PATH_WHEN): its imports
stay few, light and lazy.
"""

from __future__ import annotations

import json
import time

from stoprule._util import oslite as os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["ancestors", "foreign_holder", "link_session", "linked_session"]

DEPTH = 3  # ancestors linked: the shell a hook runs in, the harness, one wrapper


def _proc(pid: int) -> tuple[int, str] | None:
    """``(parent pid, start time)`` of ``pid``, or None."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as fh:
            stat = fh.read()
        fields = stat[stat.rindex(")") + 2 :].split()
        return int(fields[1]), fields[19]
    except (OSError, ValueError, IndexError):
        pass
    try:
        from stoprule._util.command import capture

        code, out, _ = capture(["ps", "-o", "ppid=,lstart=", "-p", str(pid)], 2.0)
        text = out.decode("utf-8", "replace").strip()
        if code != 0 or not text:
            return None
        ppid, _, start = text.partition(" ")
        return int(ppid), start.strip()
    except (OSError, ValueError, Exception):  # noqa: BLE001 - no ps, a timeout: no ancestry
        return None


def ancestors(pid: int | None = None, depth: int = 16) -> list[tuple[int, str]]:
    """``[(pid, start time)]`` of the ancestors of ``pid`` (default: this process), nearest first."""
    out: list[tuple[int, str]] = []
    info = _proc(pid or os.getpid())
    while info is not None and info[0] > 1 and len(out) < depth:
        parent = _proc(info[0])
        if parent is None:
            break
        out.append((info[0], parent[1]))
        info = parent
    return out


def _dir(home: str) -> str:
    return os.path.join(home, "state", "procs")


SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "fish", "tcsh", "csh", "ash", "busybox"})


def _name(pid: int) -> str:
    """The program name of ``pid`` (``/proc/PID/comm``), or ``""``."""
    try:
        with open(f"/proc/{pid}/comm", encoding="utf-8", errors="replace") as fh:
            return fh.read().strip()
    except OSError:
        return ""


def link_session(home: str, session: str, harness: str) -> int:
    """Link this process's nearest ancestors to ``session``: the shells the hook runs in, the
    harness and its wrappers, up to :data:`DEPTH`, never a shell above the harness (the user's);
    returns how many were linked."""
    folder = _dir(home)
    linked = 0
    from stoprule._util.files import atomic_write

    above = False  # past the harness (the first ancestor that is not a shell)
    for pid, start in ancestors(depth=DEPTH):
        shell = _name(pid) in SHELLS
        if shell and above:
            break
        above = above or not shell
        link = {"session": session, "harness": harness, "start": start, "at": round(time.time(), 3)}
        atomic_write(os.path.join(folder, f"{pid}.json"), json.dumps(link), sync=False)
        linked += 1
    return linked


def linked_session(home: str) -> dict[str, Any] | None:
    """The link of this process's nearest linked ancestor (``session``, ``harness``), or None."""
    folder = _dir(home)
    if not os.path.isdir(folder):
        return None
    for pid, start in ancestors():
        try:
            with open(os.path.join(folder, f"{pid}.json"), encoding="utf-8") as fh:
                link = json.load(fh)
        except (OSError, ValueError):
            continue
        if isinstance(link, dict) and link.get("start") == start and isinstance(link.get("session"), str):
            return link
    return None


def _live_link(folder: str, pid: int, start: str | None = None) -> dict[str, Any] | None:
    """The link of ``pid`` if it is still that process (``start``: its start time, when known)."""
    try:
        with open(os.path.join(folder, f"{pid}.json"), encoding="utf-8") as fh:
            link = json.load(fh)
    except (OSError, ValueError):
        return None
    if not isinstance(link, dict) or not isinstance(link.get("session"), str):
        return None
    if start is None:
        info = _proc(pid)
        start = info[1] if info is not None else None
    return link if start is not None and link.get("start") == start else None


def foreign_holder(home: str, session: str | None) -> str | None:
    """Why the harness that runs this process (a hook) may be the agent's, not the user's, or None.

    The harness is this process's first run of non-shell ancestors (the harness and its
    wrappers, above the shells it runs hooks in). It is the agent's when a linked session's
    process sits above it (the agent started it from its shell: ``codex exec resume``), or when
    ``session`` is linked to a live process outside this ancestry (a second process holding the
    same session, even one the agent detached)."""
    folder = _dir(home)
    if not os.path.isdir(folder):
        return None
    chain = ancestors()
    i = 0
    while i < len(chain) and _name(chain[i][0]) in SHELLS:
        i += 1
    while i < len(chain) and _name(chain[i][0]) not in SHELLS:
        i += 1
    own = {pid for pid, _ in chain[:i]}
    for pid, start in chain[i:]:
        link = _live_link(folder, pid, start)
        if link is not None:
            return f"the harness that sent it was started inside a {link.get('harness')} session ({link['session']})"
    if not session:
        return None
    for entry in os.listdir(folder):
        name, _, ext = entry.partition(".")
        if ext != "json" or not name.isdigit() or int(name) in own:
            continue
        link = _live_link(folder, int(name))
        if link is not None and link["session"] == session:
            return f"another live process (pid {name}) holds this session"
    return None
