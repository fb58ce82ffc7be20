"""Compile a pack into durable_rules rulesets: a list of named stages.

    load       read YAML with locations, validate each file's structure, merge sections
    resolve    named conditions, sets, high-risk stops and verdicts by name; cycles
    typecheck  fields, operators and literals against the fact schema; templates
    lower      conditions -> durable_rules JSON over a projected fact
    build      chunk into rulesets and create them in the engine

The compiler stops after the first stage that reports a diagnostic; ``until=``
runs it up to (and including) one stage.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import conditions as C
from .compiled import CompiledPolicy, ListSlot, RuleMeta, Slot, StopMeta, VerdictMeta
from .diagnostics import Diagnostic, PolicyError
from .model import FieldSpec, PackFile, RuleSpec, parse_file
from .operators import OPERATORS, CheckError
from .schema import FactField, FactSchema, can_be_absent
from .simplify import QuantifierError, dnf_size, simplify, split_quantifiers
from .source import SourceFile, read_pack
from .templates import Template, parse_template

__all__ = ["STAGES", "CompileContext", "compile_pack"]

RULES_PER_RULESET = 64
ENGINE_PRI_MAX = 65535
MAX_DNF = 4096
Json = dict[str, Any]


@dataclass
class Decl:
    """Something declared in a pack, with where it was declared."""

    name: str
    src: SourceFile
    path: tuple
    value: Any = None

    def diag(self, code: str, msg: str, sub: tuple = ()) -> Diagnostic:
        return self.src.diag((*self.path, *sub), code, msg)


@dataclass
class RuleDecl:
    id: str
    spec: RuleSpec
    src: SourceFile
    path: tuple
    cond: C.Cond | None = None
    message: Template = ()
    review_reason: Template | None = None


@dataclass
class CompileContext:
    root: Path
    diags: list[Diagnostic] = field(default_factory=list)
    files: list[tuple[SourceFile, PackFile]] = field(default_factory=list)
    raw_key: str = ""
    digest: str = ""
    name: str = ""
    schema: FactSchema | None = None
    schema_decl: Decl | None = None
    sets: dict[str, Decl] = field(default_factory=dict)
    conditions: dict[str, Decl] = field(default_factory=dict)
    verdicts: dict[str, Decl] = field(default_factory=dict)
    stops: list[Decl] = field(default_factory=list)
    rules: list[RuleDecl] = field(default_factory=list)
    declarations: dict[str, Any] = field(default_factory=dict)
    named: dict[str, C.Cond] = field(default_factory=dict)
    lowered: list[tuple[str, Json]] = field(default_factory=list)
    slots: dict[tuple[str, ...], Slot] = field(default_factory=dict)
    lists: dict[tuple[str, ...], ListSlot] = field(default_factory=dict)
    compiled: CompiledPolicy | None = None


# ---------------------------------------------------------------- load


def _build_field(name: str, spec: FieldSpec, decl: Decl, path: tuple, diags: list, item: bool = False) -> FactField:
    def err(code: str, msg: str, sub: tuple = ()) -> None:
        diags.append(decl.src.diag((*path, *sub), code, msg))

    if not item and (name in C.RESERVED or not name or any(ch in name for ch in ".[]{}@ ")):
        err("schema.bad_name", f"field name {name!r} is reserved or contains . [ ] {{ }} @ or space")
    items = None
    children: dict[str, FactField] = {}
    if spec.type == "enum" and not spec.values:
        err("schema.enum_values", "an enum needs a non-empty values: list")
    if spec.type != "enum" and spec.values is not None:
        err("schema.unexpected", "values: only applies to enum fields", ("values",))
    if spec.type == "list":
        if spec.items is None:
            err("schema.list_items", "a list needs items: (the element type)")
        else:
            items = _build_field("", spec.items, decl, (*path, "items"), diags, item=True)
    elif spec.items is not None:
        err("schema.unexpected", "items: only applies to list fields", ("items",))
    if spec.type == "object":
        if not spec.fields:
            err("schema.object_fields", "an object needs fields:")
        for cname, cspec in (spec.fields or {}).items():
            children[cname] = _build_field(cname, cspec, decl, (*path, "fields", cname), diags)
    elif spec.fields is not None:
        err("schema.unexpected", "fields: only applies to object fields", ("fields",))
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
    if f.has_default:
        try:
            # normalised as a fact value would be: an object default gets its children's defaults
            f.default = FactSchema(FactField("", "object")).check_value(f, f.default)
        except Exception as exc:  # FactError: default does not fit the type
            err("schema.default", f"default does not fit the field: {exc}", ("default",))
    if f.required and f.has_default:
        err("schema.unexpected", "a required field cannot have a default", ("default",))
    return f


def _check_object(obj: FactField, srcs: dict[str, SourceFile], path: tuple, diags: list) -> None:
    """Alias clashes and required_if targets; ``srcs`` says which file declares each field."""
    seen: dict[str, str] = {}
    for name, f in obj.fields.items():
        src = srcs[name]
        for alias in (name, *f.aliases):
            if alias in seen and seen[alias] != name:
                diags.append(
                    src.diag(
                        (*path, name, "aliases"),
                        "schema.alias",
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
                        "schema.required_if",
                        f"required_if must name a bool field beside it, not {f.required_if!r}",
                    )
                )
        if f.type == "object":
            _check_object(f, dict.fromkeys(f.fields, src), (*path, name, "fields"), diags)


def stage_load(ctx: CompileContext) -> None:
    source = read_pack(ctx.root, ctx.diags)
    ctx.raw_key = source.raw_key
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
            decl = Decl("schema", src, ("schema",))
            if ctx.schema_decl is None:
                ctx.schema_decl = decl
            if "additional_fields" in pf.fact_schema.model_fields_set:
                additional = pf.fact_schema.additional_fields
            for name, spec in pf.fact_schema.fields.items():
                path = ("schema", "fields", name)
                if name in fields:
                    ctx.diags.append(src.diag(path, "duplicate.field", f"field {name!r} declared twice"))
                    continue
                fields[name] = _build_field(name, spec, decl, path, ctx.diags)
                field_src[name] = src
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
                ctx.sets["blocker_categories"] = Decl("blocker_categories", src, ("blocker_categories",), members)
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
            if any(d.name == stop.id for d in ctx.stops):
                ctx.diags.append(
                    src.diag(
                        (*path, "id"),
                        "duplicate.high_risk_stop",
                        f"high-risk stop {stop.id!r} declared twice",
                    )
                )
            ctx.stops.append(Decl(stop.id, src, path, stop))
        for i, rule in enumerate(pf.rules):
            rid = f"{stem}.{rule.id}"
            if any(r.id == rid for r in ctx.rules):
                ctx.diags.append(src.diag(("rules", i, "id"), "duplicate.rule", f"rule id {rid!r} is not unique"))
            ctx.rules.append(RuleDecl(rid, rule, src, ("rules", i)))
    root = FactField("", "object", fields=fields, additional=additional)
    _check_object(root, field_src, ("schema", "fields"), ctx.diags)
    ctx.schema = FactSchema(root)
    if not ctx.rules and not ctx.diags:
        src0 = ctx.files[0][0] if ctx.files else SourceFile(str(ctx.root), {})
        ctx.diags.append(src0.diag((), "pack.no_rules", "the pack declares no rules"))


def _declare(ctx: CompileContext, table: dict, name: str, src: SourceFile, path: tuple, value: Any, kind: str) -> None:
    if name in table:
        prev = table[name]
        ctx.diags.append(src.diag(path, f"duplicate.{kind}", f"{kind} {name!r} already declared in {prev.src.name}"))
        return
    table[name] = Decl(name, src, path, value)


# ---------------------------------------------------------------- resolve


class _Resolver:
    def __init__(self, ctx: CompileContext) -> None:
        self.ctx = ctx
        self.parsed: dict[str, C.Cond | None] = {}
        self.done: dict[str, C.Cond | None] = {}
        self.stack: list[str] = []
        self.stop_conds: list[C.Cond] = []
        self.in_stops = False

    def err(self, loc: C.Loc, code: str, msg: str) -> None:
        self.ctx.diags.append(Diagnostic(loc.file, loc.line, loc.column, code, msg, loc.path))

    def named(self, name: str, loc: C.Loc) -> C.Cond | None:
        if name in self.done:
            return self.done[name]
        decl = self.ctx.conditions.get(name)
        if decl is None:
            known = ", ".join(sorted(self.ctx.conditions)) or "none declared"
            self.err(loc, "condition.unknown", f"unknown condition {name!r} (known: {known})")
            return None
        if name in self.stack:
            cycle = " -> ".join([*self.stack[self.stack.index(name) :], name])
            self.err(loc, "condition.cycle", f"named conditions refer to each other: {cycle}")
            return None
        if name not in self.parsed:
            self.parsed[name] = C.parse_condition(decl.src, decl.value, decl.path, self.ctx.diags)
        self.stack.append(name)
        out = self.walk(self.parsed[name]) if self.parsed[name] is not None else None
        self.stack.pop()
        self.done[name] = out
        return out

    def walk(self, c: C.Cond) -> C.Cond | None:
        if isinstance(c, C.Ref):
            return self.named(c.name, c.loc)
        if isinstance(c, C.HighRisk):
            if self.in_stops:
                self.err(c.loc, "high_risk_stop.recursive", "a high-risk stop's condition cannot use high_risk_stop")
                return None
            if not self.stop_conds:
                self.err(c.loc, "high_risk_stop.none", "the pack declares no high-risk stops")
                return None
            anyc = C.AnyOf(tuple(self.stop_conds), c.loc)
            return anyc if c.want else C.Not(anyc, c.loc)
        if isinstance(c, (C.AllOf, C.AnyOf)):
            items = [self.walk(i) for i in c.items]
            return None if None in items else type(c)(tuple(items), c.loc)  # type: ignore
        if isinstance(c, C.Not):
            inner = self.walk(c.item)
            return None if inner is None else C.Not(inner, c.loc)
        if isinstance(c, C.Quant):
            inner = self.walk(c.where)
            return None if inner is None else dataclasses.replace(c, where=inner)
        if isinstance(c, C.Atom) and c.op in ("in", "not_in") and isinstance(c.arg, str):
            decl = self.ctx.sets.get(c.arg)
            if decl is None:
                known = ", ".join(sorted(self.ctx.sets)) or "none declared"
                self.err(c.loc, "set.unknown", f"unknown set {c.arg!r} (known: {known})")
                return None
            return dataclasses.replace(c, arg=tuple(decl.value))
        return c


def stage_resolve(ctx: CompileContext) -> None:
    r = _Resolver(ctx)
    # high-risk stops first: `high_risk_stop:` anywhere else means "any of them"
    r.in_stops = True
    stop_conds = []
    for stop in ctx.stops:
        cond = C.parse_condition(stop.src, stop.value.when, (*stop.path, "when"), ctx.diags)
        resolved = r.walk(cond) if cond is not None else None
        stop.value = (stop.value, resolved)
        if resolved is not None:
            stop_conds.append(resolved)
    r.in_stops = False
    r.stop_conds = stop_conds
    for name in ctx.conditions:
        r.named(name, C.Loc(ctx.conditions[name].src.name, 1, 1, ""))
    ctx.named = {k: v for k, v in r.done.items() if v is not None}
    for rule in ctx.rules:
        cond = C.parse_condition(rule.src, rule.spec.when, (*rule.path, "when"), ctx.diags)
        rule.cond = r.walk(cond) if cond is not None else None
        if rule.spec.verdict not in ctx.verdicts:
            known = ", ".join(sorted(ctx.verdicts)) or "none declared"
            ctx.diags.append(
                rule.src.diag(
                    (*rule.path, "verdict"),
                    "verdict.unknown",
                    f"unknown verdict {rule.spec.verdict!r} (known: {known})",
                )
            )


# ---------------------------------------------------------------- typecheck


class _Checker:
    def __init__(self, ctx: CompileContext) -> None:
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
                    "field.unknown",
                    f"{'.'.join(names)} is a {cur.type}, it has no field {part!r}",
                )
                return None
            name = cur.lookup.get(part)
            if name is None:
                known = ", ".join(sorted(cur.fields)) or "none"
                where = f" of {'.'.join(names)}" if names else ""
                self.err(loc, "field.unknown", f"unknown field {part!r}{where} (known: {known})")
                return None
            names.append(name)
            cur = cur.fields[name]
        return tuple(names), cur

    def check(self, c: C.Cond, scope: FactField, in_item: bool) -> C.Cond | None:
        if isinstance(c, (C.AllOf, C.AnyOf)):
            items = [self.check(i, scope, in_item) for i in c.items]
            return None if None in items else type(c)(tuple(items), c.loc)  # type: ignore
        if isinstance(c, C.Not):
            inner = self.check(c.item, scope, in_item)
            return None if inner is None else C.Not(inner, c.loc)
        if isinstance(c, C.Const):
            if in_item:
                self.err(c.loc, "condition.syntax", "true/false cannot appear inside where:")
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
                    "condition.type",
                    f"{c.kind}: needs a list field, {c.field!r} is {fld.describe()}",
                )
                return None
            if in_item:
                self.err(c.loc, "condition.nested_list", "lists inside list items cannot be quantified")
                return None
            inner = self.check(c.where, fld.items, True)
            return None if inner is None else dataclasses.replace(c, where=inner, fld=fld, path=path)
        if isinstance(c, C.Atom):
            return self.atom(c, scope, in_item)
        raise AssertionError(c)

    def atom(self, a: C.Atom, scope: FactField, in_item: bool) -> C.Cond | None:
        if a.field == "":
            if not in_item or scope.type in ("object", "list"):
                self.err(a.loc, "field.unknown", "a condition needs a field name")
                return None
            path, fld = (), scope
        else:
            found = self.lookup(scope, a.field, a.loc)
            if found is None:
                return None
            path, fld = found
        if in_item and fld.type == "list":
            self.err(
                a.loc,
                "condition.nested_list",
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
                    "condition.syntax",
                    f"{a.op}: takes a value" + (" or {field: NAME, offset: N}" if op.field_operand else ""),
                )
                return None
            if in_item:
                self.err(a.loc, "condition.syntax", "field operands are not supported inside where:")
                return None
            off = arg.get("offset", 0)
            if type(off) not in (int, float):
                self.err(a.loc, "condition.type", "offset must be a number")
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
                    "condition.type",
                    f"compares {fld.describe()} field {a.field!r} to {ref_fld.describe()} field {arg['field']!r}",
                )
                return None
            if a.op in ("lt", "lte", "gt", "gte") and not numeric:
                self.err(a.loc, "condition.type", f"ordering needs int or number fields, not {fld.type}")
                return None
        else:
            if fld.type in ("object", "list") and not op.presence:
                self.err(
                    a.loc,
                    "condition.type",
                    f"{a.op} does not apply to {fld.describe()} field {a.field!r}"
                    " (use exists/null/absent, empty, or some/every)",
                )
                return None
            try:
                arg = op.check(fld.type, fld.values, arg)
            except CheckError as exc:
                self.err(a.loc, "condition.type", f"{a.field or 'item'} {a.op}: {exc}")
                return None
            if a.op in ("in", "not_in") and not arg:  # an empty list or set
                has_value = dataclasses.replace(a, op="exists", arg=True, fld=fld, path=path)
                if a.op == "not_in":  # "has a value, none of []" is "has a value"
                    return has_value
                return C.AllOf((has_value, dataclasses.replace(has_value, arg=False)), a.loc)  # never holds
            if a.op == "null" and arg and not fld.nullable:
                self.err(a.loc, "condition.type", f"{a.field!r} is not nullable; null: true never holds")
                return None
            if a.op == "absent" and arg and not in_item and not can_be_absent(self.root, path):
                self.err(
                    a.loc,
                    "condition.type",
                    f"{a.field!r} is required or has a default; absent: true never holds",
                )
                return None
        return dataclasses.replace(a, arg=arg, fld=fld, path=path, ref_path=ref_path, ref_fld=ref_fld)


def _check_template(ctx: CompileContext, rule: RuleDecl, key: str, text: str) -> Template:
    tpl, errors = parse_template(text)
    for e in errors:
        ctx.diags.append(rule.src.diag((*rule.path, key), "template.syntax", e))
    assert ctx.schema is not None
    for part in tpl:
        if isinstance(part, tuple):
            kind, path, _ = part
            if kind == "set" and path[0] not in ctx.sets:
                ctx.diags.append(
                    rule.src.diag(
                        (*rule.path, key),
                        "template.unknown_set",
                        f"placeholder {{@{path[0]}}} names no set",
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
                                "template.unknown_field",
                                f"placeholder {{{'.'.join(path)}}} is not a field of the fact schema",
                            )
                        )
                        break
                    cur = nxt
    return tpl


def stage_typecheck(ctx: CompileContext) -> None:
    assert ctx.schema is not None
    chk = _Checker(ctx)
    for name, cond in ctx.named.items():  # unused named conditions are checked too
        checked = chk.check(cond, ctx.schema.root, False)
        if checked is not None:
            ctx.named[name] = checked
    for stop in ctx.stops:
        spec, cond = stop.value
        stop.value = (spec, chk.check(cond, ctx.schema.root, False) if cond is not None else None)
    for rule in ctx.rules:
        if rule.cond is not None:
            rule.cond = chk.check(rule.cond, ctx.schema.root, False)
        rule.message = _check_template(ctx, rule, "message", rule.spec.message)
        if rule.spec.review_reason is not None:
            rule.review_reason = _check_template(ctx, rule, "review_reason", rule.spec.review_reason)


# ---------------------------------------------------------------- lower


class _Lowerer:
    """Conditions -> engine JSON in negation normal form over projected keys."""

    def __init__(self, ctx: CompileContext) -> None:
        self.ctx = ctx
        assert ctx.schema is not None
        self.root = ctx.schema.root

    def slot(self, path: tuple[str, ...], fld: FactField) -> str:
        s = self.ctx.slots.get(path)
        if s is None:
            s = Slot(f"f{len(self.ctx.slots)}", path, fld.type in ("object", "list"))
            self.ctx.slots[path] = s
        return s.key

    def list_slot(self, path: tuple[str, ...], fld: FactField) -> ListSlot:
        ls = self.ctx.lists.get(path)
        if ls is None:
            n = len(self.ctx.lists)
            assert fld.items is not None
            ls = ListSlot(f"l{n}", f"n{n}", path, fld.items.type != "object")
            self.ctx.lists[path] = ls
        return ls

    def item_key(self, list_path: tuple[str, ...], path: tuple[str, ...]) -> str:
        ls = self.ctx.lists[list_path]  # always the current slot: it is replaced as items are added
        if ls.scalar:
            return "$i"
        for s in ls.item_slots:
            if s.path == path:
                return "$i." + s.key
        s = Slot(f"g{len(ls.item_slots)}", path)
        new = ls._replace(item_slots=(*ls.item_slots, s))
        self.ctx.lists[ls.path] = new
        return "$i." + s.key

    def missing(self, key: str, absent: bool, nullable: bool) -> list[Json]:
        out: list[Json] = []
        if absent:
            out.append({"$nex": {key: 1}})
        if nullable:
            out.append({key: None})
        return out

    def lower(self, c: C.Cond, neg: bool, ls: ListSlot | None) -> Json:
        if isinstance(c, C.Const):
            return {"_": 1 if c.value != neg else 0}
        if isinstance(c, C.Not):
            return self.lower(c.item, not neg, ls)
        if isinstance(c, (C.AllOf, C.AnyOf)):
            parts = [self.lower(i, neg, ls) for i in c.items]
            conj = isinstance(c, C.AllOf) != neg
            if len(parts) == 1:
                return parts[0]
            return {"$and": parts} if conj else {"$or": parts}
        if isinstance(c, C.Quant):
            inner = self.lower(c.where, neg, self.list_slot(c.path, c.fld))
            inner_ls = self.ctx.lists[c.path]  # item slots were added while lowering ``where``
            exists_some = (c.kind == "some") != neg
            if exists_some:
                return {"$iany": {inner_ls.key: inner}}
            return {"$or": [{inner_ls.len_key: 0}, {"$iall": {inner_ls.key: inner}}]}
        assert isinstance(c, C.Atom)
        return self.atom(c, neg, ls)

    def atom(self, a: C.Atom, neg: bool, ls: ListSlot | None) -> Json:
        fld: FactField = a.fld
        if ls is None:
            key = self.slot(a.path, fld)
            absent = can_be_absent(self.root, a.path)
        else:
            key = self.item_key(ls.path, a.path) if a.path else "$i"
            absent = bool(a.path)
        nullable = fld.nullable
        missing = self.missing(key, absent, nullable)
        op = OPERATORS[a.op]
        if op.presence:
            return self.presence(a, key, neg, missing, fld)
        value: Any = a.arg
        guards: list[Json] = []
        if a.ref_path is not None:
            rkey = self.slot(a.ref_path, a.ref_fld)
            off = a.arg.get("offset", 0)
            value = {"$m": rkey}
            if off:
                value = {"$add" if off > 0 else "$sub": {"$l": {"$m": rkey}, "$r": abs(off)}}
            guards = [{"$neq": {key: None}}, {"$neq": {rkey: None}}]
            missing += self.missing(rkey, can_be_absent(self.root, a.ref_path), a.ref_fld.nullable)
        pos, negc = op.lower(key, value)
        if not neg:
            return {"$and": [pos, *guards]} if guards else pos
        if negc is None:
            loc = a.loc
            self.ctx.diags.append(
                Diagnostic(
                    loc.file,
                    loc.line,
                    loc.column,
                    "condition.unsupported",
                    f"{a.op} cannot be negated (the engine has no negated match)",
                    loc.path,
                )
            )
            return {"_": 0}
        return {"$or": [negc, *missing]} if missing else negc

    def presence(self, a: C.Atom, key: str, neg: bool, missing: list[Json], fld: FactField) -> Json:
        want = a.arg != neg
        if a.op == "empty":
            ls = self.list_slot(a.path, fld)
            return {ls.len_key: 0} if want else {"$gt": {ls.len_key: 0}}
        if a.op == "absent":
            return {"$nex": {key: 1}} if want else {"$ex": {key: 1}}
        if a.op == "null":
            return {key: None} if want else {"$or": [{"$neq": {key: None}}, {"$nex": {key: 1}}]}
        # exists: present and not null
        if want:
            return {"$neq": {key: None}}
        return ({"$or": missing} if len(missing) > 1 else missing[0]) if missing else {"$nex": {key: 1}}


def stage_lower(ctx: CompileContext) -> None:
    low = _Lowerer(ctx)

    def body(cond: C.Cond, src: SourceFile, path: tuple) -> Json:
        try:
            lowered = split_quantifiers(simplify(low.lower(cond, False, None)))
        except QuantifierError as exc:
            ctx.diags.append(src.diag(path, "condition.unsupported", f"{exc} is not supported by the engine"))
            lowered = {"_": 0}
        # the always-present key anchors every alternative: one made only of `$nex` tests
        # would otherwise match any fact
        out = simplify({"$and": [{"_": 1}, lowered]})
        out = out if "$and" in out else {"$and": [out]}
        if dnf_size(out) > MAX_DNF:
            ctx.diags.append(
                src.diag(
                    path,
                    "condition.too_complex",
                    f"expands to {dnf_size(out)} alternatives in the engine (limit {MAX_DNF}); split the rule",
                )
            )
        return out

    for i, stop in enumerate(ctx.stops):
        spec, cond = stop.value
        m = body(cond, stop.src, (*stop.path, "when"))
        ctx.lowered.append((f"h{i}", {"all": [{"m": m}]}))
    for i, rule in enumerate(ctx.rules):
        assert rule.cond is not None
        m = body(rule.cond, rule.src, (*rule.path, "when"))
        pri = ENGINE_PRI_MAX - rule.spec.priority
        ctx.lowered.append((f"r{i}", {"all": [{"m": m}], "pri": pri}))
    _prune_slots(ctx)


def _used_keys(node: Any, out: set[str]) -> set[str]:
    """Every fact key the lowered JSON reads (``$i.`` prefixes stripped)."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "$m":
                out.add(v)
            elif not k.startswith("$") or k.startswith("$i."):
                out.add(k.removeprefix("$i."))
            _used_keys(v, out)
    elif isinstance(node, list):
        for v in node:
            _used_keys(v, out)
    return out


def _prune_slots(ctx: CompileContext) -> None:
    """Project only what the final rules read: simplification can drop conditions."""
    used = _used_keys([body for _, body in ctx.lowered], set())
    ctx.slots = {p: s for p, s in ctx.slots.items() if s.key in used}
    ctx.lists = {
        p: ls._replace(items=ls.key in used, item_slots=tuple(s for s in ls.item_slots if s.key in used))
        for p, ls in ctx.lists.items()
        if ls.key in used or ls.len_key in used
    }


# ---------------------------------------------------------------- build


def stage_build(ctx: CompileContext) -> None:
    from .engine import check_rulesets

    chunks: list[Json] = []
    for i in range(0, len(ctx.lowered), RULES_PER_RULESET):
        chunks.append(dict(ctx.lowered[i : i + RULES_PER_RULESET]))
    problem = check_rulesets(chunks)
    if problem:
        src = ctx.files[0][0]
        ctx.diags.append(src.diag((), "engine.rejected", problem))
        return
    assert ctx.schema is not None
    verdicts = {
        name: VerdictMeta(
            name,
            d.value.ok,
            d.value.stop,
            d.value.requires_user_review,
            d.value.retryable,
            d.value.description,
        )
        for name, d in ctx.verdicts.items()
    }
    rules = tuple(
        RuleMeta(
            r.id,
            i,
            r.spec.priority,
            r.spec.verdict,
            r.spec.reason,
            r.message,
            r.review_reason,
            r.src.name,
            r.src.where(r.path)[0],
            f"r{i}",
        )
        for i, r in enumerate(ctx.rules)
    )
    stops = tuple(
        StopMeta(s.name, s.value[0].description, s.src.name, s.src.where(s.path)[0], f"h{i}")
        for i, s in enumerate(ctx.stops)
    )
    ctx.declarations.setdefault("high_risk_stops", {s.id: s.description for s in stops})
    ctx.compiled = CompiledPolicy(
        name=ctx.name,
        digest=ctx.digest,
        files=tuple(src.name for src, _ in ctx.files),
        schema=ctx.schema,
        slots=tuple(ctx.slots.values()),
        lists=tuple(ctx.lists.values()),
        rulesets=tuple(chunks),
        rules=rules,
        stops=stops,
        verdicts=verdicts,
        sets={name: tuple(d.value) for name, d in ctx.sets.items()},
        declarations=ctx.declarations,
    )


STAGES: list[tuple[str, Callable[[CompileContext], None]]] = [
    ("load", stage_load),
    ("resolve", stage_resolve),
    ("typecheck", stage_typecheck),
    ("lower", stage_lower),
    ("build", stage_build),
]


def compile_pack(root: Path | str, *, until: str | None = None) -> CompileContext:
    """Run the stages over the pack at ``root``; raise :class:`PolicyError` on diagnostics."""
    names = [n for n, _ in STAGES]
    if until is not None and until not in names:
        raise ValueError(f"unknown stage {until!r}; stages: {', '.join(names)}")
    ctx = CompileContext(Path(root))
    if not ctx.root.is_dir():
        raise PolicyError([Diagnostic(str(root), 1, 1, "pack.not_found", "policy pack directory does not exist")])
    for name, stage in STAGES:
        stage(ctx)
        if ctx.diags:
            raise PolicyError(ctx.diags)
        if name == until:
            break
    return ctx
