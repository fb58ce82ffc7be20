"""``git``: the session's uncommitted work and the branch of the working tree (``git status``,
bounded by the provider's deadline; skipped at once outside a repository).

Whose work: at session start stoprule records the dirty files with a hash of their content
(:func:`baseline`, kept in the hook's session record as ``baseline``); at a stop only a file
that is dirty now and was clean then, or whose content changed since, counts. stoprule's
own files never count: everything under the project's ``.stoprule/`` (state, log, ledger,
config, the blockers view) and every file ``stoprule init`` writes or merges into
(:data:`GENERATED`: the harness configs, shared and personal, and the MCP registrations).
Without a recorded baseline every dirty file but stoprule's counts.

Observations: ``dirty`` (bool), ``files`` (the first :data:`SHOWN` such paths), ``count``
(how many in all), ``branch``.

``git status`` runs as a background reader should, without optional locks
(``GIT_OPTIONAL_LOCKS=0``, which gits older than 2.15 ignore): it does not write a refreshed
index, so it never holds ``index.lock`` while the agent commits.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

import os
import time
import zlib

from stoprule.agent.hook.event import HookEvent

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["GENERATED", "baseline", "dirty_files", "provide", "repo_root"]

SHOWN = 5
# the files ``stoprule init`` writes or merges into (relative to the repository root): the wiring
# table's ``generated_files()`` (stoprule.agent.hook.wiring, kept off the cold path; a test holds them equal)
GENERATED = (
    ".claude/settings.json", ".claude/settings.local.json", ".codex/hooks.json", ".gemini/settings.json",
    ".cursor/hooks.json", ".github/hooks/stoprule.json", ".mcp.json", ".codex/config.toml", ".cursor/mcp.json",
    ".github/mcp.json", "opencode.json", ".opencode/plugins/stoprule.js",
)  # fmt: skip


def repo_root(start: str) -> str | None:
    cur = os.path.abspath(start)
    while True:
        if os.path.exists(os.path.join(cur, ".git")):
            return cur
        parent = os.path.dirname(cur)
        if parent == cur:
            return None
        cur = parent


def _own(path: str, skip: str, extra: tuple[str, ...]) -> bool:
    return bool(skip and path.startswith(skip)) or path in GENERATED or path in extra or path.endswith(".stoprule-tmp")


def dirty_files(
    root: str, project: str | None, timeout: float, blockers_file: str | None = None
) -> tuple[str | None, list[str]]:
    """``(branch, paths)``: the dirty paths of the work tree at ``root`` (relative, ``/``-separated),
    stoprule's own files left out (``blockers_file``: the blockers view, relative to the project,
    wherever the config puts it). Raises FileNotFoundError (no git), CommandTimeout, OSError."""
    from stoprule._util.command import capture

    code, out, err = capture(
        ["git", "-C", root, "status", "--porcelain=v1", "-z", "--branch", "--untracked-files=all"],
        timeout,
        {**os.environ, "GIT_OPTIONAL_LOCKS": "0"},
    )
    if code != 0:
        raise OSError(f"git status failed: {err.decode('utf-8', 'replace').strip()[:200]}")
    entries = out.decode("utf-8", "replace").split("\0")
    branch = None
    if entries and entries[0].startswith("## "):
        head = entries.pop(0)[3:].removeprefix("No commits yet on ").removeprefix("Initial commit on ")
        name = head.split("...")[0].split(" ")[0]
        branch = name if name and not name.startswith("HEAD") else None
    skip = ""
    extra: tuple[str, ...] = ()
    if project is not None:
        rel = os.path.relpath(project, root)
        skip = "" if rel.startswith("..") else rel.replace(os.sep, "/").rstrip("/") + "/"
        if blockers_file:
            view = os.path.relpath(os.path.join(os.path.dirname(project), blockers_file), root)
            extra = (view.replace(os.sep, "/"),)
    paths: list[str] = []
    it = iter(entries)
    for entry in it:
        if len(entry) < 4:
            continue
        status, path = entry[:2], entry[3:]
        if "R" in status or "C" in status:
            next(it, None)  # -z: the rename's source follows as its own entry
        if not _own(path, skip, extra):
            paths.append(path)
    return branch, paths


def _hash(root: str, path: str) -> str:
    """A content hash of ``path`` (``-`` when it is gone, ``?`` when unreadable)."""
    full = os.path.join(root, path)
    try:
        with open(full, "rb") as fh:
            data = fh.read(16 << 20)
    except FileNotFoundError:
        return "-"
    except OSError:
        return "?"
    return f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}{len(data):x}"


def _blockers_file(settings: dict[str, Any]) -> str | None:
    cfg = settings.get("blockers")
    return cfg.get("file") if isinstance(cfg, dict) else None


def baseline(
    workdir: str, project: str | None, settings: dict[str, Any], timeout: float = 3.0
) -> dict[str, Any] | None:
    """What is dirty now, with content hashes (recorded at session start), or None outside git.
    ``settings``: the ``providers`` section."""
    root = repo_root(workdir)
    if root is None:
        return None
    _, paths = dirty_files(root, project, timeout, _blockers_file(settings))
    return {"root": root, "files": {p: _hash(root, p) for p in paths}}


def provide(event: HookEvent, ctx: Any) -> tuple[dict[str, Any], list[str]]:
    root = repo_root(ctx.workdir)
    if root is None:
        return {}, ["not in a git repository"]
    from stoprule._util.command import CommandTimeout

    timeout = max(0.05, ctx.deadline - time.monotonic())
    try:
        branch, paths = dirty_files(root, ctx.project, timeout, _blockers_file(ctx.settings))
    except FileNotFoundError:
        return {}, ["git is not installed"]
    except CommandTimeout:
        return {}, [f"git status took over {timeout * 1000:.0f} ms: skipped"]
    except OSError as exc:
        return {}, [str(exc)]
    obs: dict[str, Any] = {}
    notes: list[str] = []
    if branch:
        obs["branch"] = branch
    base = ctx.session.get("baseline")
    before = base.get("files") if isinstance(base, dict) and base.get("root") == root else None
    if isinstance(before, dict):
        mine = [p for p in paths if p not in before or before[p] != _hash(root, p)]
        if len(mine) < len(paths):
            notes.append(f"{len(paths) - len(mine)} file(s) dirty since before the session: not counted")
    else:
        mine = paths
        notes.append("no baseline recorded at session start: every dirty file counts")
    obs["dirty"] = bool(mine)
    obs["files"] = mine[:SHOWN]
    obs["count"] = len(mine)
    return obs, notes
