"""The engine's JSON for a value holding a float Python writes with a bare exponent (``1e-09``,
which the engine's parser refuses): :func:`stoprule.engine.durable.encode`'s slow path, taken
only for such a value. It is given the str and float writers by name, and imports no engine.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["slow"]


def slow(v: Any, out: list[str], string: Callable[[str], str], number: Callable[[float], str]) -> None:
    """``v`` as JSON text appended to ``out``, each str written by ``string`` and each float by
    ``number`` (:mod:`stoprule.engine.durable`'s: a fraction before any exponent)."""
    t = type(v)
    if t is str:
        out.append(string(v))
    elif t is float:
        if v != v or v in (float("inf"), float("-inf")):
            raise ValueError("the engine cannot hold a non-finite number")
        out.append(number(v))
    elif v is True:
        out.append("true")
    elif v is False:
        out.append("false")
    elif v is None:
        out.append("null")
    elif t is int:
        out.append(str(v))
    elif t is dict:
        out.append("{")
        for i, (k, x) in enumerate(v.items()):
            if i:
                out.append(",")
            out.append(string(str(k)))
            out.append(":")
            slow(x, out, string, number)
        out.append("}")
    elif t in (list, tuple):
        out.append("[")
        for i, x in enumerate(v):
            if i:
                out.append(",")
            slow(x, out, string, number)
        out.append("]")
    else:
        raise TypeError(f"cannot send a {t.__name__} to the engine")
