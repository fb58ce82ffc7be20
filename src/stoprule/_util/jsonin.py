"""``loads`` with the standard library's C JSON scanner alone: the ``json`` package imports ``re``
(and ``enum`` with it), a third of a bare interpreter's start, which the guard (run before every
tool call) does not pay. Same results as ``json.loads`` for any text; its errors are
``ValueError`` (a malformed text imports ``json`` for the error's class, as ``json`` would).

On the cold path when the guard runs, before every tool call (tools/import_graph.py,
COLD_PATH_WHEN): its imports stay few, light and lazy.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["loads"]

_WHITESPACE = " \t\n\r"


class _Context:
    """What the C scanner reads from a ``json.JSONDecoder``."""

    __slots__ = ("memo", "object_hook", "object_pairs_hook", "parse_constant", "parse_float", "parse_int", "strict")

    def __init__(self) -> None:
        self.strict = True
        self.object_hook = None
        self.object_pairs_hook = None
        self.parse_float = float
        self.parse_int = int
        self.parse_constant = float  # NaN, Infinity, -Infinity, as json.loads reads them
        self.memo: dict[str, str] = {}


def loads(text: str | bytes) -> Any:
    """The JSON value of ``text`` (bytes: UTF-8, a BOM allowed)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8-sig")
    try:
        from _json import make_scanner
    except ImportError:  # an interpreter without the accelerator
        import json

        return json.loads(text)
    start = len(text) - len(text.lstrip(_WHITESPACE))
    try:
        value, end = make_scanner(_Context())(text, start)  # type: ignore[arg-type]
    except StopIteration:
        raise ValueError(f"not a JSON value at character {start}") from None
    if text[end:].strip(_WHITESPACE):
        raise ValueError(f"extra data after the JSON value at character {end}")
    return value
