"""Evaluate a type-checked condition tree directly over a validated fact.

Not used to decide verdicts (the engine does that): this is the reference
semantics that analysis tools (explain, coverage, audit) reason with, and that
tests hold the engine's lowering against. Semantics, as lowered:

- comparisons (eq ne lt lte gt gte in not_in glob) are false when the field is
  absent or null, or when a compared field is; ``not`` is plain negation;
- ``exists``: present and not null; ``null``: present and null; ``absent``: not given;
- ``empty``: no elements (an absent or null list counts as empty);
- ``some``: at least one element matches; ``every``: no element fails (true when empty).

Each operator's own semantics is its ``test`` in :mod:`stoprule.language.operators`.
"""

from __future__ import annotations

from typing import Any

from stoprule.facts.schema import MISSING
from stoprule.language import conditions as C
from stoprule.language.operators import OPERATORS

__all__ = ["AtomResult", "atoms_of", "evaluate", "get_path"]

AtomResult = tuple[C.Atom, bool]


def get_path(obj: Any, path: tuple[str, ...]) -> Any:
    """The value at ``path`` through nested objects, or MISSING."""
    cur = obj
    for p in path:
        if type(cur) is not dict:
            return MISSING
        cur = cur.get(p, MISSING)
    return cur


def _atom(a: C.Atom, fact: dict[str, Any], scope: Any) -> bool:
    v = get_path(scope, a.path) if a.path else scope
    op = OPERATORS[a.op]
    if op.presence:
        return op.test(v, a.arg)
    if v is MISSING or v is None:
        return False
    arg = a.arg
    if a.ref_path is not None:
        r = get_path(fact, a.ref_path)
        if r is MISSING or r is None:
            return False
        off = a.arg.get("offset", 0)
        arg = r + off if off else r
    return op.test(v, arg)


def evaluate(
    cond: C.Cond,
    fact: dict[str, Any],
    *,
    trace: list[AtomResult] | None = None,
) -> bool:
    """Truth of ``cond`` for the validated ``fact``; ``trace`` collects every atom evaluated."""

    def ev(c: C.Cond, scope: Any) -> bool:
        if isinstance(c, C.Const):
            return c.value
        if isinstance(c, C.Not):
            return not ev(c.item, scope)
        if isinstance(c, C.AllOf):
            return all([ev(i, scope) for i in c.items])  # no short-circuit: full trace
        if isinstance(c, C.AnyOf):
            return any([ev(i, scope) for i in c.items])
        if isinstance(c, C.Quant):
            seq = get_path(scope, c.path)
            items = seq if isinstance(seq, list) else []
            results = [ev(c.where, x) for x in items]
            return any(results) if c.kind == "some" else all(results)
        if not isinstance(c, C.Atom):  # a resolved ref or high_risk_stop
            assert isinstance(c, (C.Ref, C.HighRisk)) and c.body is not None
            return ev(c.body, scope)
        out = _atom(c, fact, scope)
        if trace is not None:
            trace.append((c, out))
        return out

    return ev(cond, fact)


def atoms_of(cond: C.Cond) -> list[C.Atom]:
    """Every atom of a condition tree, in source order (named conditions expanded)."""
    return [n for n in C.iter_nodes(cond) if isinstance(n, C.Atom)]
