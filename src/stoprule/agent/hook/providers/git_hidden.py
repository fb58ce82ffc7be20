"""What a session hid from ``git status``, read only when a stop finds something new: the files
of a new stash entry, the ignore file behind each newly ignored path
(:mod:`~stoprule.agent.hook.providers.git_provider` counts them as the session's work). Each is
given the provider's git runner (``_git``) by name, and imports no provider.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    # the provider's ``_git(root, args, timeout, ok=(0,)) -> bytes``
    Git = Callable[..., bytes]

__all__ = ["sources_of", "stashed"]


def stashed(root: str, commit: str, timeout: float, _git: Git) -> list[str]:
    """The files a stash entry took away (tracked changes, and the untracked ones it holds)."""
    names = _git(root, ["diff", "--name-only", "-z", f"{commit}^1", commit], timeout).decode("utf-8", "replace")
    found = [n for n in names.split("\0") if n]
    try:
        extra = _git(root, ["ls-tree", "-r", "--name-only", "-z", f"{commit}^3"], timeout)
        found += [n for n in extra.decode("utf-8", "replace").split("\0") if n]
    except OSError:  # no untracked part
        pass
    return found


def sources_of(root: str, paths: list[str], timeout: float, _git: Git) -> dict[str, str]:
    """path -> the ignore file whose pattern ignores it (``git check-ignore -v``)."""
    out = _git(root, ["check-ignore", "-v", "--no-index", "--", *paths[:500]], timeout, ok=(0, 1))
    found: dict[str, str] = {}
    for line in out.decode("utf-8", "replace").splitlines():
        m = re.match(r"^(.*?):\d+:.*\t(.*)$", line)
        if m is not None:
            path = m.group(2)
            if path.startswith('"') and path.endswith('"'):  # quoted (unusual characters)
                path = (
                    path[1:-1]
                    .encode("latin-1", "backslashreplace")
                    .decode("unicode_escape")
                    .encode("latin-1")
                    .decode("utf-8", "replace")
                )
            found[path] = m.group(1)
    return found
