"""``dumps`` with the standard library's C JSON encoder alone (``json`` imports ``re`` and
``enum``: see :mod:`stoprule._util.jsonin`). The same text as ``json.dumps`` with the same
arguments; ``indent`` (or an interpreter without the accelerator) goes through ``json``.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["dumps", "encoder"]


def _not_serializable(o: Any) -> Any:
    raise TypeError(f"Object of type {o.__class__.__name__} is not JSON serializable")


def dumps(
    obj: Any,
    *,
    ensure_ascii: bool = True,
    sort_keys: bool = False,
    separators: tuple[str, str] | None = None,
    default: Callable[[Any], Any] | None = None,
    allow_nan: bool = True,
    check_circular: bool = True,
    indent: int | None = None,
) -> str:
    """``obj`` as JSON text, as ``json.dumps(obj, ...)`` writes it."""
    try:
        if indent is not None:
            raise ImportError("indented: json's pure-Python encoder writes it")
        from _json import encode_basestring, encode_basestring_ascii, make_encoder
    except ImportError:  # an interpreter without the accelerator, or an indented text
        import json

        return json.dumps(
            obj,
            ensure_ascii=ensure_ascii,
            sort_keys=sort_keys,
            separators=separators,
            default=default,
            allow_nan=allow_nan,
            check_circular=check_circular,
            indent=indent,
        )
    item_sep, key_sep = separators or (", ", ": ")
    encode = make_encoder(  # made per call: its markers (the circular-reference check) start empty
        {} if check_circular else None,
        default or _not_serializable,
        encode_basestring_ascii if ensure_ascii else encode_basestring,
        None,
        key_sep,
        item_sep,
        sort_keys,
        False,
        allow_nan,
    )
    return "".join(encode(obj, 0))


def encoder(*, ensure_ascii: bool = True, separators: tuple[str, str] | None = None) -> Callable[[Any], str]:
    """A reusable ``dumps`` with these arguments and no circular-reference check (for hot loops:
    a value that refers to itself recurses until ``RecursionError``)."""
    try:
        from _json import encode_basestring, encode_basestring_ascii, make_encoder
    except ImportError:  # an interpreter without the accelerator
        return lambda obj: dumps(obj, ensure_ascii=ensure_ascii, separators=separators, check_circular=False)
    item_sep, key_sep = separators or (", ", ": ")
    encode = make_encoder(
        None,
        _not_serializable,
        encode_basestring_ascii if ensure_ascii else encode_basestring,
        None,
        key_sep,
        item_sep,
        False,
        False,
        True,
    )
    return lambda obj: "".join(encode(obj, 0))
