"""Did-you-mean hints for an unknown name in an error message: the known name it most likely
misspells, or the known names. Only errors need them (off the stop's path).
"""

from __future__ import annotations

import difflib

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["closest", "unknown_hint"]


def closest(name: str, known: Iterable[str], cutoff: float = 0.6) -> str | None:
    """The known name ``name`` most likely misspells (case-insensitive), or None."""
    names = {k.lower(): k for k in known if isinstance(k, str)}
    best = difflib.get_close_matches(str(name).lower(), list(names), n=1, cutoff=cutoff)
    return names[best[0]] if best else None


def unknown_hint(name: str, known: Iterable[str], *, listed: int = 16) -> str:
    """What follows ``unknown X 'name'``: `` (did you mean 'y'?)`` when one known name is close,
    else the known names (the first ``listed`` of them), or `` (none declared)``."""
    names = sorted(known)
    best = closest(name, names)
    if best is not None:
        return f" (did you mean {best!r}?)"
    if not names:
        return " (none declared)"
    more = f", and {len(names) - listed} more" if len(names) > listed else ""
    return f" (known: {', '.join(names[:listed])}{more})"
