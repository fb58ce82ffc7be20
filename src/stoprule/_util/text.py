"""Strings safe to store: what every write path applies before a string reaches disk.

``clean(text)`` drops NUL and the other C0/C1 control characters (tab, newline and
carriage return are kept) and replaces each lone surrogate with U+FFFD, so the result
always encodes as UTF-8 and passes the fact schema's string check. ``clean_obj`` does
the same for every string (keys included) of a JSON-like value, bounded in depth.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["MAX_DEPTH", "clean", "clean_obj", "is_clean"]

MAX_DEPTH = 64  # nesting kept by clean_obj; deeper values become a marker string
_CONTROL = "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]"
_SURROGATE = "[\ud800-\udfff]"
# what is kept as it is, tested without a regex (most text: no regex is compiled for it)
_PRINTABLE_ASCII = frozenset(map(chr, range(0x20, 0x7F))) | {"\t", "\n", "\r"}
_CONTROLS_GONE = dict.fromkeys([*range(0x09), 0x0B, 0x0C, *range(0x0E, 0x20), *range(0x7F, 0xA0)])  # as _CONTROL


def is_clean(text: str) -> bool:
    """Whether ``clean(text) == text``."""
    if text.isascii():
        return not set(text) - _PRINTABLE_ASCII if not text.isprintable() else True
    if text.isprintable():  # no control character (Cc), no surrogate (Cs)
        return True
    try:
        text.encode("utf-8")  # a lone surrogate cannot be encoded
    except UnicodeEncodeError:
        return False
    return len(text.translate(_CONTROLS_GONE)) == len(text)


def clean(text: str) -> str:
    """``text`` without control characters (but tab, newline, CR) and lone surrogates (U+FFFD)."""
    if is_clean(text):
        return text
    import re

    return re.sub(_SURROGATE, "\ufffd", re.sub(_CONTROL, "", text))


def clean_obj(value: Any, depth: int = 0) -> Any:
    """A copy of a JSON-like value with every string cleaned (tuples become lists)."""
    if isinstance(value, str):
        return clean(value)
    if depth >= MAX_DEPTH and isinstance(value, (dict, list, tuple)):
        return "[too deeply nested]"
    if isinstance(value, dict):
        return {clean(k) if isinstance(k, str) else k: clean_obj(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean_obj(v, depth + 1) for v in value]
    return value
