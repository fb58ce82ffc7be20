"""Boolean simplification of lowered engine conditions.

durable_rules expands every rule into disjunctive normal form; negated
conjunctions of optional fields multiply quickly. Flattening, deduplicating and
factoring shared disjuncts out of a conjunction (``(a|m) & (b|m) == (a&b)|m``)
keeps the expansion small.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["dnf_size", "simplify"]

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
        rests = []
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
