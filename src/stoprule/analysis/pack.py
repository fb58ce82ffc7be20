"""What analysis needs to know about a compiled pack: locations, references, rewrites.

Everything here is generic over the pack format: sets, high-risk stops and named
conditions are found through the compiler's tables and the parsed YAML, never by name.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from .. import conditions as C
from ..compiler import CompileContext, Decl, RuleDecl
from ..interpret import evaluate
from ..schema import FactField
from ..source import SourceFile

__all__ = [
    "Refs",
    "catch_all",
    "decl_loc",
    "drop_member",
    "drop_stop",
    "field_paths",
    "member_loc",
    "outcome_of",
    "read_paths",
    "references",
    "rewrite",
    "rule_loc",
    "schema_field_loc",
    "uses_stops",
]

FieldPath = tuple[str, ...]  # list elements are the step "[]"


def _loc(src: SourceFile, path: tuple) -> str:
    return f"{src.name}:{src.where(path)[0]}"


def rule_loc(rule: RuleDecl) -> str:
    return _loc(rule.src, rule.path)


def decl_loc(decl: Decl) -> str:
    return _loc(decl.src, decl.path)


def _value_at(data: Any, path: tuple) -> Any:
    cur = data
    for p in path:
        try:
            cur = cur[p]
        except (KeyError, IndexError, TypeError):
            return None
    return cur


def member_loc(decl: Decl, member: Any) -> str:
    """Where ``member`` of a declared set is written (a mapping key or a list element)."""
    n = len(decl.path)
    best: tuple[int, int] | None = None
    for p, (line, _) in decl.src.marks.items():
        if p[:n] != decl.path or len(p) == n:
            continue
        if p[-1] == member or (isinstance(p[-1], int) and _value_at(decl.src.data, p) == member):
            best = min(best, (line, len(p))) if best else (line, len(p))
    return f"{decl.src.name}:{best[0]}" if best else decl_loc(decl)


def schema_field_loc(ctx: CompileContext, path: FieldPath) -> str:
    key: tuple = ("schema", "fields", path[0])
    for step in path[1:]:
        key = (*key, "items") if step == "[]" else (*key, "fields", step)
    for src, _ in ctx.files:
        if key in src.marks:
            return f"{src.name}:{src.marks[key][0]}"
    return decl_loc(ctx.schema_decl) if ctx.schema_decl else "?"


def rewrite(c: C.Cond, fn: Callable[[C.Cond], C.Cond | None]) -> C.Cond:
    """``c`` with every node for which ``fn`` returns a replacement replaced (top-down)."""
    new = fn(c)
    if new is not None:
        return new
    if isinstance(c, C.Not):
        return dataclasses.replace(c, item=rewrite(c.item, fn))
    if isinstance(c, (C.AllOf, C.AnyOf)):
        return dataclasses.replace(c, items=tuple(rewrite(i, fn) for i in c.items))
    if isinstance(c, C.Quant):
        return dataclasses.replace(c, where=rewrite(c.where, fn))
    return c


def drop_stop(ctx: CompileContext, index: int) -> Callable[[C.Cond], C.Cond | None]:
    """A rewrite that removes high-risk stop ``index`` wherever ``high_risk_stop`` was expanded."""
    stops = tuple(s.value[1] for s in ctx.stops)

    def fn(c: C.Cond) -> C.Cond | None:
        if isinstance(c, C.AnyOf) and c.items == stops:
            return C.AnyOf(stops[:index] + stops[index + 1 :], c.loc)
        return None

    return fn


def uses_stops(ctx: CompileContext, c: C.Cond) -> bool:
    stops = tuple(s.value[1] for s in ctx.stops)
    found = False

    def fn(n: C.Cond) -> C.Cond | None:
        nonlocal found
        if isinstance(n, C.AnyOf) and n.items == stops:
            found = True
            return n
        return None

    rewrite(c, fn)
    return found


def drop_member(set_values: list[tuple], member: Any) -> Callable[[C.Cond], C.Cond | None]:
    """A rewrite that removes ``member`` from every ``in``/``not_in`` list equal to one of ``set_values``."""

    def fn(c: C.Cond) -> C.Cond | None:
        if isinstance(c, C.Atom) and c.op in ("in", "not_in") and isinstance(c.arg, tuple) and c.arg in set_values:
            return dataclasses.replace(c, arg=tuple(x for x in c.arg if x != member))
        return None

    return fn


def catch_all(rule: RuleDecl) -> bool:
    return isinstance(rule.cond, C.Const) and rule.cond.value


def outcome_of(rules: list[RuleDecl], fact: dict[str, Any]) -> tuple[int, ...]:
    """Positions of the rules matching at the highest matching priority (reference semantics)."""
    matched = [i for i, r in enumerate(rules) if r.cond is not None and evaluate(r.cond, fact)]
    if not matched:
        return ()
    top = max(rules[i].spec.priority for i in matched)
    return tuple(i for i in matched if rules[i].spec.priority == top)


@dataclasses.dataclass
class Refs:
    """What rules, high-risk stops and the named conditions they use refer to by name."""

    sets: set[str] = dataclasses.field(default_factory=set)  # in conditions
    template_sets: set[str] = dataclasses.field(default_factory=set)
    conditions: set[str] = dataclasses.field(default_factory=set)
    verdicts: set[str] = dataclasses.field(default_factory=set)
    fields: set[FieldPath] = dataclasses.field(default_factory=set)


def references(ctx: CompileContext) -> Refs:
    """Names referred to, reading the raw conditions (sets and refs are gone once resolved)."""
    refs = Refs()
    diags: list = []
    parsed_named: dict[str, C.Cond | None] = {}

    def walk(c: C.Cond | None) -> None:
        if c is None:
            return
        if isinstance(c, C.Ref):
            if c.name not in refs.conditions and c.name in ctx.conditions:
                refs.conditions.add(c.name)
                d = ctx.conditions[c.name]
                parsed_named[c.name] = C.parse_condition(d.src, d.value, d.path, diags)
                walk(parsed_named[c.name])
        elif isinstance(c, C.Atom) and c.op in ("in", "not_in") and isinstance(c.arg, str):
            refs.sets.add(c.arg)
        for child in C.children(c):
            walk(child)

    for rule in ctx.rules:
        walk(C.parse_condition(rule.src, rule.spec.when, (*rule.path, "when"), diags))
        refs.verdicts.add(rule.spec.verdict)
        for tpl in (rule.message, rule.review_reason or ()):
            for part in tpl:
                if isinstance(part, tuple) and part[0] == "set":
                    refs.template_sets.add(part[1][0])
                elif isinstance(part, tuple):
                    steps: list[str] = []
                    for name in part[1]:
                        steps += [name[:-2], "[]"] if name.endswith("[]") else [name]
                    refs.fields.add(tuple(steps))
    for stop in ctx.stops:
        walk(C.parse_condition(stop.src, stop.value[0].when, (*stop.path, "when"), diags))
    for c in [r.cond for r in ctx.rules] + [s.value[1] for s in ctx.stops]:
        refs.fields |= read_paths(c)
    return refs


def read_paths(c: C.Cond | None, prefix: FieldPath = ()) -> set[FieldPath]:
    """Schema paths a type-checked condition reads."""
    out: set[FieldPath] = set()
    if c is None:
        return out
    if isinstance(c, C.Atom):
        out.add((*prefix, *c.path))
        if c.ref_path is not None:
            out.add(c.ref_path)
    elif isinstance(c, C.Quant):
        out.add((*prefix, *c.path))
        out |= read_paths(c.where, (*prefix, *c.path, "[]"))
    elif isinstance(c, C.Not):
        out |= read_paths(c.item, prefix)
    elif isinstance(c, (C.AllOf, C.AnyOf)):
        for i in c.items:
            out |= read_paths(i, prefix)
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
