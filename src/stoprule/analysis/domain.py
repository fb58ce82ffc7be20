"""The finite abstraction of a fact domain: variables whose values are concrete witnesses.

:func:`build_space` reads the conditions it is given and makes one variable per
thing they can tell apart:

- an **object** on the path of anything read: absent / null / present (as allowed);
- a **scalar** (bool, enum, string): absent / null where allowed, every bool and
  enum value, and for strings each literal the conditions mention plus witnesses
  of the other classes (:mod:`.strings`); strings compared with each other for
  equality share one pool, and later fields of such a group may take an earlier
  field's witness or the next fresh one, so every equality pattern appears once;
- numbers read together (``turn >= max_turns - 2``) form **one** variable whose
  values are the consistent regions of :mod:`.numeric`, per presence pattern;
- a **list**: absent / null / ``[]`` where allowed, and one value per combination
  of quantifier outcomes that some set of elements realises. Elements are
  grouped by which ``where`` conditions they satisfy (computed on concrete
  candidate elements), and a list is summarised by the OR (``some``) and AND
  (``every``) of its elements' outcomes.

A child's values depend on its parent object (absent or null parents make it
absent), on a ``required_if`` flag, and for string groups on earlier members:
:meth:`Space.domain` gives the values allowed under an assignment of those.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from stoprule.analysis.formula import FALSE, TRUE, Store
from stoprule.analysis.numeric import regions
from stoprule.analysis.strings import string_classes
from stoprule.analysis.values import (
    Reads,
    field_at,
    fill_required,
    number_value,
    scalar_candidates,
    set_path,
    subtree_candidates,
    valid_item,
)
from stoprule.diagnostics import AnalysisLimit
from stoprule.engine.interpret import evaluate
from stoprule.facts.schema import MISSING, FactField, can_be_absent
from stoprule.language import conditions as C
from stoprule.language.operators import OPERATORS

__all__ = ["Space", "Value", "Var", "build_space", "cond_key"]

Path = tuple[str, ...]
MAX_LIST_SHAPES = 4096


@dataclass(frozen=True)
class Value:
    """One abstract value: its witness (``data``), as the rules see it (``norm``), weight and cost."""

    label: str
    data: Any
    norm: Any = None
    weight: int = 1
    cost: int = 0
    fresh: tuple[int, int] | None = None  # (class, index) of a non-literal string witness


@dataclass
class Var:
    name: str
    kind: str  # object | scalar | list | numbers
    paths: tuple[Path, ...]
    values: list[Value]
    deps: tuple[int, ...] = ()
    group: tuple[int, ...] = ()  # earlier members of a string equality group


def cond_key(c: C.Cond) -> tuple[Any, ...]:
    """A structural key for a condition, ignoring source locations."""
    if isinstance(c, C.Const):
        return ("c", c.value)
    if isinstance(c, C.Atom):
        return ("a", c.path, c.op, json.dumps(c.arg, sort_keys=True, default=list), c.ref_path)
    if isinstance(c, C.Quant):
        return ("q", c.kind, c.path, cond_key(c.where))
    if isinstance(c, C.Not):
        return ("n", cond_key(c.item))
    if isinstance(c, (C.AllOf, C.AnyOf)):
        return ("&" if isinstance(c, C.AllOf) else "|", tuple(cond_key(i) for i in c.items))
    assert isinstance(c, (C.Ref, C.HighRisk)) and c.body is not None
    return cond_key(c.body)  # a resolved reference means its body


def _status(x: Any) -> str:
    return "absent" if x is MISSING else "null" if x is None else "value"


def _show(x: Any) -> str:
    return "absent" if x is MISSING else json.dumps(x)


class _Reads:
    """What a set of conditions reads, outside list elements."""

    def __init__(self, root: FactField) -> None:
        self.root = root
        self.order: list[Path] = []  # first-read order
        self.scalars: dict[Path, Reads] = {}
        self.objects: set[Path] = set()
        self.lists: dict[Path, dict[tuple[Any, ...], C.Quant]] = {}
        self.quant_kinds: dict[Path, dict[tuple[Any, ...], list[C.Quant]]] = {}
        self.links: list[tuple[Path, Path]] = []
        self.prims: list[tuple[Path, Path | None, Fraction]] = []

    def see(self, path: Path) -> None:
        if path not in self.order:
            self.order.append(path)

    def walk(self, c: C.Cond) -> None:
        if isinstance(c, C.Quant):
            self.see(c.path)
            self.lists.setdefault(c.path, {}).setdefault(cond_key(c.where), c)
            self.quant_kinds.setdefault(c.path, {}).setdefault(cond_key(c.where), []).append(c)
        elif isinstance(c, C.Atom):
            self.atom(c)
        else:
            for child in C.children(c):
                self.walk(child)

    def atom(self, a: C.Atom) -> None:
        f = field_at(self.root, a.path)
        self.see(a.path)
        if f.type == "object":
            self.objects.add(a.path)
            return
        if f.type == "list":
            self.lists.setdefault(a.path, {})
            return
        self.scalars.setdefault(a.path, Reads()).add_atom(a)
        numeric = f.type in ("int", "number")
        if a.ref_path is not None:
            self.see(a.ref_path)
            self.scalars.setdefault(a.ref_path, Reads())
            self.links.append((a.path, a.ref_path))
            if numeric:
                self.prims.append((a.path, a.ref_path, Fraction(a.arg.get("offset", 0))))
        elif numeric:
            for x in OPERATORS[a.op].reads(a.arg)[0]:
                self.prims.append((a.path, None, Fraction(x)))


class Space:
    """Variables in exploration order, their allowed values, and formulas over them."""

    def __init__(self, root: FactField) -> None:
        self.root = root
        self.vars: list[Var] = []
        self.var_of: dict[Path, int] = {}
        self.store: Store = Store([])
        self._masks: dict[tuple[Any, ...], int] = {}
        self.plan: tuple[Any, ...] | None = None  # cached by the explorer
        self._domains: dict[tuple[Any, ...], tuple[int, ...]] = {}

    # ------------------------------------------------------------ domains

    def _allowed(self, path: Path, ctx: dict[int, int]) -> tuple[set[str], bool]:
        """Statuses ``path`` may have under ``ctx``, and whether it must be a non-empty string."""
        if len(path) > 1:
            pv = self.vars[self.var_of[path[:-1]]]
            if _status(pv.values[ctx[self.var_of[path[:-1]]]].data) != "value":
                return {"absent"}, False
        f = field_at(self.root, path)
        out = {"value"}
        if f.may_be_absent:
            out.add("absent")
        if f.nullable:
            out.add("null")
        nonempty = False
        if f.required_if:
            flag = (*path[:-1], f.required_if)
            fv = self.var_of.get(flag)
            if fv is not None and self.vars[fv].values[ctx[fv]].data is True:
                out -= {"absent", "null"}
                nonempty = True
        return out, nonempty

    def domain(self, i: int, ctx: dict[int, int]) -> tuple[int, ...]:
        """Indices of the values variable ``i`` may take given its dependencies' values."""
        var = self.vars[i]
        key = (i, tuple(ctx[d] for d in var.deps))
        found = self._domains.get(key)
        if found is not None:
            return found
        if var.kind == "numbers":
            statuses = {p: self._allowed(p, ctx)[0] for p in var.paths}
            out = tuple(
                j for j, v in enumerate(var.values) if all(_status(v.data[p]) in statuses[p] for p in var.paths)
            )
        else:
            allowed, nonempty = self._allowed(var.paths[0], ctx)
            used: set[tuple[int, int]] = set()
            for g in var.group:
                fr = self.vars[g].values[ctx[g]].fresh
                if fr is not None:
                    used.add(fr)
            js = []
            opened: set[int] = set()  # classes whose next unused witness is already offered
            for j, v in enumerate(var.values):
                if _status(v.data) not in allowed or (nonempty and v.data == ""):
                    continue
                if v.fresh is not None and v.fresh not in used:
                    if v.fresh[0] in opened:
                        continue  # interchangeable with the unused witness offered before it
                    opened.add(v.fresh[0])
                js.append(j)
            out = tuple(js)
        self._domains[key] = out
        return out

    # ------------------------------------------------------------ formulas

    def _partial(self, assign: dict[int, int]) -> dict[str, Any]:
        fact: dict[str, Any] = {}
        for i in sorted(assign):
            var = self.vars[i]
            v = var.values[assign[i]]
            data = v.norm if v.norm is not None else v.data
            for p in var.paths:
                set_path(fact, p, data[p] if var.kind == "numbers" else data)
        return fact

    def _atom_vars(self, a: C.Atom) -> list[int]:
        out = [self.var_of[a.path]]
        if a.ref_path is not None and self.var_of[a.ref_path] not in out:
            out.append(self.var_of[a.ref_path])
        return sorted(out)

    def _leaf(self, c: C.Atom | C.Quant, vs: list[int]) -> int:
        key = (cond_key(c), tuple(vs))
        found = self._masks.get(key)
        if found is not None:
            return found
        if len(vs) == 1:
            (v,) = vs
            mask = sum(1 << j for j in range(len(self.vars[v].values)) if evaluate(c, self._partial({v: j})))
            out = self.store.leaf(v, mask)
        else:
            a, b = vs
            rows = [
                sum(1 << jb for jb in range(len(self.vars[b].values)) if evaluate(c, self._partial({a: ja, b: jb})))
                for ja in range(len(self.vars[a].values))
            ]
            out = self.store.relation(a, b, rows)
        self._masks[key] = out
        return out

    def formula(self, c: C.Cond) -> int:
        """The formula of a type-checked condition tree."""
        st = self.store
        if isinstance(c, C.Const):
            return TRUE if c.value else FALSE
        if isinstance(c, C.Not):
            return st.negate(self.formula(c.item))
        if isinstance(c, C.AllOf):
            return st.conj([self.formula(i) for i in c.items])
        if isinstance(c, C.AnyOf):
            return st.disj([self.formula(i) for i in c.items])
        if isinstance(c, C.Quant):
            return self._leaf(c, [self.var_of[c.path]])
        if isinstance(c, C.Atom):
            return self._leaf(c, self._atom_vars(c))
        assert isinstance(c, (C.Ref, C.HighRisk)) and c.body is not None
        return self.formula(c.body)

    # ------------------------------------------------------------ facts

    def fact(self, assign: dict[int, int]) -> dict[str, Any]:
        """The example fact of a complete assignment: fewest fields, required ones filled."""
        fact: dict[str, Any] = {}
        for i, var in enumerate(self.vars):
            v = var.values[assign[i]]
            for p in var.paths:
                x = v.data[p] if var.kind == "numbers" else v.data
                f = field_at(self.root, p)
                if f.has_default and var.kind != "object" and type(x) is type(f.default) and x == f.default:
                    continue
                set_path(fact, p, x)
        found: dict[str, Any] = json.loads(json.dumps(fill_required(self.root, fact)))
        return found

    def describe(self, assign: dict[int, int]) -> list[str]:
        return [self.vars[i].values[j].label for i, j in sorted(assign.items())]

    def describe_sets(self, masks: dict[int, int]) -> list[str]:
        """One line per variable: its allowed values, joined with " | "."""
        out = []
        for i, m in sorted(masks.items()):
            labels = [v.label for j, v in enumerate(self.vars[i].values) if (m >> j) & 1]
            out.append(" | ".join(labels))
        return out


def _intervals(prims: list[tuple[int, int, Fraction]], rel: tuple[int, ...], names: dict[int, str]) -> list[str]:
    """Readable bounds of each compared difference: ``turn - max_turns < -2``, ``0 < turn < 3``."""
    by_pair: dict[tuple[int, int], list[tuple[Fraction, int]]] = {}
    for (u, v, c), r in zip(prims, rel, strict=True):
        by_pair.setdefault((u, v), []).append((c, r))
    out = []
    for (u, v), rs in by_pair.items():
        x = names[u] if v == 0 else f"{names[u]} - {names[v]}"
        eq = [c for c, r in rs if r == 0]
        if eq:
            out.append(f"{x} = {_num(eq[0])}")
            continue
        lo = max((c for c, r in rs if r > 0), default=None)
        hi = min((c for c, r in rs if r < 0), default=None)
        text = x
        if lo is not None:
            text = f"{_num(lo)} < {text}" if hi is not None else f"{text} > {_num(lo)}"
        if hi is not None:
            text = f"{text} < {_num(hi)}"
        out.append(text)
    return out


def _num(c: Fraction) -> str:
    return str(number_value(c))


def _statuses(root: FactField, path: Path) -> list[Any]:
    f = field_at(root, path)
    out: list[Any] = []
    if can_be_absent(root, path):
        out.append(MISSING)
    if f.nullable:
        out.append(None)
    return out


def _cost(root: FactField, path: Path, x: Any) -> int:
    f = field_at(root, path)
    if x is MISSING or (f.has_default and type(x) is type(f.default) and x == f.default):
        return 0
    return 1


class _Builder:
    def __init__(self, root: FactField, conds: list[C.Cond]) -> None:
        self.root = root
        self.reads = _Reads(root)
        for c in conds:
            self.reads.walk(c)
        self.space = Space(root)

    def add(self, var: Var) -> None:
        self.space.vars.append(var)
        for p in var.paths:
            self.space.var_of[p] = len(self.space.vars) - 1

    def build(self) -> Space:
        r = self.reads
        root = self.root
        # required_if flags of anything read are read too; every ancestor object is a variable
        for p in list(r.scalars) + list(r.lists) + list(r.objects):
            f = field_at(root, p)
            if f.required_if:
                flag = (*p[:-1], f.required_if)
                r.scalars.setdefault(flag, Reads())
                r.see(flag)
        for p in list(r.scalars) + list(r.lists) + list(r.objects):
            for j in range(1, len(p)):
                r.objects.add(p[:j])
        groups = self._groups()
        rank = {p: i for i, p in enumerate(r.order)}
        big = len(rank)

        def first(paths: tuple[Path, ...]) -> int:
            return min(rank.get(p, big + len(p)) for p in paths)

        pending: list[Var] = []
        for p in sorted(r.objects, key=len):
            vals = [Value(f"{'.'.join(p)} {_status(x)}", x, cost=_cost(root, p, x)) for x in _statuses(root, p)]
            vals.append(Value(f"{'.'.join(p)} present", {}, cost=1))
            pending.append(Var(".".join(p), "object", (p,), vals))
        for p, quants in r.lists.items():
            pending.append(Var(".".join(p), "list", (p,), self._list_values(p, list(quants.values()))))
        for members in groups:
            pending.extend(self._group_vars(members))
        # order: by first read (rules come highest priority first), parents and flags before children
        by_path = {p: v for v in pending for p in v.paths}
        placed: set[int] = set()

        def deps_of(v: Var) -> list[Var]:
            out = []
            for p in v.paths:
                if len(p) > 1:
                    out.append(by_path[p[:-1]])
                f = field_at(root, p)
                if f.required_if:
                    out.append(by_path[p[:-1] + (f.required_if,)])
            return [d for d in out if d is not v]

        def place(v: Var) -> None:
            if id(v) in placed:
                return
            placed.add(id(v))
            for d in deps_of(v):
                place(d)
            self.add(v)

        for v in sorted(pending, key=lambda v: first(v.paths)):
            place(v)
        sp = self.space
        for v in sp.vars:
            v.deps = tuple(sorted({sp.var_of[d.paths[0]] for d in deps_of(v)}))
        for members in groups:
            if field_at(root, members[0]).type != "string" or len(members) < 2:
                continue
            idx = sorted(sp.var_of[p] for p in members)
            for n, i in enumerate(idx):
                sp.vars[i].group = tuple(idx[:n])
                sp.vars[i].deps = tuple(sorted(set(sp.vars[i].deps) | set(idx[:n])))
        sp.store = Store([len(v.values) for v in sp.vars])
        return sp

    def _groups(self) -> list[list[Path]]:
        """Scalars linked by field comparisons, as groups (union-find)."""
        parent: dict[Path, Path] = {p: p for p in self.reads.scalars}

        def find(p: Path) -> Path:
            while parent[p] != p:
                parent[p] = parent[parent[p]]
                p = parent[p]
            return p

        for a, b in self.reads.links:
            parent[find(a)] = find(b)
        out: dict[Path, list[Path]] = {}
        for p in self.reads.scalars:
            out.setdefault(find(p), []).append(p)
        return list(out.values())

    def _group_vars(self, members: list[Path]) -> list[Var]:
        root = self.root
        ftype = field_at(root, members[0]).type
        if ftype in ("int", "number"):
            return [self._numbers(members)]
        out = []
        if ftype == "string":
            lits: set[str] = set()
            globs: set[str] = set()
            for p in members:
                lits |= {x for x in self.reads.scalars[p].literals if isinstance(x, str)}
                globs |= self.reads.scalars[p].globs
            k = len(members) + (1 if any(field_at(root, p).required_if for p in members) else 0)
            pool: list[tuple[str, tuple[int, int] | None]] = []
            for cls, (is_lit, ws) in enumerate(string_classes(lits, globs, k)):
                pool.extend((w, None if is_lit else (cls, n)) for n, w in enumerate(ws))
        for p in members:
            name = ".".join(p)
            vals = [Value(f"{name} {_status(x)}", x, cost=_cost(root, p, x)) for x in _statuses(root, p)]
            if ftype == "string":
                vals += [Value(f"{name} = {json.dumps(w)}", w, cost=_cost(root, p, w), fresh=fr) for w, fr in pool]
            else:
                vals += [
                    Value(f"{name} = {json.dumps(x)}", x, cost=_cost(root, p, x))
                    for x in scalar_candidates(field_at(root, p), None)
                ]
            out.append(Var(name, "scalar", (p,), vals))
        return out

    def _numbers(self, members: list[Path]) -> Var:
        root = self.root
        members = sorted(members, key=lambda p: self.reads.order.index(p) if p in self.reads.order else 0)
        index = {p: i + 1 for i, p in enumerate(members)}
        prims = set()
        for a, b, c in self.reads.prims:
            if a in index:
                prims.add((index[a], index[b] if b is not None else 0, c))
        fields = [field_at(root, p) for p in members]
        options = [[*_statuses(root, p), "value"] for p in members]
        vals: list[Value] = []
        for combo in itertools.product(*options):
            valued = [i + 1 for i, s in enumerate(combo) if s == "value"]
            remap = {0: 0, **{v: n + 1 for n, v in enumerate(valued)}}
            sub = sorted((remap[u], remap[v], c) for u, v, c in prims if u in remap and v in remap)
            ints = {remap[v] for v in valued if fields[v - 1].type == "int"}
            names = {0: "0", **{remap[i + 1]: ".".join(p) for i, p in enumerate(members) if i + 1 in remap}}
            for rel, wit in regions(len(valued) + 1, sub, ints):
                data: dict[Path, Any] = {}
                for i, p in enumerate(members):
                    data[p] = number_value(wit[remap[i + 1]]) if combo[i] == "value" else combo[i]
                parts = [f"{'.'.join(p)} {_status(data[p])}" for p in members if data[p] is MISSING or data[p] is None]
                parts += _intervals(sub, rel, names)
                parts += [
                    f"{'.'.join(p)} present"
                    for i, p in enumerate(members)
                    if combo[i] == "value" and not any(remap[i + 1] in (u, v) for u, v, _ in sub)
                ]
                cost = sum(_cost(root, p, data[p]) for p in members)
                vals.append(Value(", ".join(parts), data, cost=cost))
        return Var(" & ".join(".".join(p) for p in members), "numbers", tuple(members), vals)

    def _list_values(self, path: Path, quants: list[C.Quant]) -> list[Value]:
        root = self.root
        lf = field_at(root, path)
        assert lf.items is not None
        name = ".".join(path)
        item_reads: dict[Path, Reads] = {}
        present: set[Path] = set()

        for q in quants:
            for c in C.iter_nodes(q.where):
                if isinstance(c, C.Atom):
                    item_reads.setdefault(c.path, Reads()).add_atom(c)
                    for j in range(1, len(c.path) + 1):
                        present.add(c.path[:j])
        kinds = [{c.kind for c in self.reads.quant_kinds[path][cond_key(q.where)]} for q in quants]
        some_mask = sum(1 << i for i, k in enumerate(kinds) if "some" in k)
        every_mask = sum(1 << i for i, k in enumerate(kinds) if "every" in k)
        classes: dict[tuple[bool, ...], tuple[int, Any, Any]] = {}
        for raw in subtree_candidates(lf.items, item_reads, present):
            ok = valid_item(lf, raw)
            if ok is None:
                continue
            raw, norm = ok
            vec = tuple(evaluate(q.where, norm) for q in quants)
            size = len(json.dumps(raw))
            prev = classes.get(vec)
            if prev is None or size < prev[0]:
                classes[vec] = (size, raw, norm)
        # every non-empty set of element classes, summarised as (OR, AND) of their outcomes
        shapes: dict[tuple[int, int], tuple[int, tuple[Any, ...]]] = {}
        for vec, (_, raw, norm) in classes.items():
            bits = sum(1 << i for i, b in enumerate(vec) if b)
            new = dict(shapes)
            for (o, a), (w, items) in shapes.items():
                key = (o | (bits & some_mask), a & bits)
                nw, nitems = new.get(key, (0, None))
                cand = (*items, (raw, norm))
                new[key] = (nw + w, cand if nitems is None or len(cand) < len(nitems) else nitems)
            key = (bits & some_mask, bits & every_mask)
            nw, nitems = new.get(key, (0, None))
            new[key] = (nw + 1, ((raw, norm),) if nitems is None or len(nitems) > 1 else nitems)
            shapes = new
            if len(shapes) > MAX_LIST_SHAPES:
                raise AnalysisLimit(f"{name}: more than {MAX_LIST_SHAPES} kinds of list contents")
        vals = [Value(f"{name} {_status(x)}", x, cost=_cost(root, path, x)) for x in _statuses(root, path)]
        vals.append(Value(f"{name} = []", [], norm=[], cost=_cost(root, path, [])))
        for (_, _), (w, items) in sorted(shapes.items(), key=lambda kv: len(kv[1][1])):
            raw_list = [r for r, _ in items]
            vals.append(
                Value(f"{name} = {json.dumps(raw_list)}", raw_list, norm=[n for _, n in items], weight=w, cost=1)
            )
        return vals


def build_space(root: FactField, conds: list[C.Cond]) -> Space:
    """The abstraction of ``root``'s facts that every condition in ``conds`` respects.

    Give conditions highest priority first: variables are explored in the order
    the conditions read them, so high-priority rules are decided early.
    """
    return _Builder(root, conds).build()
