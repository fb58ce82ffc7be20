"""Boolean simplification of lowered engine conditions.

durable_rules expands every rule into disjunctive normal form; negated
conjunctions of optional fields multiply quickly. Flattening, deduplicating and
factoring shared disjuncts out of a conjunction (``(a|m) & (b|m) == (a&b)|m``)
keeps the expansion small.

Inside ``$iany``/``$iall`` bodies, durable_rules 2.0.28 mis-evaluates ``$or`` whose
branches test different item fields (it behaves like ``$and``), and ``$or`` nested in
``$or``. :func:`split_quantifiers` rewrites bodies so that every ``$or`` left in them
tests one key: ``some x: (a | b)`` becomes ``(some x: a) | (some x: b)``; an ``every``
that would need such an ``$or`` is refused (tests/test_engine_vs_interpreter.py holds
the engine to the reference semantics).
"""

from __future__ import annotations

import json
from typing import Any

from stoprule.diagnostics import QuantifierError

__all__ = ["dnf_size", "simplify", "split_quantifiers"]

Json = dict[str, Any]


def _key(c: Json) -> str:
    return json.dumps(c, sort_keys=True)


def _op(c: Json) -> str | None:
    if len(c) == 1:
        k = next(iter(c))
        if k in ("$and", "$or"):
            return k
    return None


def _make(op: str, items: list[Json]) -> Json:
    return items[0] if len(items) == 1 else {op: items}


def simplify(c: Json) -> Json:
    op = _op(c)
    if op is None:
        if len(c) == 1:
            q = next(iter(c))
            if q in ("$iany", "$iall"):  # quantifier bodies: the engine mis-evaluates $or in $or there
                ((key, body),) = c[q].items()
                return {q: {key: simplify(body)}}
        return c
    items: list[Json] = []
    seen: set[str] = set()
    for child in c[op]:
        s = simplify(child)
        for part in s[op] if _op(s) == op else [s]:
            k = _key(part)
            if k not in seen:
                seen.add(k)
                items.append(part)
    if op == "$and":
        items = _factor(items)
    return _make(op, items)


def _factor(items: list[Json]) -> list[Json]:
    """Pull disjuncts shared by several ``$or`` children out of a conjunction."""
    while True:
        ors = [(i, {_key(d): d for d in c["$or"]}) for i, c in enumerate(items) if _op(c) == "$or"]
        best: tuple[list[int], set[str]] | None = None
        for _, disj in ors:
            for k in disj:
                group = [i for i, d in ors if k in d]
                if len(group) < 2:
                    continue
                common = set.intersection(*(set(d) for i, d in ors if i in group))
                if best is None or len(group) * len(common) > len(best[0]) * len(best[1]):
                    best = (group, common)
        if best is None:
            return items
        group, common = best
        rests: list[Json] | None = []
        shared: list[Json] = []
        for i, disj in ors:
            if i not in group:
                continue
            rest = [d for k, d in disj.items() if k not in common]
            if not shared:
                shared = [d for k, d in disj.items() if k in common]
            if not rest:  # (m) & (b|m) == m: this conjunct is implied away
                rests = None
                break
            assert rests is not None
            rests.append(_make("$or", rest))
        merged = _make("$or", shared) if rests is None else {"$or": [simplify({"$and": rests}), *shared]}
        items = [c for i, c in enumerate(items) if i not in group] + [merged]


def dnf_size(c: Json) -> int:
    """How many conjunctions the engine's DNF expansion of ``c`` produces."""
    op = _op(c)
    if op is None:
        return 1
    sizes = [dnf_size(x) for x in c[op]]
    if op == "$or":
        return sum(sizes)
    out = 1
    for s in sizes:
        out *= s
    return out


def _single_key(c: Json) -> str | None:
    """The one fact key an atom (or a same-key ``$or`` of atoms) tests, else None."""
    op = _op(c)
    if op == "$and":
        return None
    if op == "$or":
        keys = {_single_key(x) for x in c["$or"]}
        return keys.pop() if len(keys) == 1 and None not in keys else None
    ((k, v),) = c.items()
    if _is_field(k):  # an equality test: ``{"$i.g0": "x"}``
        return k
    if isinstance(v, dict) and len(v) == 1:  # an operator on one key: ``{"$neq": {"$i.g0": "x"}}``
        return str(next(iter(v)))
    return None


def _is_field(k: str) -> bool:
    """Whether ``k`` names a fact key (a list item ``$i`` and its fields ``$i.<slot>`` are
    keys, not operators)."""
    return not k.startswith("$") or k == "$i" or k.startswith("$i.")


def _dnf(c: Json) -> list[list[Json]]:
    """Disjunctive normal form, keeping same-key ``$or`` groups as atoms."""
    op = _op(c)
    if op is None or (op == "$or" and _single_key(c) is not None):
        return [[c]]
    if op == "$or":
        return [conj for x in c["$or"] for conj in _dnf(x)]
    out: list[list[Json]] = [[]]
    for x in c["$and"]:
        out = [a + b for a in out for b in _dnf(x)]
    return out


def split_quantifiers(c: Json) -> Json:
    """Rewrite ``$iany``/``$iall`` bodies into forms the engine evaluates correctly."""
    op = _op(c)
    if op is not None:
        return {op: [split_quantifiers(x) for x in c[op]]}
    if len(c) != 1:
        return c
    q = next(iter(c))
    if q not in ("$iany", "$iall"):
        return c
    ((key, body),) = c[q].items()
    conjs = [settled for conj in _dnf(body) for settled in _settle(conj)]
    if q == "$iall":
        if len(conjs) > 1:
            raise QuantifierError(
                "a condition every list element must meet (every:, or a negated some:) "
                "with alternatives over different item fields"
            )
        return {"$iall": {key: _make("$and", conjs[0])}}
    parts = [{"$iany": {key: _make("$and", conj)}} for conj in conjs]
    return _make("$or", parts)


# durable_rules 2.0.28 checks the last node it built for a quantifier body, and for an
# ``$or`` that node's right operand is never initialised (createForwardAlpha): a body that
# is, or ends with, an ``$or`` makes ``create_ruleset`` fail now and then with error 102.
# So every body ends with a plain test: one of its own tests moved last, else a test the
# ``$or`` implies (its key is present and not null).
_PRESENT_OPS = ("$neq", "$lt", "$lte", "$gt", "$gte")  # false on an absent or null value


def _implies_present(group: Json) -> bool:
    """Whether every branch of a same-key ``$or`` fails on an absent or null value."""
    for x in group["$or"]:
        ((k, v),) = x.items()
        if _is_field(k):
            if v is None:
                return False
        elif not (k in _PRESENT_OPS and isinstance(v, dict) and len(v) == 1):
            return False
    return True


def _operator_group(group: Json) -> bool:
    """A same-key ``$or`` of operator tests only (``{"$neq": {k: v}}``, ``{"$nex": ...}``): the
    groups kept whole before equality atoms on list items counted as keys."""
    return all(not _is_field(next(iter(x))) for x in group["$or"])


def _settle(conj: list[Json]) -> list[list[Json]]:
    """``conj`` (a quantifier body's conjunction) with a plain test last, as alternatives."""
    atoms = [x for x in conj if _op(x) != "$or"]
    if atoms:
        last = atoms[-1]
        return [[x for x in conj if x is not last] + [last]]
    for group in conj:
        if _implies_present(group):
            k = _single_key(group)
            return [[*conj, {"$neq": {k: None}}]]
    if all(_operator_group(g) for g in conj):
        return [conj]  # as lowered before: nothing to end the body with
    out: list[list[Json]] = [[]]
    for group in conj:  # spread the equality groups into alternatives (each then ends plainly)
        options = [[group]] if _operator_group(group) else [[b] for b in group["$or"]]
        out = [a + b for a in out for b in options]
    return [settled for alt in out for settled in _settle(alt)]
