"""How each projected slot is written for the engine (read by the generated projector in
:mod:`stoprule.engine.evaluator`; a backend plugged in behind its ``Runner`` seam writes the
same text for the engine).

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

from stoprule.engine.compiled import Slot
from stoprule.engine.durable import _string
from stoprule.facts.schema import FactField

__all__ = ["ANY", "BOOL", "ENUM", "INT", "MARKER", "NUMBER", "STRING", "TEST", "TESTS", "field_of", "slot_encoding"]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

# encodings
MARKER, BOOL, ENUM, STRING, INT, NUMBER, ANY, TEST = range(8)
# the functions of stoprule.language.patterns a pattern slot may name
TESTS = frozenset({"glob_test", "starts_with_test", "ends_with_test"})
_BY_TYPE = {"bool": BOOL, "enum": ENUM, "string": STRING, "int": INT, "number": NUMBER}


def field_of(scope: FactField | None, path: tuple[str, ...]) -> FactField | None:
    """The field at ``path`` (object steps) below ``scope``, if the schema has one."""
    for step in path:
        if scope is None or scope.type != "object":
            return None
        scope = scope.fields.get(step)
    return scope


def _run_test(test: Callable[[Any, Any], bool], arg: Any, v: str) -> bool:
    return test(v, arg)


def slot_encoding(s: Slot, scope: FactField | None, prefix: str) -> tuple[int, Any]:
    """``(encoding, extra)`` for slot ``s`` read below ``scope``, written after ``prefix``
    (``,"KEY":``): an enum's extra maps each value to its whole item, a test's is the
    function deciding it (the slot holds its result, and is left out for a value that is not
    a string)."""
    if s.test is not None:
        fn, arg = s.test
        if fn not in TESTS:  # a name read from a cache: only a pattern test, never any other attribute
            raise ValueError(f"not a pattern test: {fn!r}")
        from functools import partial

        from stoprule.language import patterns  # (only a pack with pattern slots needs it)

        return TEST, partial(_run_test, getattr(patterns, fn), arg)
    if s.marker:
        return MARKER, None
    field = field_of(scope, s.path)
    enc = ANY if field is None else _BY_TYPE.get(field.type, ANY)
    if enc == ENUM:
        assert field is not None
        return ENUM, {x: prefix + _string(x) for x in field.values if type(x) is str}
    return enc, None
