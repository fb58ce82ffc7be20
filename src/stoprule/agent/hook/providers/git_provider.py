"""``git``: the session's uncommitted work and the branch of the working tree (``git status``,
bounded by the provider's deadline; skipped at once outside a repository).

Whose work: at session start stoprule records the dirty files with a hash of their content
(:func:`~stoprule.agent.hook.providers.git_baseline.baseline`, kept in the hook's session record
as ``baseline``); at a stop only a file that is dirty now and was clean then, or whose content
changed since, counts. stoprule's own files never count: everything under the project's
``.stoprule/`` (state, log, ledger, config, the blockers view) and every file ``stoprule init``
writes or merges into (:data:`GENERATED`: the harness configs, shared and personal, and the MCP
registrations). Without a recorded baseline every dirty file but stoprule's counts, except where
the harness has no session-start hook (Cursor): there the first stop's dirty files are the baseline.

Hidden work counts too: the files the session flagged assume-unchanged or skip-worktree, the
files in stash entries made since it started, and the files newly ignored by an ignore file it
added or changed (``.git/info/exclude``, the global excludes, a new or edited ``.gitignore``;
files a committed ``.gitignore`` already ignored, such as build output, do not count). The
flagged files are listed again only when the index (their only home) changed since they were
last listed: its stamp (inode, size, mtime, ctime) is kept with the list, as the pack cache keeps
its files' (:func:`_known_flagged`).

Observations: ``dirty`` (bool), ``files`` (the first :data:`SHOWN` such paths), ``count``
(how many in all), ``branch``, ``hidden`` (the hidden ones, with how).

git runs as a background reader should (:func:`_git`): the git directory and work tree given,
no file-system monitor, no untracked cache, without optional locks (``GIT_OPTIONAL_LOCKS=0``):
it does not write a refreshed index, so it never holds ``index.lock`` while the agent commits.
"Could not observe" is never a clean tree: git missing in a repository, failing or overrunning
the deadline raises, and the hook's fail policy decides.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

import time

from stoprule._util import oslite as os
from stoprule._util.native import content_key
from stoprule.agent.hook.event import HookEvent

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from stoprule._util.command import Running
    from stoprule.agent.hook.providers.context import Context

__all__ = ["GENERATED", "dirty_files", "discard_early", "git_dir", "provide", "repo_root", "start_status"]

SHOWN = 5
# the files ``stoprule init`` writes or merges into (relative to the repository root): the wiring
# table's ``generated_files()`` (stoprule.agent.hook.wiring, kept off the cold path; a test holds them equal)
GENERATED = (
    ".claude/settings.json", ".claude/settings.local.json", ".codex/hooks.json", ".gemini/settings.json",
    ".cursor/hooks.json", ".github/hooks/stoprule.json", ".mcp.json", ".codex/config.toml", ".cursor/mcp.json",
    ".github/mcp.json", "opencode.json", ".opencode/plugins/stoprule.js", ".agents/hooks.json",
    ".agents/mcp_config.json", ".claude/commands/blockers.md", ".gemini/commands/blockers.toml",
    ".agents/skills/blockers/SKILL.md",
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


def git_dir(root: str) -> str:
    """The repository's git directory (a linked worktree's ``.git`` file names it)."""
    dot = os.path.join(root, ".git")
    if os.path.isfile(dot):
        try:
            with open(dot, encoding="utf-8", errors="replace") as fh:
                first = fh.readline().strip()
        except OSError:
            return dot
        if first.startswith("gitdir:"):
            return os.path.normpath(os.path.join(root, first[7:].strip()))
    return dot


_STATUS = ["status", "--porcelain=v1", "-z", "--branch", "--untracked-files=all", "--ignored=matching",
           "--ignore-submodules=none"]  # fmt: skip
_FLAGGED = ["ls-files", "-v", "-z"]
# argv -> its command started before the providers ran (start_status), collected by _git
_EARLY: dict[tuple[str, ...], Running] = {}


def _argv(root: str, args: list[str]) -> list[str]:
    argv = ["git", f"--git-dir={git_dir(root)}", f"--work-tree={root}", "-c", "core.fsmonitor=false",
            "-c", "core.untrackedCache=false", "-c", "core.ignoreStat=false", *args]  # fmt: skip
    return argv


def start_status(workdir: str, session: dict[str, Any] | None = None) -> None:
    """Start the stop's ``git status`` now: it runs while the pack loads and the other providers
    read, and :func:`provide` collects it (the same command, its output read then). With a
    session-start baseline in ``session`` (the hook's session record) that records the flagged
    files, the listing that finds newly flagged ones (:func:`_flagged`) starts too, unless the
    index is unchanged since they were last listed (:func:`_known_flagged`). Nothing is
    started outside a repository; a git that cannot start is run (and reported) by :func:`provide`."""
    from stoprule._util.command import spawn

    root = repo_root(workdir)
    if root is None:
        return
    session = session or {}
    base = session.get("baseline")
    flagged = isinstance(base, dict) and base.get("root") == root and "flagged" in base
    flagged = flagged and _known_flagged(root, session, _index_stamp(root)) is None  # the index changed
    for args in (_STATUS, _FLAGGED) if flagged else (_STATUS,):
        argv = _argv(root, args)
        try:
            _EARLY[tuple(argv)] = spawn(argv, {**os.environ, "GIT_OPTIONAL_LOCKS": "0"})
        except OSError:
            return


def discard_early() -> None:
    """End what :func:`start_status` started and no provider collected (a stop that failed first)."""
    while _EARLY:
        _EARLY.popitem()[1].kill()


def _git(root: str, args: list[str], timeout: float, ok: tuple[int, ...] = (0,)) -> bytes:
    """``git ARGS`` on the repository at ``root`` as a background reader must run it: the git
    directory and work tree given (never the config's ``core.worktree``), no file-system monitor,
    no untracked cache, no ``ignoreStat``, submodules not ignored, no optional locks (it never
    writes a refreshed index while the agent commits). Raises FileNotFoundError (no git),
    CommandTimeout, OSError (git failed). The command :func:`start_status` started is collected."""
    from stoprule._util.command import spawn

    argv = _argv(root, args)
    running = _EARLY.pop(tuple(argv), None) or spawn(argv, {**os.environ, "GIT_OPTIONAL_LOCKS": "0"})
    code, out, err = running.collect(timeout)
    if code not in ok:
        raise OSError(f"git {args[0]} failed: {err.decode('utf-8', 'replace').strip()[:200]}")
    return out


def _status(
    root: str, project: str | None, timeout: float, blockers_file: str | None
) -> tuple[str | None, list[str], list[str]]:
    """``(branch, dirty paths, ignored paths)``: ignored files one by one, a folder an ignore
    pattern matches as itself (``node_modules/``, never its content)."""
    out = _git(root, _STATUS, timeout)
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
    ignored: list[str] = []
    it = iter(entries)
    for entry in it:
        if len(entry) < 4:
            continue
        status, path = entry[:2], entry[3:]
        if "R" in status or "C" in status:
            next(it, None)  # -z: the rename's source follows as its own entry
        if _own(path, skip, extra):
            continue
        (ignored if status == "!!" else paths).append(path)
    return branch, paths, ignored


def dirty_files(
    root: str, project: str | None, timeout: float, blockers_file: str | None = None
) -> tuple[str | None, list[str]]:
    """``(branch, paths)``: the dirty paths of the work tree at ``root`` (relative, ``/``-separated),
    stoprule's own files left out (``blockers_file``: the blockers view, relative to the project,
    wherever the config puts it). Raises FileNotFoundError (no git), CommandTimeout, OSError."""
    branch, paths, _ = _status(root, project, timeout, blockers_file)
    return branch, paths


def _flagged(root: str, timeout: float) -> list[str]:
    """Files marked assume-unchanged or skip-worktree (git then stops looking at them)."""
    out = _git(root, _FLAGGED, timeout).decode("utf-8", "replace")
    return [e[2:] for e in out.split("\0") if len(e) > 2 and (e[0].islower() or e[0] == "S")]


def _index_stamp(root: str) -> list[Any] | None:
    """The stamp of the repository's index (:func:`~stoprule._util.files.file_stamp`), which holds
    the assume-unchanged and skip-worktree flags; None when it cannot vouch for them: no index,
    another index named by ``$GIT_INDEX_FILE``, or one written within ``RACY_NS`` of now."""
    import time

    from stoprule._util.files import RACY_NS, file_stamp, racy

    if os.environ.get("GIT_INDEX_FILE"):
        return None
    try:
        stamp = file_stamp("index", os.path.join(git_dir(root), "index"))
    except OSError:
        return None
    return None if racy([stamp], time.time_ns(), RACY_NS) else stamp


def _known_flagged(root: str, session: dict[str, Any], stamp: list[Any] | None) -> list[str] | None:
    """The flagged files as last listed (by the session's start, in its baseline, or by a stop),
    when the index is the very file they were listed from (``stamp``, its stamp now, the one kept
    with them: any write of the index, the flags' only home, changes its inode or ctime); None:
    they must be listed again."""
    if stamp is None:
        return None
    base = session.get("baseline")
    seen = [session.get("flagged_at")]
    if isinstance(base, dict):
        seen.append({"root": base.get("root"), "stamp": base.get("index"), "files": base.get("flagged")})
    for listed in seen:
        if isinstance(listed, dict) and listed.get("root") == root and listed.get("stamp") == stamp:
            files = listed.get("files")
            if isinstance(files, list) and all(isinstance(f, str) for f in files):
                return files
    return None


def _flagged_now(root: str, session: dict[str, Any], timeout: float) -> list[str]:
    """The flagged files now: as last listed when the index has not changed since
    (:func:`_known_flagged`), else listed (:func:`_flagged`) and kept with the index's stamp."""
    stamp = _index_stamp(root)  # before listing: a change meanwhile shows at the next stop
    known = _known_flagged(root, session, stamp)
    if known is not None:
        return known
    files = _flagged(root, timeout)
    if stamp is not None:
        session["flagged_at"] = {"root": root, "stamp": stamp, "files": files}
    return files


def _stashes(root: str) -> list[str]:
    """The stash entries' commits, from the stash's reflog (read as a file: no git run)."""
    try:
        with open(os.path.join(git_dir(root), "logs", "refs", "stash"), encoding="utf-8", errors="replace") as fh:
            return [line.split(" ", 2)[1] for line in fh if line.count(" ") >= 2]
    except OSError:
        return []


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
    return content_key(data)


def _blockers_file(blockers: dict[str, Any]) -> str | None:
    found = blockers.get("file")
    return found if isinstance(found, str) else None


def _hidden(
    root: str, base: dict[str, Any], paths: list[str], ignored: list[str], flagged: list[str], timeout: float
) -> list[tuple[str, str]]:
    """What the session hid from ``git status`` since its start: ``(path, how)``; ``flagged``: the
    files flagged assume-unchanged or skip-worktree now."""
    found: list[tuple[str, str]] = []
    before_flagged = set(base.get("flagged") or [])
    found += [(p, "flagged assume-unchanged or skip-worktree") for p in flagged if p not in before_flagged]
    before_stashes = set(base.get("stashes") or [])
    for commit in _stashes(root):
        if commit not in before_stashes:
            from stoprule.agent.hook.providers.git_hidden import stashed

            found += [(p, "stashed") for p in stashed(root, commit, timeout, _git)]
    before_ignored = set(base.get("ignored") or [])
    new = [p for p in ignored if p not in before_ignored]
    if new:
        from stoprule.agent.hook.providers.git_hidden import sources_of

        sources = sources_of(root, new, timeout, _git)
        recorded = base.get("ignore_sources")
        was: dict[str, str] = recorded if isinstance(recorded, dict) else {}
        for p in new:
            src = sources.get(p)
            if src is None:
                continue
            full = src if os.path.isabs(src) else os.path.normpath(os.path.join(root, src))
            rel = os.path.relpath(full, root).replace(os.sep, "/")
            if full in was:  # info/exclude, the global excludes: changed since the start?
                changed = was[full] != _hash("", full)
            elif not rel.startswith("../") and os.path.basename(full) == ".gitignore":
                changed = rel in paths or rel in ignored  # added or edited (a committed one as it was: not)
            else:  # an ignore file the session pointed git at
                changed = True
            if changed:
                found.append((p, f"newly ignored ({src})"))
    return found


def _has_session_start(harness: str) -> bool:
    """Whether ``init`` wires a session-start hook for the harness (its adapter's ``SESSION_START``)."""
    from stoprule.agent.hook.adapters import ADAPTERS, adapter

    return harness not in ADAPTERS or bool(getattr(adapter(harness), "SESSION_START", True))


def provide(event: HookEvent, ctx: Context) -> tuple[dict[str, Any], list[str]]:
    """Raises (the hook's fail path: "could not observe" is never a clean tree) when git is
    missing in a repository, fails, or overruns the provider's deadline."""
    root = repo_root(ctx.workdir)
    if root is None:
        return {}, ["not in a git repository"]
    timeout = max(0.05, ctx.deadline - time.monotonic())
    try:
        branch, paths, ignored = _status(root, ctx.project, timeout, _blockers_file(ctx.blockers))
    except FileNotFoundError:
        raise OSError(f"git is not installed: cannot observe the work tree at {root}") from None
    obs: dict[str, Any] = {}
    notes: list[str] = []
    if branch:
        obs["branch"] = branch
    base = ctx.session.get("baseline")
    base = base if isinstance(base, dict) and base.get("root") == root else None
    before = base.get("files") if base is not None else None
    if isinstance(before, dict):
        mine = [p for p in paths if p not in before or before[p] != _hash(root, p)]
        if len(mine) < len(paths):
            notes.append(f"{len(paths) - len(mine)} file(s) dirty since before the session: not counted")
    elif not _has_session_start(event.harness) and "guard" not in ctx.session:
        # no session-start hook (Cursor): the files dirty at the session's first stop are the
        # baseline, so the user's work in progress is never called this session's
        ctx.session["baseline"] = {"root": root, "files": {p: _hash(root, p) for p in paths}}
        mine = []
        if paths:
            notes.append(
                f"{len(paths)} file(s) dirty at the session's first stop, with no session-start hook: "
                "taken as the baseline, not counted"
            )
    else:
        mine = paths
        notes.append("no baseline recorded at session start: every dirty file counts")
    if base is not None and "flagged" in base:
        timeout = max(0.05, ctx.deadline - time.monotonic())
        hidden = _hidden(root, base, paths, ignored, _flagged_now(root, ctx.session, timeout), timeout)
        for path, _ in hidden:
            if path not in mine:
                mine.append(path)
        if hidden:
            shown = ", ".join(f"{p} ({how})" for p, how in hidden[:SHOWN])
            notes.append(f"{len(hidden)} file(s) hidden from git status this session count as its work: {shown}")
            obs["hidden"] = [f"{p} ({how})" for p, how in hidden[:SHOWN]]
    obs["dirty"] = bool(mine)
    obs["files"] = mine[:SHOWN]
    obs["count"] = len(mine)
    return obs, notes
