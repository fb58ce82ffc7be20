"""Questions analysis asks of a checked policy: what refers to what, reference outcomes,
and variants of the rules with one declaration taken out.

Generic over the pack format: sets, high-risk stops and named conditions are found
through the references the checked conditions keep, never by name.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from stoprule.engine.interpret import evaluate
from stoprule.facts.schema import FactField
from stoprule.language import conditions as C
from stoprule.language.checked import CheckedPolicy, CheckedRule, FieldPath

__all__ = [
    "Refs",
    "catch_all",
    "drop_member",
    "drop_stop",
    "field_paths",
    "outcome_of",
    "read_paths",
    "references",
    "uses_stops",
]


def drop_stop(stop_id: str) -> Callable[[C.Cond], C.Cond | None]:
    """A rewrite that removes high-risk stop ``stop_id`` from every ``high_risk_stop`` node."""

    def fn(c: C.Cond) -> C.Cond | None:
        if not isinstance(c, C.HighRisk) or stop_id not in c.stops or c.body is None:
            return None
        j = c.stops.index(stop_id)
        anyc = c.body.item if isinstance(c.body, C.Not) else c.body
        assert isinstance(anyc, C.AnyOf)
        anyc = dataclasses.replace(anyc, items=anyc.items[:j] + anyc.items[j + 1 :])
        body = dataclasses.replace(c.body, item=anyc) if isinstance(c.body, C.Not) else anyc
        return dataclasses.replace(c, body=body, stops=c.stops[:j] + c.stops[j + 1 :])

    fn.what = f"high-risk stop {stop_id}"  # type: ignore[attr-defined]
    return fn


def uses_stops(c: C.Cond) -> bool:
    """Whether ``c`` refers to the high-risk stops."""
    return any(isinstance(n, C.HighRisk) for n in C.iter_nodes(c))


def drop_member(set_names: Sequence[str], member: Any) -> Callable[[C.Cond], C.Cond | None]:
    """A rewrite that removes ``member`` from every ``in``/``not_in`` that names one of ``set_names``."""

    def fn(c: C.Cond) -> C.Cond | None:
        if isinstance(c, C.Atom) and c.set in set_names:
            return dataclasses.replace(c, arg=tuple(x for x in c.arg if x != member))
        return None

    fn.what = f"{member!r} in {', '.join(set_names)}"  # type: ignore[attr-defined]
    return fn


def catch_all(rule: CheckedRule) -> bool:
    return isinstance(rule.when, C.Const) and rule.when.value


def outcome_of(rules: Sequence[CheckedRule], fact: dict[str, Any]) -> tuple[int, ...]:
    """Positions of the rules matching at the highest matching priority (reference semantics)."""
    matched = [i for i, r in enumerate(rules) if evaluate(r.when, fact)]
    if not matched:
        return ()
    top = max(rules[i].priority for i in matched)
    return tuple(i for i in matched if rules[i].priority == top)


@dataclasses.dataclass
class Refs:
    """What rules, high-risk stops and the named conditions they use refer to by name."""

    sets: set[str] = dataclasses.field(default_factory=set)  # in conditions
    template_sets: set[str] = dataclasses.field(default_factory=set)
    conditions: set[str] = dataclasses.field(default_factory=set)
    verdicts: set[str] = dataclasses.field(default_factory=set)
    fields: set[FieldPath] = dataclasses.field(default_factory=set)


def references(checked: CheckedPolicy) -> Refs:
    """Names referred to by the rules and high-risk stops (through named conditions too)."""
    refs = Refs()
    for c in checked.conditions_in_use():
        for n in C.iter_nodes(c):
            if isinstance(n, C.Ref):
                refs.conditions.add(n.name)
            elif isinstance(n, C.Atom) and n.set is not None:
                refs.sets.add(n.set)
        refs.fields |= read_paths(c)
    for rule in checked.rules:
        refs.verdicts.add(rule.verdict)
        for tpl in (rule.message, rule.review_reason or ()):
            for part in tpl:
                if isinstance(part, tuple) and part[0] == "set":
                    refs.template_sets.add(part[1][0])
                elif isinstance(part, tuple):
                    steps: list[str] = []
                    for name in part[1]:
                        steps += [name[:-2], "[]"] if name.endswith("[]") else [name]
                    refs.fields.add(tuple(steps))
    return refs


def read_paths(c: C.Cond, prefix: FieldPath = ()) -> set[FieldPath]:
    """Schema paths a type-checked condition reads."""
    out: set[FieldPath] = set()
    if isinstance(c, C.Atom):
        out.add((*prefix, *c.path))
        if c.ref_path is not None:
            out.add(c.ref_path)
    elif isinstance(c, C.Quant):
        out.add((*prefix, *c.path))
        out |= read_paths(c.where, (*prefix, *c.path, "[]"))
    else:
        for child in C.children(c):
            out |= read_paths(child, prefix)
    return out


def field_paths(f: FactField, prefix: FieldPath = ()) -> list[FieldPath]:
    """Every field of a schema as a path (list elements as ``[]``), parents first."""
    out: list[FieldPath] = []
    for name, child in f.fields.items():
        p = (*prefix, name)
        out.append(p)
        out += _below(child, p)
    return out


def _below(f: FactField, p: FieldPath) -> list[FieldPath]:
    if f.type == "object":
        return field_paths(f, p)
    if f.type == "list" and f.items is not None and f.items.type in ("object", "list"):
        return _below(f.items, (*p, "[]"))
    return []
