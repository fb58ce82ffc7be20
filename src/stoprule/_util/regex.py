"""Regular expressions compiled on first use: a short-lived process (the stop hook) compiles only
the ones its input needs (each compilation costs a start about a tenth of a millisecond).

    WORD = lazy(r"\\w+")      # a regex to its users: WORD.search(text), WORD.sub(...), ...

A method looked up (``search``, ``sub``, ``finditer`` ...) is the compiled regex's own, kept on
the instance: later lookups find it directly.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, AnyStr

__all__ = ["lazy"]


class _Lazy:
    def __init__(self, pattern: Any, flags: int = 0) -> None:
        self.pattern, self.flags = pattern, flags

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # copy, pickle and the like: not a regex method
            raise AttributeError(name)
        method = getattr(re.compile(self.pattern, self.flags), name)
        setattr(self, name, method)
        return method


def lazy(pattern: AnyStr, flags: int = 0) -> re.Pattern[AnyStr]:
    """``pattern`` as a regex compiled on first use."""
    made: re.Pattern[AnyStr] = _Lazy(pattern, flags)  # type: ignore[assignment]
    return made  # a regex to its users: each method is the compiled regex's own once looked up
