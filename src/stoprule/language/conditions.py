"""Condition syntax tree and its parser (YAML ``when:`` blocks -> nodes).

A condition is one of::

    true | false                         constant
    {all: [c, ...]} / {any: [c, ...]}    conjunction / disjunction
    {not: c}                             negation
    {ref: name}                          a named condition
    {high_risk_stop: true|false}         any declared high-risk stop applies / none does
    {some: list, where: c}               some element of a list matches c
    {every: list, where: c}              every element matches c (true for an empty list)
    {field: {op: arg, ...}}              atoms on a field (several ops: all of them)
    {field: value}                       shorthand for {field: {eq: value}}
    {list[].field: {op: arg}}            shorthand for {some: list, where: {field: ...}}

A mapping with several keys is the conjunction of its entries.

After resolution ``Ref`` and ``HighRisk`` keep their names and carry the resolved
condition as ``body``; an ``in``/``not_in`` atom that named a set keeps the set's name
in ``set``. Semantic visitors treat both as their ``body``. Tree walks use the
toolkit at the end of this module (:func:`children`, :func:`iter_nodes`,
:func:`map_children`, :func:`rewrite`) so that a new node kind touches only the
visitors that give nodes a meaning.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from stoprule import codes
from stoprule._util import tagged
from stoprule._util.hints import unknown_hint
from stoprule._util.tagged_dump import dump
from stoprule.diagnostic import Diagnostic
from stoprule.facts.schema import FactField
from stoprule.language.operators import OPERATORS
from stoprule.language.source import SourceFile, format_path

__all__ = [
    "AllOf",
    "AnyOf",
    "Atom",
    "Cond",
    "Const",
    "HighRisk",
    "Loc",
    "Not",
    "Quant",
    "Ref",
    "children",
    "cond_text",
    "dump_conditions",
    "iter_nodes",
    "load_conditions",
    "map_children",
    "parse_condition",
    "rewrite",
]

RESERVED = frozenset({"all", "any", "not", "ref", "some", "every", "where", "high_risk_stop"})


@dataclass(frozen=True)
class Loc:
    file: str
    line: int
    column: int
    path: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(frozen=True)
class Const:
    value: bool
    loc: Loc


@dataclass(frozen=True)
class Atom:
    """``field op arg``; after type-checking ``fld`` holds the schema field."""

    field: str
    op: str
    arg: Any
    loc: Loc
    fld: Any = None
    path: tuple[str, ...] = ()
    ref_path: tuple[str, ...] | None = None
    ref_fld: Any = None
    set: str | None = None  # the named set an in/not_in list came from

    def text(self) -> str:
        arg = self.arg
        if isinstance(arg, dict) and "field" in arg:
            off = arg.get("offset", 0)
            shown = arg["field"] + (f" {'+' if off >= 0 else '-'} {abs(off)}" if off else "")
        elif isinstance(arg, tuple):
            shown = "[" + ", ".join(map(_lit, arg)) + "]"
        else:
            shown = _lit(arg)
        return f"{self.field or 'item'} {self.op} {shown}"


def _lit(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return "null" if v is None else str(v)


@dataclass(frozen=True)
class Quant:
    kind: str  # "some" | "every"
    field: str
    where: Cond
    loc: Loc
    fld: Any = None
    path: tuple[str, ...] = ()


@dataclass(frozen=True)
class AllOf:
    items: tuple[Cond, ...]
    loc: Loc


@dataclass(frozen=True)
class AnyOf:
    items: tuple[Cond, ...]
    loc: Loc


@dataclass(frozen=True)
class Not:
    item: Cond
    loc: Loc


@dataclass(frozen=True)
class Ref:
    """``{ref: name}``; resolved, ``body`` is the named condition (checked in this scope)."""

    name: str
    loc: Loc
    body: Cond | None = None


@dataclass(frozen=True)
class HighRisk:
    """``{high_risk_stop: want}``; resolved, ``stops`` names the declared stops and ``body``
    is ``any of their conditions`` (negated when ``want`` is false)."""

    want: bool
    loc: Loc
    body: Cond | None = None
    stops: tuple[str, ...] = ()


Cond = Const | Atom | Quant | AllOf | AnyOf | Not | Ref | HighRisk

# what a condition tree is made of: the only types reading its JSON form builds
_TYPES: dict[str, type] = {
    t.__name__: t for t in (Loc, Const, Atom, Quant, AllOf, AnyOf, Not, Ref, HighRisk, FactField)
}


def dump_conditions(conds: dict[str, Cond]) -> str:
    """Checked conditions by name as JSON text, with what the reference interpreter reads of them
    (no source locations, no schema fields): kept with a compiled pack, and in its cache."""
    return json.dumps(dump({name: _lean(c) for name, c in conds.items()}, _TYPES), separators=(",", ":"))


_NOWHERE = Loc("", 0, 0, "")


def _lean(c: Cond) -> Cond:
    kept = map_children(c, _lean)
    assert kept is not None
    if isinstance(kept, Atom):
        return dataclasses.replace(kept, loc=_NOWHERE, fld=None, ref_fld=None)
    if isinstance(kept, Quant):
        return dataclasses.replace(kept, loc=_NOWHERE, fld=None)
    return dataclasses.replace(kept, loc=_NOWHERE)


def load_conditions(text: str) -> dict[str, Cond]:
    """The conditions :func:`dump_conditions` wrote (ValueError for anything else)."""
    conds = tagged.load(json.loads(text), _TYPES)
    if type(conds) is not dict:
        raise ValueError("not a table of conditions")
    return conds


@dataclass(frozen=True)
class _Parser:
    src: SourceFile
    diags: list[Diagnostic] = field(default_factory=list)

    def loc(self, path: tuple[Any, ...]) -> Loc:
        line, col = self.src.where(path)
        return Loc(self.src.name, line, col, format_path(path))

    def err(self, path: tuple[Any, ...], code: str, msg: str) -> None:
        self.diags.append(self.src.diag(path, code, msg))

    def parse(self, raw: Any, path: tuple[Any, ...]) -> Cond | None:
        loc = self.loc(path)
        if isinstance(raw, bool):
            return Const(raw, loc)
        if not isinstance(raw, dict):
            self.err(
                path,
                codes.CONDITION_SYNTAX,
                "a condition is a mapping (use all: [...] or any: [...] for lists)",
            )
            return None
        if not raw:
            self.err(path, codes.CONDITION_SYNTAX, "empty condition")
            return None
        if "some" in raw or "every" in raw or "where" in raw:
            return self.quant(raw, path)
        parts = [self.entry(k, v, (*path, k)) for k, v in raw.items()]
        if any(p is None for p in parts):
            return None
        return parts[0] if len(parts) == 1 else AllOf(tuple(parts), loc)  # type: ignore[arg-type]

    def quant(self, raw: dict[Any, Any], path: tuple[Any, ...]) -> Cond | None:
        kinds = [k for k in ("some", "every") if k in raw]
        extra = sorted(set(raw) - {"some", "every", "where"})
        if len(kinds) != 1 or "where" not in raw or extra:
            self.err(
                path,
                codes.CONDITION_SYNTAX,
                "a quantifier is exactly {some: LIST, where: COND} or {every: LIST, where: COND}",
            )
            return None
        kind = kinds[0]
        name = raw[kind]
        if not isinstance(name, str):
            self.err((*path, kind), codes.CONDITION_SYNTAX, f"{kind}: takes a list field name")
            return None
        where = self.parse(raw["where"], (*path, "where"))
        return None if where is None else Quant(kind, name, where, self.loc((*path, kind)))

    def entry(self, key: str, value: Any, path: tuple[Any, ...]) -> Cond | None:
        loc = self.loc(path)
        if key in ("all", "any"):
            if not isinstance(value, list) or not value:
                self.err(path, codes.CONDITION_SYNTAX, f"{key}: takes a non-empty list of conditions")
                return None
            items = [self.parse(v, (*path, i)) for i, v in enumerate(value)]
            if any(i is None for i in items):
                return None
            return (AllOf if key == "all" else AnyOf)(tuple(items), loc)  # type: ignore[arg-type]
        if key == "not":
            inner = self.parse(value, path)
            return None if inner is None else Not(inner, loc)
        if key == "ref":
            if not isinstance(value, str):
                self.err(path, codes.CONDITION_SYNTAX, "ref: takes the name of a condition")
                return None
            return Ref(value, loc)
        if key == "high_risk_stop":
            if not isinstance(value, bool):
                self.err(path, codes.CONDITION_SYNTAX, "high_risk_stop: takes true or false")
                return None
            return HighRisk(value, loc)
        return self.field_entry(key, value, path)

    def field_entry(self, key: str, value: Any, path: tuple[Any, ...]) -> Cond | None:
        loc = self.loc(path)
        if key.count("[]") > 2:  # lists in lists are refused later; do not recurse on a long key
            self.err(path, codes.CONDITION_NESTED_LIST, "lists inside list items are not supported in conditions")
            return None
        if "[]" in key:
            head, _, rest = key.partition("[]")
            rest = rest[1:] if rest.startswith(".") else rest
            inner = self.field_entry(rest, value, path)
            return None if inner is None or not head else Quant("some", head, inner, loc)
        ops = value if isinstance(value, dict) else {"eq": value}
        if not ops:
            self.err(path, codes.CONDITION_SYNTAX, f"no operator given for {key!r}")
            return None
        atoms: list[Cond] = []
        for op, arg in ops.items():
            if op not in OPERATORS:
                self.err(
                    (*path, op),
                    codes.CONDITION_UNKNOWN_OPERATOR,
                    f"unknown operator {op!r}{unknown_hint(str(op), OPERATORS, listed=len(OPERATORS))}",
                )
                return None
            atoms.append(Atom(key, op, arg, self.loc((*path, op)) if isinstance(value, dict) else loc))
        return atoms[0] if len(atoms) == 1 else AllOf(tuple(atoms), loc)


def parse_condition(src: SourceFile, raw: Any, path: tuple[Any, ...], diags: list[Diagnostic]) -> Cond | None:
    """Parse a ``when:`` block at ``path`` of ``src``; problems go to ``diags``."""
    p = _Parser(src)
    out = p.parse(raw, path)
    diags.extend(p.diags)
    return out


# ---------------------------------------------------------------- traversal toolkit


def children(c: Cond) -> tuple[Cond, ...]:
    """The direct sub-conditions of ``c``: a quantifier's ``where``, a resolved reference's ``body``."""
    if isinstance(c, (AllOf, AnyOf)):
        return c.items
    if isinstance(c, Not):
        return (c.item,)
    if isinstance(c, Quant):
        return (c.where,)
    if isinstance(c, (Ref, HighRisk)) and c.body is not None:
        return (c.body,)
    return ()


def iter_nodes(c: Cond) -> Iterator[Cond]:
    """Every node of ``c``, parents before children, in source order."""
    stack = [c]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(children(n)))


def map_children(c: Cond, fn: Callable[[Cond], Cond | None]) -> Cond | None:
    """``c`` with ``fn`` applied to each direct child; None if ``fn`` returns None for any
    (an error already reported). ``c`` itself is returned when nothing changed."""
    kids = children(c)
    if not kids:
        return c
    new = [fn(k) for k in kids]
    if any(n is None for n in new):
        return None
    if all(n is k for n, k in zip(new, kids, strict=True)):
        return c
    if isinstance(c, (AllOf, AnyOf)):
        return dataclasses.replace(c, items=tuple(new))  # type: ignore[arg-type]
    if isinstance(c, Not):
        return dataclasses.replace(c, item=new[0])  # type: ignore[arg-type]
    if isinstance(c, Quant):
        return dataclasses.replace(c, where=new[0])  # type: ignore[arg-type]
    return dataclasses.replace(c, body=new[0])  # type: ignore[arg-type]


def rewrite(c: Cond, fn: Callable[[Cond], Cond | None]) -> Cond:
    """``c`` with every node for which ``fn`` returns a replacement replaced (top-down)."""
    new = fn(c)
    if new is not None:
        return new
    out = map_children(c, lambda k: rewrite(k, fn))
    assert out is not None
    return out


def cond_text(c: Cond) -> str:
    """Compact source-like text of any condition."""
    if isinstance(c, Atom):
        return c.text()
    if isinstance(c, Const):
        return _lit(c.value)
    if isinstance(c, Not):
        return f"not {cond_text(c.item)}"
    if isinstance(c, (AllOf, AnyOf)):
        sep = " and " if isinstance(c, AllOf) else " or "
        return "(" + sep.join(cond_text(i) for i in c.items) + ")"
    if isinstance(c, Quant):
        return f"{c.kind} {c.field}: {cond_text(c.where)}"
    if isinstance(c, Ref):
        return f"ref {c.name}"
    return f"high_risk_stop {_lit(c.want)}"
