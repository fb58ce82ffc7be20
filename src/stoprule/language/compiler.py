"""Compile a pack: a list of named stages.

    load       read YAML with locations, validate each file's structure, merge sections
    resolve    named conditions, sets, high-risk stops and verdicts by name; cycles
    typecheck  fields, operators and literals against the fact schema; templates;
               emits the immutable :class:`~stoprule.language.checked.CheckedPolicy`
    lower      conditions -> durable_rules JSON over a projected fact (:mod:`.lowering`)
    build      chunk into rulesets and create them in the engine (:mod:`.lowering`)

The compiler stops after the first stage that reports a diagnostic; ``until=``
runs it up to (and including) one stage. Its working state (``Context``) is
private: consumers read the checked policy and the compiled policy.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from stoprule import codes
from stoprule._util.hints import closest, unknown_hint
from stoprule.diagnostic import Diagnostic
from stoprule.diagnostics import CheckError, PolicyError
from stoprule.facts.schema import FactField, FactSchema, can_be_absent
from stoprule.language import conditions as C
from stoprule.language.checked import (
    CheckedPolicy,
    CheckedRule,
    CheckedSet,
    CheckedStop,
    CheckedVerdict,
    FieldPath,
    NamedCondition,
)
from stoprule.language.operators import OPERATORS, check_number
from stoprule.language.source import SourceFile, format_path, read_pack
from stoprule.language.spec import FieldSpec, PackFile, RuleSpec, parse_file
from stoprule.language.template_compiler import parse_template
from stoprule.language.templates import Template
from stoprule.limits import MAX_CONDITION_DEPTH, MAX_CONDITION_NODES, MAX_RULES, MAX_SET_MEMBERS

__all__ = ["STAGES", "Context", "check_pack", "run"]


@dataclass
class _Decl:
    """Something declared in a pack, with where it was declared (compiler-internal)."""

    name: str
    src: SourceFile
    path: tuple[Any, ...]
    value: Any = None
    cond: C.Cond | None = None  # resolved, then checked, condition (stops, named conditions)

    def loc(self, sub: tuple[Any, ...] = ()) -> C.Loc:
        return _loc(self.src, (*self.path, *sub))


@dataclass
class _RuleDecl:
    id: str
    spec: RuleSpec
    src: SourceFile
    path: tuple[Any, ...]
    cond: C.Cond | None = None
    message: Template = ()
    review_reason: Template | None = None


@dataclass
class Context:
    root: Path
    diags: list[Diagnostic] = field(default_factory=list)
    files: list[tuple[SourceFile, PackFile]] = field(default_factory=list)
    digest: str = ""
    name: str = ""
    schema: FactSchema | None = None
    schema_decl: _Decl | None = None
    field_locs: dict[FieldPath, C.Loc] = field(default_factory=dict)
    sets: dict[str, _Decl] = field(default_factory=dict)
    conditions: dict[str, _Decl] = field(default_factory=dict)
    verdicts: dict[str, _Decl] = field(default_factory=dict)
    stops: list[_Decl] = field(default_factory=list)
    rules: list[_RuleDecl] = field(default_factory=list)
    declarations: dict[str, Any] = field(default_factory=dict)
    checked: CheckedPolicy | None = None
    lowered: Any = None  # the engine's stages: lowered conditions, then the compiled policy
    compiled: Any = None


def _at(src: SourceFile, path: tuple[Any, ...]) -> str:
    """``file:line:col`` of ``path`` in ``src``: where a first declaration is, for a duplicate."""
    line, col = src.where(path)
    return f"{src.name}:{line}:{col}"


def _loc(src: SourceFile, path: tuple[Any, ...]) -> C.Loc:
    line, col = src.where(path)
    return C.Loc(src.name, line, col, format_path(path))


# ---------------------------------------------------------------- load


def _build_field(
    name: str, spec: FieldSpec, decl: _Decl, path: tuple[Any, ...], diags: list[Diagnostic], item: bool = False
) -> FactField:
    def err(code: str, msg: str, sub: tuple[Any, ...] = ()) -> None:
        diags.append(decl.src.diag((*path, *sub), code, msg))

    if not item and (name in C.RESERVED or not name or any(ch in name for ch in ".[]{}@ ")):
        err(codes.SCHEMA_BAD_NAME, f"field name {name!r} is reserved or contains . [ ] {{ }} @ or space")
    items = None
    children: dict[str, FactField] = {}
    if spec.type == "enum" and not spec.values:
        err(codes.SCHEMA_ENUM_VALUES, "an enum needs a non-empty values: list")
    if spec.type != "enum" and spec.values is not None:
        err(codes.SCHEMA_UNEXPECTED, "values: only applies to enum fields", ("values",))
    if spec.type == "list":
        if spec.items is None:
            err(codes.SCHEMA_LIST_ITEMS, "a list needs items: (the element type)")
        else:
            items = _build_field("", spec.items, decl, (*path, "items"), diags, item=True)
    elif spec.items is not None:
        err(codes.SCHEMA_UNEXPECTED, "items: only applies to list fields", ("items",))
    if spec.type == "object":
        if not spec.fields:
            err(codes.SCHEMA_OBJECT_FIELDS, "an object needs fields:")
        for cname, cspec in (spec.fields or {}).items():
            children[cname] = _build_field(cname, cspec, decl, (*path, "fields", cname), diags)
    elif spec.fields is not None:
        err(codes.SCHEMA_UNEXPECTED, "fields: only applies to object fields", ("fields",))
    f = FactField(
        name=name,
        type=spec.type,
        required=spec.required,
        nullable=spec.nullable,
        has_default="default" in spec.model_fields_set,
        default=spec.default,
        aliases=tuple(spec.aliases),
        values=tuple(spec.values or ()),
        items=items,
        fields=children,
        required_if=spec.required_if,
        description=spec.description,
    )
    if f.has_default and not (spec.type == "list" and items is None) and not (spec.type == "object" and not children):
        try:
            # normalised as a fact value would be: an object default gets its children's defaults
            f = f._replace(default=FactSchema(FactField("", "object")).check_value(f, f.default))
        except Exception as exc:  # FactError: default does not fit the type
            err(codes.SCHEMA_DEFAULT, f"default does not fit the field: {exc}", ("default",))
    if f.required and f.has_default:
        err(codes.SCHEMA_UNEXPECTED, "a required field cannot have a default", ("default",))
    return f


def _check_object(obj: FactField, srcs: dict[str, SourceFile], path: tuple[Any, ...], diags: list[Any]) -> None:
    """Alias clashes and required_if targets; ``srcs`` says which file declares each field."""
    seen: dict[str, str] = {}
    for name, f in obj.fields.items():
        src = srcs[name]
        for alias in (name, *f.aliases):
            if alias in seen and seen[alias] != name:
                diags.append(
                    src.diag(
                        (*path, name, "aliases"),
                        codes.SCHEMA_ALIAS,
                        f"{alias!r} already names field {seen[alias]!r}",
                    )
                )
            seen[alias] = name
        if f.required_if is not None:
            target = obj.fields.get(f.required_if)
            if target is None or target.type != "bool":
                diags.append(
                    src.diag(
                        (*path, name, "required_if"),
                        codes.SCHEMA_REQUIRED_IF,
                        f"required_if must name a bool field beside it, not {f.required_if!r}",
                    )
                )
        if f.type == "object":
            _check_object(f, dict.fromkeys(f.fields, src), (*path, name, "fields"), diags)


def stage_load(ctx: Context) -> None:
    source = read_pack(ctx.root, ctx.diags)
    for src in source.files:
        if src.data is None:
            continue
        pf = parse_file(src, ctx.diags)
        if pf is not None:
            ctx.files.append((src, pf))
    if ctx.diags:
        return
    norm = [(src.name, src.data) for src, _ in ctx.files]
    blob = json.dumps(norm, sort_keys=True, separators=(",", ":"), default=str)
    ctx.digest = "sha256:" + hashlib.sha256(blob.encode()).hexdigest()
    ctx.name = ctx.root.name

    fields: dict[str, FactField] = {}
    field_src: dict[str, SourceFile] = {}
    additional = "allow"
    for src, pf in ctx.files:
        stem = Path(src.name).stem
        if pf.pack is not None:
            ctx.name = pf.pack.name
        if pf.fact_schema is not None:
            decl = _Decl("schema", src, ("schema",))
            if ctx.schema_decl is None:
                ctx.schema_decl = decl
            if "additional_fields" in pf.fact_schema.model_fields_set:
                additional = pf.fact_schema.additional_fields
            for name, spec in pf.fact_schema.fields.items():
                path: tuple[str | int, ...] = ("schema", "fields", name)
                if name in fields:
                    first = _at(field_src[name], path)
                    ctx.diags.append(
                        src.diag(path, codes.DUPLICATE_FIELD, f"field {name!r} declared twice (first at {first})")
                    )
                    continue
                fields[name] = _build_field(name, spec, decl, path, ctx.diags)
                field_src[name] = src
                _field_locs(src, (name,), path, spec, ctx.field_locs)
        for name, s in pf.sets.items():
            _declare(ctx, ctx.sets, name, src, ("sets", name), tuple(s.members), "set")
        for cls, cats in pf.blocker_categories.items():
            base = ("blocker_categories", cls)
            _declare(ctx, ctx.sets, f"blocker_categories.{cls}", src, base, tuple(cats), "set")
            ctx.declarations.setdefault("blocker_categories", {}).update(
                {c: {"class": cls, "description": d} for c, d in cats.items()}
            )
        if pf.blocker_categories:
            allc = ctx.sets.get("blocker_categories")
            members = tuple(c for cats in pf.blocker_categories.values() for c in cats)
            if allc is None:
                ctx.sets["blocker_categories"] = _Decl("blocker_categories", src, ("blocker_categories",), members)
            else:
                allc.value = allc.value + members
        if pf.legal_closure_states:
            _declare(
                ctx,
                ctx.sets,
                "legal_closure_states",
                src,
                ("legal_closure_states",),
                tuple(pf.legal_closure_states),
                "set",
            )
            ctx.declarations["legal_closure_states"] = dict(pf.legal_closure_states)
        for name, raw in pf.conditions.items():
            _declare(ctx, ctx.conditions, name, src, ("conditions", name), raw, "condition")
        for name, v in pf.verdicts.items():
            _declare(ctx, ctx.verdicts, name, src, ("verdicts", name), v, "verdict")
        for i, stop in enumerate(pf.high_risk_stops):
            path = ("high_risk_stops", i)
            prev_stop = next((d for d in ctx.stops if d.name == stop.id), None)
            if prev_stop is not None:
                first_stop = _at(prev_stop.src, (*prev_stop.path, "id"))
                ctx.diags.append(
                    src.diag(
                        (*path, "id"),
                        codes.DUPLICATE_HIGH_RISK_STOP,
                        f"high-risk stop {stop.id!r} declared twice (first at {first_stop})",
                    )
                )
            ctx.stops.append(_Decl(stop.id, src, path, stop))
        for i, rule in enumerate(pf.rules):
            rid = f"{stem}.{rule.id}"
            prev = next((r for r in ctx.rules if r.id == rid), None)
            if prev is not None:
                first = _at(prev.src, (*prev.path, "id"))
                msg = f"rule id {rid!r} is not unique (first at {first})"
                ctx.diags.append(src.diag(("rules", i, "id"), codes.DUPLICATE_RULE, msg))
            ctx.rules.append(_RuleDecl(rid, rule, src, ("rules", i)))
    nrules = len(ctx.rules) + len(ctx.stops)
    if nrules > MAX_RULES:
        last = ctx.rules[-1] if ctx.rules else None
        src0 = last.src if last else ctx.files[0][0]
        msg = f"{nrules} rules and high-risk stops (limit {MAX_RULES})"
        ctx.diags.append(src0.diag(last.path if last else (), codes.LIMIT_RULES, msg))
    for decl in ctx.sets.values():
        if isinstance(decl.value, tuple) and len(decl.value) > MAX_SET_MEMBERS:
            message = f"{len(decl.value)} members (limit {MAX_SET_MEMBERS})"
            ctx.diags.append(decl.src.diag(decl.path, codes.LIMIT_SET_MEMBERS, message))
    root = FactField("", "object", fields=fields, additional=additional)
    _check_object(root, field_src, ("schema", "fields"), ctx.diags)
    if ctx.diags:  # a broken field (a list without items ...) cannot be compiled into a validator
        return
    ctx.schema = FactSchema(root)
    if not ctx.rules and not ctx.diags:
        src0 = ctx.files[0][0] if ctx.files else SourceFile(str(ctx.root), {})
        ctx.diags.append(src0.diag((), codes.PACK_NO_RULES, "the pack declares no rules"))


def _field_locs(
    src: SourceFile, path: FieldPath, key: tuple[Any, ...], spec: FieldSpec, out: dict[FieldPath, C.Loc]
) -> None:
    """Where each field (list elements as ``[]``) of a schema declaration is written."""
    out.setdefault(path, _loc(src, key))
    if spec.items is not None:
        _field_locs(src, (*path, "[]"), (*key, "items"), spec.items, out)
    for name, child in (spec.fields or {}).items():
        _field_locs(src, (*path, name), (*key, "fields", name), child, out)


def _declare(
    ctx: Context, table: dict[str, Any], name: str, src: SourceFile, path: tuple[Any, ...], value: Any, kind: str
) -> None:
    if name in table:
        prev = table[name]
        first = _at(prev.src, prev.path)
        ctx.diags.append(src.diag(path, f"duplicate.{kind}", f"{kind} {name!r} already declared at {first}"))
        return
    table[name] = _Decl(name, src, path, value)


# ---------------------------------------------------------------- resolve


class _Resolver:
    """Names to what they name; ``ref:``, ``high_risk_stop:`` and set names stay on the nodes."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.parsed: dict[str, C.Cond | None] = {}
        self.done: dict[str, C.Cond | None] = {}
        self.stack: list[str] = []
        self.stops: list[tuple[str, C.Cond]] = []
        self.in_stops = False

    def err(self, loc: C.Loc, code: str, msg: str) -> None:
        self.ctx.diags.append(Diagnostic(loc.file, loc.line, loc.column, code, msg, loc.path))

    def named(self, name: str, loc: C.Loc) -> C.Cond | None:
        if name in self.done:
            return self.done[name]
        decl = self.ctx.conditions.get(name)
        if decl is None:
            hint = unknown_hint(name, self.ctx.conditions)
            self.err(loc, codes.CONDITION_UNKNOWN, f"unknown condition {name!r}{hint}")
            return None
        if name in self.stack:
            cycle = " -> ".join([*self.stack[self.stack.index(name) :], name])
            self.err(loc, codes.CONDITION_CYCLE, f"named conditions refer to each other: {cycle}")
            return None
        if name not in self.parsed:
            self.parsed[name] = C.parse_condition(decl.src, decl.value, decl.path, self.ctx.diags)
        if len(self.stack) >= MAX_CONDITION_DEPTH:
            self.err(
                loc,
                codes.LIMIT_CONDITION_DEPTH,
                f"named conditions refer to each other more than {MAX_CONDITION_DEPTH} levels deep",
            )
            return None
        self.stack.append(name)
        parsed = self.parsed[name]
        out = self.walk(parsed) if parsed is not None else None
        self.stack.pop()
        self.done[name] = out
        return out

    def walk(self, c: C.Cond) -> C.Cond | None:
        if isinstance(c, C.Ref):
            body = self.named(c.name, c.loc)
            return None if body is None else dataclasses.replace(c, body=body)
        if isinstance(c, C.HighRisk):
            if self.in_stops:
                message = "a high-risk stop's condition cannot use high_risk_stop"
                self.err(c.loc, codes.HIGH_RISK_STOP_RECURSIVE, message)
                return None
            if not self.stops:
                self.err(c.loc, codes.HIGH_RISK_STOP_NONE, "the pack declares no high-risk stops")
                return None
            anyc = C.AnyOf(tuple(cond for _, cond in self.stops), c.loc)
            body = anyc if c.want else C.Not(anyc, c.loc)
            return dataclasses.replace(c, body=body, stops=tuple(name for name, _ in self.stops))
        if isinstance(c, C.Atom) and OPERATORS[c.op].set_operand and isinstance(c.arg, str):
            decl = self.ctx.sets.get(c.arg)
            if decl is None:
                hint = unknown_hint(c.arg, self.ctx.sets)
                self.err(c.loc, codes.SET_UNKNOWN, f"unknown set {c.arg!r}{hint}")
                return None
            return dataclasses.replace(c, arg=tuple(decl.value), set=c.arg)
        return C.map_children(c, self.walk)


def _measure(c: C.Cond) -> tuple[int, int]:
    """Depth and node count of a resolved condition, every use of a named condition counted
    (iterative, memoised on shared nodes: linear in the size of the written pack)."""
    memo: dict[int, tuple[int, int]] = {}
    stack: list[tuple[C.Cond, bool]] = [(c, False)]
    while stack:
        node, done = stack.pop()
        if id(node) in memo:
            continue
        kids = C.children(node)
        if done or not kids:
            own = 1 + (len(node.arg) if isinstance(node, C.Atom) and isinstance(node.arg, tuple) else 0)
            memo[id(node)] = (
                1 + max((memo[id(k)][0] for k in kids), default=0),
                own + sum(memo[id(k)][1] for k in kids),
            )
        else:
            stack.append((node, True))
            stack.extend((k, False) for k in kids if id(k) not in memo)
    return memo[id(c)]


def _check_size(ctx: Context, cond: C.Cond | None, src: SourceFile, path: tuple[Any, ...]) -> C.Cond | None:
    if cond is None:
        return None
    depth, size = _measure(cond)
    if depth > MAX_CONDITION_DEPTH:
        ctx.diags.append(
            src.diag(
                path,
                codes.LIMIT_CONDITION_DEPTH,
                f"condition nested {depth} levels deep with named conditions expanded (limit {MAX_CONDITION_DEPTH})",
            )
        )
        return None
    if size > MAX_CONDITION_NODES:
        ctx.diags.append(
            src.diag(
                path,
                codes.LIMIT_CONDITION_SIZE,
                f"condition of {size} parts with named conditions expanded (limit {MAX_CONDITION_NODES})",
            )
        )
        return None
    return cond


def stage_resolve(ctx: Context) -> None:
    r = _Resolver(ctx)
    # high-risk stops first: `high_risk_stop:` anywhere else means "any of them"
    r.in_stops = True
    for stop in ctx.stops:
        cond = C.parse_condition(stop.src, stop.value.when, (*stop.path, "when"), ctx.diags)
        stop.cond = _check_size(ctx, r.walk(cond) if cond is not None else None, stop.src, (*stop.path, "when"))
        if stop.cond is not None:
            r.stops.append((stop.name, stop.cond))
    r.in_stops = False
    for name, decl in ctx.conditions.items():
        decl.cond = _check_size(ctx, r.named(name, C.Loc(decl.src.name, 1, 1, "")), decl.src, decl.path)
    for rule in ctx.rules:
        cond = C.parse_condition(rule.src, rule.spec.when, (*rule.path, "when"), ctx.diags)
        rule.cond = _check_size(ctx, r.walk(cond) if cond is not None else None, rule.src, (*rule.path, "when"))
        if rule.spec.verdict not in ctx.verdicts:
            hint = unknown_hint(rule.spec.verdict, ctx.verdicts)
            ctx.diags.append(
                rule.src.diag(
                    (*rule.path, "verdict"),
                    codes.VERDICT_UNKNOWN,
                    f"unknown verdict {rule.spec.verdict!r}{hint}",
                )
            )


# ---------------------------------------------------------------- typecheck


class _Checker:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        assert ctx.schema is not None
        self.root = ctx.schema.root

    def err(self, loc: C.Loc, code: str, msg: str) -> None:
        self.ctx.diags.append(Diagnostic(loc.file, loc.line, loc.column, code, msg, loc.path))

    def lookup(self, scope: FactField, dotted: str, loc: C.Loc) -> tuple[tuple[str, ...], FactField] | None:
        cur = scope
        names: list[str] = []
        for part in dotted.split("."):
            if cur.type != "object":
                self.err(
                    loc,
                    codes.FIELD_UNKNOWN,
                    f"{'.'.join(names)} is a {cur.type}, it has no field {part!r}",
                )
                return None
            name = cur.lookup.get(part)
            if name is None:
                where = f" of {'.'.join(names)}" if names else ""
                hint = unknown_hint(part, cur.fields)
                self.err(loc, codes.FIELD_UNKNOWN, f"unknown field {part!r}{where}{hint}")
                return None
            names.append(name)
            cur = cur.fields[name]
        return tuple(names), cur

    def check(self, c: C.Cond, scope: FactField, in_item: bool) -> C.Cond | None:
        if isinstance(c, C.Const):
            if in_item:
                self.err(c.loc, codes.CONDITION_SYNTAX, "true/false cannot appear inside where:")
                return None
            return c
        if isinstance(c, C.Quant):
            found = self.lookup(scope, c.field, c.loc)
            if found is None:
                return None
            path, fld = found
            if fld.type != "list" or fld.items is None:
                self.err(
                    c.loc,
                    codes.CONDITION_TYPE,
                    f"{c.kind}: needs a list field, {c.field!r} is {fld.describe()}",
                )
                return None
            if in_item:
                self.err(c.loc, codes.CONDITION_NESTED_LIST, "lists inside list items cannot be quantified")
                return None
            inner = self.check(c.where, fld.items, True)
            return None if inner is None else dataclasses.replace(c, where=inner, fld=fld, path=path)
        if isinstance(c, C.Atom):
            return self.atom(c, scope, in_item)
        return C.map_children(c, lambda k: self.check(k, scope, in_item))

    def atom(self, a: C.Atom, scope: FactField, in_item: bool) -> C.Cond | None:
        if a.field == "":
            if not in_item or scope.type in ("object", "list"):
                self.err(a.loc, codes.FIELD_UNKNOWN, "a condition needs a field name")
                return None
            path: tuple[str, ...] = ()
            fld = scope
        else:
            found = self.lookup(scope, a.field, a.loc)
            if found is None:
                return None
            path, fld = found
        if in_item and fld.type == "list":
            self.err(
                a.loc,
                codes.CONDITION_NESTED_LIST,
                "lists inside list items are not supported in conditions",
            )
            return None
        op = OPERATORS[a.op]
        arg = a.arg
        ref_path = ref_fld = None
        if isinstance(arg, dict):
            if not op.field_operand or set(arg) - {"field", "offset"} or "field" not in arg:
                self.err(
                    a.loc,
                    codes.CONDITION_SYNTAX,
                    f"{a.op}: takes a value" + (" or {field: NAME, offset: N}" if op.field_operand else ""),
                )
                return None
            if in_item:
                self.err(a.loc, codes.CONDITION_SYNTAX, "field operands are not supported inside where:")
                return None
            off = arg.get("offset", 0)
            if type(off) not in (int, float):
                self.err(a.loc, codes.CONDITION_TYPE, "offset must be a number")
                return None
            try:
                check_number(off, "offset")
            except CheckError as exc:
                self.err(a.loc, exc.code, f"{a.field} {a.op}: {exc}")
                return None
            found = self.lookup(self.root, str(arg["field"]), a.loc)
            if found is None:
                return None
            ref_path, ref_fld = found
            kinds = {fld.type, ref_fld.type}
            numeric = kinds <= {"int", "number"}
            if not (
                numeric
                or (len(kinds) == 1 and off == 0 and fld.type in ("string", "bool"))
                or (fld.type == ref_fld.type == "enum" and fld.values == ref_fld.values and off == 0)
            ):
                self.err(
                    a.loc,
                    codes.CONDITION_TYPE,
                    f"compares {fld.describe()} field {a.field!r} to {ref_fld.describe()} field {arg['field']!r}",
                )
                return None
            if op.ordered and not numeric:
                self.err(a.loc, codes.CONDITION_TYPE, f"ordering needs int or number fields, not {fld.type}")
                return None
        else:
            if fld.type in ("object", "list") and not op.presence:
                self.err(
                    a.loc,
                    codes.CONDITION_TYPE,
                    f"{a.op} does not apply to {fld.describe()} field {a.field!r}"
                    " (use exists/null/absent, empty, or some/every)",
                )
                return None
            try:
                arg = op.check(fld.type, fld.values, arg)
            except CheckError as exc:
                self.err(a.loc, exc.code, f"{a.field or 'item'} {a.op}: {exc}")
                return None
            if op.set_operand and not arg:  # an empty list or set
                has_value = dataclasses.replace(a, op="exists", arg=True, fld=fld, path=path)
                if a.op == "not_in":  # "has a value, none of []" is "has a value"
                    return has_value
                return C.AllOf((has_value, dataclasses.replace(has_value, arg=False)), a.loc)  # never holds
            if a.op == "null" and arg and not fld.nullable:
                self.err(a.loc, codes.CONDITION_TYPE, f"{a.field!r} is not nullable; null: true never holds")
                return None
            if a.op == "absent" and arg and not in_item and not can_be_absent(self.root, path):
                self.err(
                    a.loc,
                    codes.CONDITION_TYPE,
                    f"{a.field!r} is required or has a default; absent: true never holds",
                )
                return None
        return dataclasses.replace(a, arg=arg, fld=fld, path=path, ref_path=ref_path, ref_fld=ref_fld)


def _maybe(name: str, known: Any) -> str:
    """`` (did you mean 'x'?)`` when a known name is close to ``name``, else nothing."""
    best = closest(name, known)
    return f" (did you mean {best!r}?)" if best else ""


def _check_template(ctx: Context, rule: _RuleDecl, key: str, text: str) -> Template:
    tpl, errors = parse_template(text)
    for e in errors:
        ctx.diags.append(rule.src.diag((*rule.path, key), codes.TEMPLATE_SYNTAX, e))
    assert ctx.schema is not None
    for part in tpl:
        if isinstance(part, tuple):
            kind, path, _ = part
            if kind == "set" and path[0] not in ctx.sets:
                ctx.diags.append(
                    rule.src.diag(
                        (*rule.path, key),
                        codes.TEMPLATE_UNKNOWN_SET,
                        f"placeholder {{@{path[0]}}} names no set{_maybe(path[0], ctx.sets)}",
                    )
                )
            if kind == "field":
                cur: FactField | None = ctx.schema.root
                for name in path:
                    listy = name.endswith("[]")
                    nxt = cur.fields.get(name[:-2] if listy else name) if cur and cur.type == "object" else None
                    if nxt is not None and listy:
                        nxt = nxt.items if nxt.type == "list" else None
                    if nxt is None:
                        ctx.diags.append(
                            rule.src.diag(
                                (*rule.path, key),
                                codes.TEMPLATE_UNKNOWN_FIELD,
                                f"placeholder {{{'.'.join(path)}}} is not a field of the fact schema"
                                + _maybe(
                                    name[:-2] if listy else name, cur.fields if cur and cur.type == "object" else ()
                                ),
                            )
                        )
                        break
                    cur = nxt
    return tpl


def stage_typecheck(ctx: Context) -> None:
    assert ctx.schema is not None
    chk = _Checker(ctx)
    root = ctx.schema.root
    for decl in ctx.conditions.values():  # unused named conditions are checked too
        if decl.cond is not None:
            decl.cond = chk.check(decl.cond, root, False)
    for stop in ctx.stops:
        if stop.cond is not None:
            stop.cond = chk.check(stop.cond, root, False)
    for rule in ctx.rules:
        if rule.cond is not None:
            rule.cond = chk.check(rule.cond, root, False)
        rule.message = _check_template(ctx, rule, "message", rule.spec.message)
        if rule.spec.review_reason is not None:
            rule.review_reason = _check_template(ctx, rule, "review_reason", rule.spec.review_reason)
    if not ctx.diags:
        ctx.checked = _checked_policy(ctx)


def _member_locs(decl: _Decl) -> tuple[C.Loc, ...]:
    """Where each member of a declared set is written (a mapping key or a list element)."""
    n = len(decl.path)
    out = []
    for member in decl.value:
        best: tuple[int, int, tuple[Any, ...]] | None = None
        for p, (line, _) in decl.src.marks.items():
            if p[:n] != decl.path or len(p) == n:
                continue
            named = p[-1] == member or (isinstance(p[-1], int) and _value_at(decl.src.data, p) == member)
            if named and (best is None or (line, len(p)) < best[:2]):
                best = (line, len(p), p)
        out.append(_loc(decl.src, best[2]) if best else decl.loc())
    return tuple(out)


def _value_at(data: Any, path: tuple[Any, ...]) -> Any:
    cur = data
    for p in path:
        try:
            cur = cur[p]
        except (KeyError, IndexError, TypeError):
            return None
    return cur


def _checked_policy(ctx: Context) -> CheckedPolicy:
    assert ctx.schema is not None
    sets = {}
    for name, d in ctx.sets.items():
        groups = (g for g, o in ctx.sets.items() if len(o.path) < len(d.path) and d.path[: len(o.path)] == o.path)
        within = next(groups, None)
        sets[name] = CheckedSet(name, tuple(d.value), d.loc(), _member_locs(d), str(d.path[0]), within)
    stops = tuple(
        CheckedStop(s.name, i, s.value.description, s.cond, s.loc(), s.loc(("when",)))  # type: ignore[arg-type]
        for i, s in enumerate(ctx.stops)
    )
    ctx.declarations.setdefault("high_risk_stops", {s.id: s.description for s in stops})
    return CheckedPolicy(
        root=str(ctx.root),
        name=ctx.name,
        digest=ctx.digest,
        files=tuple(src.name for src, _ in ctx.files),
        loc=_loc(ctx.files[0][0], ()),
        schema=ctx.schema,
        schema_loc=ctx.schema_decl.loc() if ctx.schema_decl else None,
        field_locs=MappingProxyType(dict(ctx.field_locs)),
        rules=tuple(
            CheckedRule(
                r.id,
                i,
                r.spec.priority,
                r.spec.verdict,
                r.spec.reason,
                r.cond,  # type: ignore[arg-type]
                r.message,
                r.review_reason,
                _loc(r.src, r.path),
                _loc(r.src, (*r.path, "when")),
                r.spec.description,
            )
            for i, r in enumerate(ctx.rules)
        ),
        stops=stops,
        sets=MappingProxyType(sets),
        conditions=MappingProxyType(
            {name: NamedCondition(name, d.cond, d.loc()) for name, d in ctx.conditions.items()}  # type: ignore[arg-type]
        ),
        verdicts=MappingProxyType(
            {
                name: CheckedVerdict(
                    name,
                    d.value.ok,
                    d.value.stop,
                    d.value.requires_user_review,
                    d.value.retryable,
                    d.value.description,
                    d.loc(),
                )
                for name, d in ctx.verdicts.items()
            }
        ),
        declarations=MappingProxyType(ctx.declarations),
        inventory=MappingProxyType(_inventory(ctx)),
    )


def _schema_fields(fields: dict[str, Any], prefix: str, out: dict[str, Any]) -> None:
    for name, spec in fields.items():
        path = f"{prefix}{name}"
        if not isinstance(spec, dict):
            out[path] = spec
            continue
        out[path] = {k: v for k, v in spec.items() if k not in ("fields", "items")}
        if isinstance(spec.get("fields"), dict):
            _schema_fields(spec["fields"], path + ".", out)
        items = spec.get("items")
        if isinstance(items, dict):
            out[path + "[]"] = {k: v for k, v in items.items() if k != "fields"}
            if isinstance(items.get("fields"), dict):
                _schema_fields(items["fields"], path + "[].", out)


def _inventory(ctx: Context) -> dict[str, dict[str, Any]]:
    """``section -> name -> value`` for everything the pack declares, generic over the format:
    mappings by key, lists of entries by ``id`` (rules by pack-wide id), the schema by field path."""
    rule_ids = {(r.src.name, r.path[1]): r.id for r in ctx.rules}
    out: dict[str, dict[str, Any]] = {}
    for src, _ in ctx.files:
        data = src.data if isinstance(src.data, dict) else {}
        for section, value in data.items():
            table = out.setdefault(section, {})
            if section == "schema" and isinstance(value, dict):
                for k, v in value.items():
                    if k != "fields":
                        table[k] = v
                _schema_fields(value.get("fields") or {}, "", table)
            elif isinstance(value, dict):
                table.update(value)
            elif isinstance(value, list):
                for i, item in enumerate(value):
                    name = item.get("id") if isinstance(item, dict) else None
                    table[rule_ids.get((src.name, i), str(name) if name is not None else str(i))] = item
            else:
                table[section] = value
    return out


STAGES: list[tuple[str, Callable[[Context], None]]] = [
    ("load", stage_load),
    ("resolve", stage_resolve),
    ("typecheck", stage_typecheck),
]


def run(root: Path | str, until: str | None, stages: list[tuple[str, Callable[[Context], None]]] = STAGES) -> Context:
    """Run ``stages`` over the pack at ``root`` up to and including ``until`` (all by default);
    raise :class:`PolicyError` after the first stage with diagnostics."""
    names = [n for n, _ in stages]
    if until is not None and until not in names:
        raise ValueError(f"unknown stage {until!r}; stages: {', '.join(names)}")
    ctx = Context(Path(root))
    if not ctx.root.is_dir():
        raise PolicyError([Diagnostic(str(root), 1, 1, codes.PACK_NOT_FOUND, "policy pack directory does not exist")])
    for name, stage in stages:
        stage(ctx)
        if ctx.diags:
            raise PolicyError(ctx.diags)
        if name == until:
            break
    return ctx


def check_pack(root: Path | str) -> CheckedPolicy:
    """Load, resolve and type-check the pack at ``root``; raise :class:`PolicyError` on diagnostics."""
    checked = run(root, None).checked
    assert checked is not None
    return checked
