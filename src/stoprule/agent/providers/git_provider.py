"""``git``: uncommitted work and the branch of the working tree (``git status``, bounded
by the provider's deadline; skipped at once outside a repository). Paths under the
project's ``.stoprule/`` (hook state, log, ledger) do not count as work.

``git status`` runs as a background reader should, without optional locks
(``GIT_OPTIONAL_LOCKS=0``, which gits older than 2.15 ignore): it does not write a refreshed
index, so it never holds ``index.lock`` while the agent commits.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

import os
import time

from stoprule.agent.event import HookEvent

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["provide"]


def _repo_root(start: str) -> str | None:
    cur = os.path.abspath(start)
    while True:
        if os.path.exists(os.path.join(cur, ".git")):
            return cur
        parent = os.path.dirname(cur)
        if parent == cur:
            return None
        cur = parent


def provide(event: HookEvent, ctx: Any) -> tuple[dict[str, Any], list[str]]:
    root = _repo_root(ctx.workdir)
    if root is None:
        return {}, ["not in a git repository"]
    from stoprule._util.command import CommandTimeout, capture

    timeout = max(0.05, ctx.deadline - time.monotonic())
    try:
        code, out, err = capture(
            ["git", "-C", root, "status", "--porcelain=v1", "--branch", "--untracked-files=normal"],
            timeout,
            {**os.environ, "GIT_OPTIONAL_LOCKS": "0"},
        )
    except FileNotFoundError:
        return {}, ["git is not installed"]
    except CommandTimeout:
        return {}, [f"git status took over {timeout * 1000:.0f} ms: skipped"]
    if code != 0:
        return {}, [f"git status failed: {err.decode('utf-8', 'replace').strip()[:200]}"]
    lines = out.decode("utf-8", "replace").splitlines()
    obs: dict[str, Any] = {}
    if lines and lines[0].startswith("## "):
        head = lines.pop(0)[3:].removeprefix("No commits yet on ").removeprefix("Initial commit on ")
        branch = head.split("...")[0].split(" ")[0]
        if branch and not branch.startswith("HEAD"):
            obs["branch"] = branch
    skip = ""
    if ctx.project is not None:
        rel = os.path.relpath(ctx.project, root)
        skip = "" if rel.startswith("..") else rel.replace(os.sep, "/").rstrip("/") + "/"
    changed = [ln[3:] for ln in lines if ln.strip()]
    obs["dirty"] = any(not (skip and path.strip('"').startswith(skip)) for path in changed)
    return obs, []
