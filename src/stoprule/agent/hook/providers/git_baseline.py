"""The ``git`` provider's baseline, recorded at session start: the dirty files with content
hashes and git's exclusion state (what a stop compares with it:
:mod:`~stoprule.agent.hook.providers.git_provider`).

On the cold path when a session starts (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

from stoprule._util import oslite as os
from stoprule.agent.hook.providers.git_provider import (
    _blockers_file,
    _flagged,
    _git,
    _hash,
    _index_stamp,
    _stashes,
    _status,
    git_dir,
    repo_root,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["MAX_IGNORED", "baseline"]


def _ignore_sources(root: str, timeout: float) -> dict[str, str]:
    """The ignore files outside the tree's own ``.gitignore`` files, with content hashes: the
    repository's ``info/exclude``, the user's global excludes (default place) and the one
    ``core.excludesFile`` names."""
    found = [os.path.join(git_dir(root), "info", "exclude")]
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    found.append(os.path.join(xdg, "git", "ignore"))
    named = _git(root, ["config", "--path", "--get", "core.excludesFile"], timeout, ok=(0, 1)).decode(
        "utf-8", "replace"
    )
    if named.strip():
        found.append(os.path.normpath(os.path.join(root, os.path.expanduser(named.strip()))))
    return {p: _hash("", p) for p in found}


MAX_IGNORED = 5000  # ignored entries kept in the baseline


def baseline(
    workdir: str, project: str | None, blockers: dict[str, Any], timeout: float = 3.0
) -> dict[str, Any] | None:
    """What is dirty now, with content hashes, and git's exclusion state (ignored entries, the
    files flagged assume-unchanged or skip-worktree, the stash entries, the ignore files
    outside the tree), recorded at session start; None outside git. ``blockers``: the
    ``blockers`` section (its rendered view is stoprule's, never dirty work)."""
    root = repo_root(workdir)
    if root is None:
        return None
    _, paths, ignored = _status(root, project, timeout, _blockers_file(blockers))
    return {
        "root": root,
        "files": {p: _hash(root, p) for p in paths},
        "ignored": ignored[:MAX_IGNORED],
        "index": _index_stamp(root),  # before the listing: the stamp it was listed from
        "flagged": _flagged(root, timeout),
        "stashes": _stashes(root),
        "ignore_sources": _ignore_sources(root, timeout),
    }
