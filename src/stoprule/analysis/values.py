"""Concrete values for the abstraction: candidates per field, placeholders, fact assembly.

Every abstract value is represented by a concrete JSON value (a *witness*), so the
reference interpreter decides every atom on it and every example fact is real.
"""

from __future__ import annotations

import itertools
from fractions import Fraction
from typing import Any

from stoprule.analysis.numeric import regions
from stoprule.analysis.strings import string_classes
from stoprule.diagnostics import AnalysisLimit, FactError
from stoprule.facts.schema import MISSING, FactField, FactSchema
from stoprule.language import conditions as C
from stoprule.language.operators import OPERATORS
from stoprule.limits import SAFE_INT

__all__ = [
    "MAX_ITEMS",
    "Reads",
    "field_at",
    "fill_required",
    "number_value",
    "placeholder",
    "scalar_candidates",
    "set_path",
    "subtree_candidates",
    "valid_item",
]

MAX_ITEMS = 50000
Path = tuple[str, ...]


class Reads:
    """What conditions read at one field: literals, globs, numeric bounds."""

    def __init__(self) -> None:
        self.literals: set[Any] = set()
        self.globs: set[str] = set()
        self.bounds: set[Fraction] = set()

    def add_atom(self, a: C.Atom) -> None:
        literals, globs = OPERATORS[a.op].reads(a.arg)
        self.literals.update(literals)
        self.globs.update(globs)


def field_at(root: FactField, path: Path) -> FactField:
    cur = root
    for name in path:
        cur = cur.fields[name]
    return cur


def number_value(x: Fraction) -> int | float:
    """An int where exact and in the range facts allow (±``SAFE_INT``), else a float."""
    return int(x) if x.denominator == 1 and -SAFE_INT <= x <= SAFE_INT else float(x)


def placeholder(f: FactField) -> Any:
    """A valid value for a field no rule reads (needed because it is required)."""
    t = f.type
    if t == "string":
        return "example"
    if t == "enum":
        return f.values[0]
    if t in ("int", "number"):
        return 0
    if t == "bool":
        return False
    if t == "list":
        return []
    return fill_required(f, {})


def fill_required(f: FactField, obj: dict[str, Any]) -> dict[str, Any]:
    """Fill required (and ``required_if``-triggered) fields of ``obj`` that are missing, recursively."""
    for name, child in f.fields.items():
        if name not in obj and child.required:
            obj[name] = placeholder(child)
        v = obj.get(name)
        if isinstance(v, dict) and child.type == "object":
            fill_required(child, v)
    for name, child in f.fields.items():
        if child.required_if:
            flag = obj.get(child.required_if, MISSING)
            if flag is MISSING:
                sib = f.fields.get(child.required_if)
                flag = sib.default if sib is not None and sib.has_default else None
            if flag is True and obj.get(name) in (None, ""):
                obj[name] = placeholder(child)
    return obj


def set_path(fact: dict[str, Any], path: Path, value: Any) -> None:
    """Write ``value`` at ``path``, creating parent objects; MISSING writes nothing."""
    if value is MISSING:
        return
    cur = fact
    for name in path[:-1]:
        nxt = cur.get(name)
        if not isinstance(nxt, dict):
            nxt = cur[name] = {}
        cur = nxt
    if isinstance(value, dict):
        if isinstance(cur.get(path[-1]), dict):
            return  # an object already created by a child
        value = dict(value)
    cur[path[-1]] = value


def scalar_candidates(f: FactField, reads: Reads | None, k: int = 1) -> list[Any]:
    """Values of a scalar field that every distinction of ``reads`` needs (no absent/null)."""
    reads = reads or Reads()
    t = f.type
    if t == "bool":
        return [False, True]
    if t == "enum":
        return list(f.values)
    if t == "string":
        lits = {x for x in reads.literals if isinstance(x, str)}
        return [w for _, ws in string_classes(lits, reads.globs, k) for w in ws]
    if t in ("int", "number"):
        prims = [(1, 0, Fraction(c)) for c in sorted({Fraction(x) for x in reads.literals if not isinstance(x, bool)})]
        return [number_value(w[1]) for _, w in regions(2, prims, {1} if t == "int" else None)]
    raise AssertionError(t)


def subtree_candidates(f: FactField, reads: dict[Path, Reads], present: set[Path], prefix: Path = ()) -> list[Any]:
    """Concrete values of a field (inside a list item) covering every distinction the reads make.

    ``present``: paths read below the item (the item itself is ``()``). Objects are
    enumerated as the product of the children read; unread children are left out.
    """
    out: list[Any] = []
    if f.nullable:
        out.append(None)
    if f.type == "object":
        names = [n for n in f.fields if any(p[: len(prefix) + 1] == (*prefix, n) for p in present)]
        per_child = []
        for n in names:
            child = f.fields[n]
            opts = subtree_candidates(child, reads, present, (*prefix, n))
            if not child.required:
                opts = [MISSING, *opts]
            per_child.append(opts)
        total = 1
        for opts in per_child:
            total *= len(opts)
        if total > MAX_ITEMS:
            raise AnalysisLimit(f"list items have more than {MAX_ITEMS} distinguishable shapes")
        for combo in itertools.product(*per_child):
            out.append({n: v for n, v in zip(names, combo, strict=True) if v is not MISSING})
        return out
    if f.type == "list":
        return [*out, []]
    return out + scalar_candidates(f, reads.get(prefix))


_ITEM_SCHEMAS: dict[int, tuple[FactField, FactSchema]] = {}


def _item_schema(list_field: FactField) -> FactSchema:
    """A schema ``{x: list_field}``, made once per list field (a schema generates its validator's
    code on first use: far dearer than validating one item). Holds the field, so its id stays its own."""
    hit = _ITEM_SCHEMAS.get(id(list_field))
    if hit is None:
        if len(_ITEM_SCHEMAS) >= 256:
            _ITEM_SCHEMAS.clear()
        schema = FactSchema(FactField("", "object", fields={"x": list_field}))
        hit = _ITEM_SCHEMAS[id(list_field)] = (list_field, schema)
    return hit[1]


def valid_item(list_field: FactField, value: Any) -> tuple[Any, Any] | None:
    """``(raw, normalised)`` for a valid element of ``list_field`` (required fields filled), else None."""
    item = list_field.items
    assert item is not None
    if isinstance(value, dict) and item.type == "object":
        value = fill_required(item, dict(value))
    wrapper = _item_schema(list_field)
    try:
        return value, wrapper.validate({"x": [value]})["x"][0]
    except FactError:
        return None
