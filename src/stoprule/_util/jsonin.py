"""``loads`` with the standard library's C JSON scanner alone: the ``json`` package imports ``re``
(and ``enum`` with it), a third of a bare interpreter's start, which the stop hook and the guard
(run before every tool call) do not pay. Same results as ``json.loads`` for any text; its errors
are ``ValueError`` (``json.loads`` raises ``json.JSONDecodeError``, a ``ValueError``, with the
position: a caller that reports it uses ``json``).

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["loads"]

_WHITESPACE = " \t\n\r"


class _Context:
    """What the C scanner reads from a ``json.JSONDecoder``."""

    __slots__ = ("memo", "object_hook", "object_pairs_hook", "parse_constant", "parse_float", "parse_int", "strict")

    def __init__(self, parse_float: Callable[[str], Any], parse_constant: Callable[[str], Any]) -> None:
        self.strict = True
        self.object_hook = None
        self.object_pairs_hook = None
        self.parse_float = parse_float
        self.parse_int = int
        self.parse_constant = parse_constant  # NaN, Infinity, -Infinity (json.loads: float)
        self.memo: dict[str, str] = {}


def loads(
    text: str | bytes,
    *,
    parse_float: Callable[[str], Any] = float,
    parse_constant: Callable[[str], Any] = float,
) -> Any:
    """The JSON value of ``text`` (bytes: UTF-8, a BOM allowed, as ``json.loads`` reads them)."""
    if isinstance(text, (bytes, bytearray)):
        if text[:1] == b"\x00" or text[1:2] == b"\x00" or text[:2] in (b"\xff\xfe", b"\xfe\xff"):
            import json  # UTF-16 or UTF-32: json detects which

            return json.loads(text, parse_float=parse_float, parse_constant=parse_constant)
        text = text.decode("utf-8-sig" if text[:3] == b"\xef\xbb\xbf" else "utf-8", "surrogatepass")
    elif text[:1] == "\ufeff":
        raise ValueError("unexpected UTF-8 BOM (decode using utf-8-sig)")
    try:
        from _json import make_scanner
    except ImportError:  # an interpreter without the accelerator
        import json

        return json.loads(text, parse_float=parse_float, parse_constant=parse_constant)
    start = len(text) - len(text.lstrip(_WHITESPACE))
    try:
        value, end = make_scanner(_Context(parse_float, parse_constant))(text, start)  # type: ignore[arg-type]
    except StopIteration:
        raise ValueError(f"not a JSON value at character {start}") from None
    if text[end:].strip(_WHITESPACE):
        raise ValueError(f"extra data after the JSON value at character {end}")
    return value
