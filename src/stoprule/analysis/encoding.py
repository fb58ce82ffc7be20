"""The checked policy's conditions as SMT terms (z3), and a model back as a fact.

Encoded once per analysis; every question of the solver backend is a query over
these terms. A field the conditions read becomes a node with

- ``pres`` (the key is there after validation) and ``null`` (its value is null),
  tied to the parent: a child is present only under a present, non-null object, and
  a required field (or one with a default) always is there;
- a value by type: bool -> Bool, int -> Int within +-(2^53 - 1), number -> Real,
  enum -> Int (one global id per enum value, so fields of the same enum compare by
  id), string -> String over the characters a fact may hold (no NUL, no surrogate);
- lists: a length and as many element slots as there are distinct ``where``
  conditions on the list, plus one. That is exact: a fact's quantifier outcomes are
  kept by the sub-list of one witness element per ``some`` that holds or ``every``
  that fails (plus any one element when the list must not be empty).

Comparisons are false on an absent or null value (and on an absent or null operand
field), as in :mod:`stoprule.engine.interpret`; globs become regular expressions
over the same character classes. Named conditions and high-risk stops are encoded
through their resolved bodies, shared.

Exact except for ``number`` fields: they are solved over the rationals while facts
hold doubles (see :attr:`Encoder.inexact`); a witness is rounded to a double and
re-checked, so a difference shows as a witness that does not reproduce.
"""

from __future__ import annotations

import math
import sys
from fractions import Fraction
from typing import Any

import cvc5.pythonic as z3  # type: ignore[import-untyped]

from stoprule.diagnostics import AnalysisLimit
from stoprule.facts.schema import FactField
from stoprule.language import conditions as C
from stoprule.language.operators import OPERATORS
from stoprule.language.patterns import glob_class, glob_tokens
from stoprule.limits import SAFE_INT

__all__ = ["CHARS", "SHORT_LIST", "Encoder", "Node", "TextAtom", "all_of", "any_of"]

_MAX_DOUBLE = sys.float_info.max
SHORT_LIST = 2  # elements: a query is first asked with every list at most this long

MAX_CHAR = 0x2FFFF  # cvc5's alphabet ends here
_CHARS = z3.Union(z3.Range(chr(1), chr(0xD7FF)), z3.Range(chr(0xE000), chr(MAX_CHAR)))
_ANY = z3.Star(_CHARS)
CHARS = _ANY  # the strings a fact may hold: no NUL, no lone surrogate


def all_of(*xs: Any) -> Any:
    """Conjunction of terms (or of one list of terms); True when empty."""
    items = list(xs[0]) if len(xs) == 1 and isinstance(xs[0], list) else list(xs)
    if not items:
        return z3.BoolVal(True)
    return items[0] if len(items) == 1 else z3.And(*items)


def any_of(*xs: Any) -> Any:
    """Disjunction of terms (or of one list of terms); False when empty."""
    items = list(xs[0]) if len(xs) == 1 and isinstance(xs[0], list) else list(xs)
    if not items:
        return z3.BoolVal(False)
    return items[0] if len(items) == 1 else z3.Or(*items)


class Node:
    """One field (or list element) as the conditions see it."""

    __slots__ = ("_alive", "children", "elems", "fld", "length", "name", "null", "pres", "val")

    def __init__(self, fld: FactField, name: str, pres: Any, null: Any) -> None:
        self.fld = fld
        self.name = name
        self.pres = pres
        self.null = null
        self.val: Any = None
        self.length: Any = None
        self.children: dict[str, Node] = {}
        self.elems: list[Node] = []
        self._alive: Any = None

    @property
    def alive(self) -> Any:
        """Present and not null."""
        if self._alive is None:
            self._alive = all_of(self.pres, z3.Not(self.null))
        return self._alive


class TextAtom:
    """A test on string fields (glob, prefix, suffix, equality, membership, a comparison
    between two string fields). The queries see only its Bool ``var``; :class:`~.solver.Solver`
    checks each model's choice of these Bools on the strings themselves, one small query per
    group of string fields tied by tests, and adds the reason as a lemma when they cannot
    hold together. ``test`` is the exact term over the fields' String variables."""

    __slots__ = ("nodes", "test", "var")

    def __init__(self, var: Any, test: Any, nodes: tuple[Node, ...]) -> None:
        self.var = var
        self.test = test
        self.nodes = nodes


class Encoder:
    """Conditions over one fact schema as z3 terms; ``axioms`` hold what every valid fact satisfies."""

    def __init__(self, root: FactField, conds: list[C.Cond]) -> None:
        self.root_fld = root
        self.root = Node(root, "", z3.BoolVal(True), z3.BoolVal(False))
        self.axioms: list[Any] = []
        self.inexact: set[str] = set()
        self._gaps: set[tuple[int, float]] = set()  # (term id, double): no value next to it
        self.rounded: list[tuple[Any, Fraction]] = []
        self.long = z3.Bool("long!")  # lists may be longer than SHORT_LIST
        self.short: list[Any] = []  # "every list is short": tried first as assumptions (see Solver.check)
        self.texts: list[TextAtom] = []  # string tests, each a Bool in the queries (see TextAtom)
        self._text_ids: dict[int, int] = {}
        self._text_parent: dict[int, int] = {}  # union-find over string nodes (id -> id)
        self._text_nodes: dict[int, Node] = {}
        self._strings: dict[int, str] = {}
        self._n = 0
        self._ids: dict[str, int] = {}
        self._slots: dict[tuple[str, ...], set[str]] = {}
        self._cache: dict[tuple[int, int], Any] = {}
        self._by_shape: dict[tuple[Any, int], Any] = {}
        self._shapes: dict[int, Any] = {}
        self._keep: list[Any] = []  # nodes cached by id stay alive
        self._re: dict[str, Any] = {}
        for c in conds:
            self._count_slots(c)

    # ------------------------------------------------------------ structure

    def _count_slots(self, c: C.Cond) -> None:
        for n in C.iter_nodes(c):
            if isinstance(n, C.Quant):
                self._slots.setdefault(n.path, set()).add(C.cond_text(n.where))

    def _fresh(self, kind: str, sort: str) -> Any:
        self._n += 1
        name = f"{kind}!{self._n}"
        return {"bool": z3.Bool, "int": z3.Int, "real": z3.Real, "str": z3.String}[sort](name)

    def enum_id(self, value: str) -> int:
        return self._ids.setdefault(value, len(self._ids))

    def _child(self, parent: Node, name: str) -> Node:
        node = parent.children.get(name)
        if node is not None:
            return node
        fld = parent.fld.fields[name]
        pres = self._fresh(name, "bool")
        null = self._fresh(name + "?", "bool") if fld.nullable else z3.BoolVal(False)
        node = Node(fld, name, pres, null)
        parent.children[name] = node
        ax = self.axioms
        ax.append(z3.Implies(pres, parent.alive))
        if not fld.may_be_absent:
            ax.append(z3.Implies(parent.alive, pres))
        if fld.nullable:
            ax.append(z3.Implies(null, pres))
        self._value(node)
        if fld.required_if:  # the validator: a true flag needs this field not null and not ""
            flag = self._child(parent, fld.required_if)
            if flag.fld.type == "bool":
                empty = node.val == z3.StringVal("") if fld.type == "string" else None
                want = node.alive if empty is None else all_of(node.alive, z3.Not(self._text(empty, node)))
                ax.append(z3.Implies(all_of(flag.alive, flag.val), want))
        return node

    def _value(self, node: Node) -> None:
        fld, t, ax = node.fld, node.fld.type, self.axioms
        if t == "bool":
            node.val = self._fresh(node.name, "bool")
        elif t == "int":
            node.val = v = self._fresh(node.name, "int")
            ax.append(all_of(v >= -SAFE_INT, v <= SAFE_INT))
        elif t == "number":
            node.val = v = self._fresh(node.name, "real")
            ax.append(all_of(v >= self.exact(-_MAX_DOUBLE), v <= self.exact(_MAX_DOUBLE)))
        elif t == "enum":
            node.val = v = self._fresh(node.name, "int")
            ax.append(any_of([v == self.enum_id(x) for x in fld.values]))
        elif t == "string":  # its characters: see TextAtom
            node.val = self._fresh(node.name, "str")
        elif t == "list":
            node.length = n = self._fresh(node.name + "#", "int")
            ax.append(n >= 0)
            ax.append(z3.Implies(z3.Not(node.alive), n == 0))

    def elements(self, lst: Node, path: tuple[str, ...]) -> list[Node]:
        """The element slots of a list node (created on first use)."""
        if not lst.elems:
            assert lst.fld.items is not None
            k = len(self._slots.get(path, ())) + 1
            self.axioms.append(lst.length <= k)
            if k > SHORT_LIST:
                self.axioms.append(z3.Implies(z3.Not(self.long), lst.length <= SHORT_LIST))
                self.short[:] = [z3.Not(self.long)]
            item = lst.fld.items
            for i in range(k):
                pres = all_of(lst.alive, lst.length > i)
                null = self._fresh(f"{lst.name}[{i}]?", "bool") if item.nullable else z3.BoolVal(False)
                e = Node(item, f"{lst.name}[{i}]", pres, null)
                if item.nullable:
                    self.axioms.append(z3.Implies(null, pres))
                self._value(e)
                lst.elems.append(e)
        return lst.elems

    def node(self, scope: Node, path: tuple[str, ...]) -> Node:
        for name in path:
            scope = self._child(scope, name)
        return scope

    # ------------------------------------------------------------ conditions

    def cond(self, c: C.Cond, scope: Node | None = None) -> Any:
        """The term of ``c`` (in ``scope``: the fact, or a list element)."""
        scope = scope or self.root
        key = (id(c), id(scope))
        got = self._cache.get(key)
        if got is None:  # the same condition written again (another rule, a rewritten copy): its term
            skey = (self._shape(c), id(scope))
            got = self._by_shape.get(skey)
            if got is None:
                got = self._by_shape[skey] = self._build(c, scope)
            self._cache[key] = got
            self._keep.append(c)
        return got

    def _shape(self, c: C.Cond) -> Any:
        """What the term of ``c`` depends on (locations left out), memoized."""
        got = self._shapes.get(id(c))
        if got is None:
            if isinstance(c, C.Atom):
                got = ("a", c.path, c.op, _shape_of(c.arg), c.ref_path)
            elif isinstance(c, C.Const):
                got = ("c", c.value)
            elif isinstance(c, C.Not):
                got = ("n", self._shape(c.item))
            elif isinstance(c, (C.AllOf, C.AnyOf)):
                got = ("&" if isinstance(c, C.AllOf) else "|", tuple(self._shape(i) for i in c.items))
            elif isinstance(c, C.Quant):
                got = ("q", c.kind, c.path, self._shape(c.where))
            else:
                assert isinstance(c, (C.Ref, C.HighRisk)) and c.body is not None
                got = self._shape(c.body)
            self._shapes[id(c)] = got
            self._keep.append(c)
        return got

    def _build(self, c: C.Cond, scope: Node) -> Any:
        if isinstance(c, C.Const):
            out = z3.BoolVal(c.value)
        elif isinstance(c, C.Not):
            out = z3.Not(self.cond(c.item, scope))
        elif isinstance(c, C.AllOf):
            out = all_of([self.cond(i, scope) for i in c.items])
        elif isinstance(c, C.AnyOf):
            out = any_of([self.cond(i, scope) for i in c.items])
        elif isinstance(c, C.Quant):
            lst = self.node(scope, c.path)
            parts = []
            for i, e in enumerate(self.elements(lst, c.path)):
                inner = self.cond(c.where, e)
                live = lst.length > i
                parts.append(all_of(live, inner) if c.kind == "some" else z3.Implies(live, inner))
            # the slots past SHORT_LIST only when long lists are allowed (see ``short``)
            head, tail = parts[:SHORT_LIST], parts[SHORT_LIST:]
            if c.kind == "some":
                out = any_of(*head, all_of(self.long, any_of(tail))) if tail else any_of(parts)
            else:
                out = all_of(*head, z3.Implies(self.long, all_of(tail))) if tail else all_of(parts)
        elif isinstance(c, C.Atom):
            out = self._atom(c, scope)
        else:
            assert isinstance(c, (C.Ref, C.HighRisk)) and c.body is not None
            out = self.cond(c.body, scope)
        return out

    def _atom(self, a: C.Atom, scope: Node) -> Any:
        node = self.node(scope, a.path)
        op = OPERATORS[a.op]
        t = node.fld.type
        if op.presence:
            if a.op == "exists":
                got = node.alive
            elif a.op == "null":
                got = all_of(node.pres, node.null)
            elif a.op == "absent":
                got = z3.Not(node.pres)
            else:  # empty
                got = any_of(z3.Not(node.alive), node.length == 0)
            return got if a.arg else z3.Not(got)
        ok = [node.alive]
        if a.ref_path is not None:
            ref = self.node(self.root, a.ref_path)
            ok.append(ref.alive)
            off = a.arg.get("offset", 0)
            if t == "enum" or ref.fld.type == "enum" or t in ("string", "bool"):
                rhs = ref.val
                test = self._compare(a.op, node.val, rhs)
                if t == "string":
                    test = self._text(test, node, ref)
            else:
                lhs, rhs = self._num(node), self._num(ref)
                if off:
                    rhs = rhs + self._lit(off, rhs)
                    if isinstance(off, float) or "number" in (t, ref.fld.type):
                        self.inexact.add("number fields compared with an offset (doubles round, rationals do not)")
                test = self._compare(a.op, lhs, rhs)
            return all_of(*ok, test)
        test = self._literal_test(a, node)
        return all_of(*ok, self._text(test, node) if t == "string" else test)

    def _text(self, test: Any, *nodes: Node) -> Any:
        """The Bool standing for a string test (its negation through ``not``)."""
        if z3.is_not(test):
            return z3.Not(self._text(test.arg(0), *nodes))
        if z3.is_true(test) or z3.is_false(test):
            return test
        key = test.get_id()
        k = self._text_ids.get(key)
        if k is None:
            k = self._text_ids[key] = len(self.texts)
            self.texts.append(TextAtom(self._fresh("text", "bool"), test, nodes))
            for n in nodes:
                self._text_nodes[id(n)] = n
                self._text_parent.setdefault(id(n), id(n))
            for n in nodes[1:]:
                self._text_parent[self._text_root(id(n))] = self._text_root(id(nodes[0]))
        return self.texts[k].var

    def _text_root(self, x: int) -> int:
        while self._text_parent[x] != x:
            x = self._text_parent[x]
        return x

    def text_groups(self) -> list[tuple[list[Node], list[int]]]:
        """String nodes tied by tests between them, with their tests (indices into ``texts``)."""
        groups: dict[int, tuple[list[Node], list[int]]] = {}
        for x, n in self._text_nodes.items():
            groups.setdefault(self._text_root(x), ([], []))[0].append(n)
        for k, atom in enumerate(self.texts):
            groups[self._text_root(id(atom.nodes[0]))][1].append(k)
        return list(groups.values())

    def _num(self, node: Node) -> Any:
        return node.val

    def exact(self, v: float) -> Any:
        """A double as an exact Real (an infinity as a value beyond every double: no model has it)."""
        if not math.isfinite(v):
            v = int(math.copysign(2, v)) * int(_MAX_DOUBLE)
        return self._lit(v, z3.RealVal(0))

    def _lit(self, v: Any, like: Any) -> Any:
        if type(v) is float or z3.is_real(like):
            fr = Fraction(v)
            return z3.RealVal(fr.numerator) / z3.RealVal(fr.denominator)
        return z3.IntVal(v)

    def _compare(self, op: str, lhs: Any, rhs: Any) -> Any:
        if z3.is_int(lhs) and z3.is_real(rhs):
            lhs = z3.ToReal(lhs)
        elif z3.is_real(lhs) and z3.is_int(rhs):
            rhs = z3.ToReal(rhs)
        if op == "eq":
            return lhs == rhs
        if op == "ne":
            return lhs != rhs
        if op == "lt":
            return lhs < rhs
        if op == "lte":
            return lhs <= rhs
        if op == "gt":
            return lhs > rhs
        assert op == "gte", op
        return lhs >= rhs

    def _literal_test(self, a: C.Atom, node: Node) -> Any:
        t, op, v = node.fld.type, a.op, node.val
        if t == "enum":  # every operator decided per value
            test = OPERATORS[op].test
            hits = [x for x in node.fld.values if test(x, a.arg)]
            return any_of([v == self.enum_id(x) for x in hits]) if hits else z3.BoolVal(False)
        if t == "number" and op in ("in", "not_in", "eq", "ne", "lt", "lte", "gt", "gte"):
            return self._double_test(op, v, a.arg)
        if op in ("in", "not_in"):
            inside = any_of([self._eq_lit(t, v, x) for x in a.arg]) if a.arg else z3.BoolVal(False)
            return inside if op == "in" else z3.Not(inside)
        if op == "glob":
            return z3.InRe(v, self._glob(a.arg))
        if op == "starts_with":
            return z3.PrefixOf(_sval(a.arg), v)
        if op == "ends_with":
            return z3.SuffixOf(_sval(a.arg), v)
        if op in ("eq", "ne"):
            eq = self._eq_lit(t, v, a.arg)
            return eq if op == "eq" else z3.Not(eq)
        return self._compare(op, v, self._lit(a.arg, v))

    def _double_test(self, op: str, v: Any, arg: Any) -> Any:
        """A number field against literals, exactly over the doubles: ``v > c`` is ``v >= the
        next double``, ``v != c`` is ``v`` at most the double below or at least the one above.
        With the range axiom, every real model then rounds to a double that keeps each such
        atom's truth (rounding is monotone and keeps doubles)."""
        if op in ("in", "not_in"):
            inside = any_of([self._double_test("eq", v, x) for x in arg]) if arg else z3.BoolVal(False)
            return inside if op == "in" else z3.Not(inside)
        d = float(arg)
        self._no_gap(v, d)
        if op == "eq":
            return v == self.exact(d)
        if op == "lte":
            return v <= self.exact(d)
        if op == "gte":
            return v >= self.exact(d)
        below, above = math.nextafter(d, -math.inf), math.nextafter(d, math.inf)
        lt = v <= self.exact(below) if math.isfinite(below) else z3.BoolVal(False)
        gt = v >= self.exact(above) if math.isfinite(above) else z3.BoolVal(False)
        return lt if op == "lt" else gt if op == "gt" else any_of(lt, gt)

    def _no_gap(self, v: Any, d: float) -> None:
        """An axiom: ``v`` is not strictly between ``d`` and a neighbouring double, where no double
        is. So the negation of ``v >= next(d)`` is ``v <= d``, closed too, and every atom on ``v``
        keeps its truth when a model value is rounded to a double."""
        key = (v.get_id(), d)
        if key in self._gaps:
            return
        self._gaps.add(key)
        for side in (math.inf, -math.inf):
            nxt = math.nextafter(d, side)
            if math.isfinite(nxt):
                lo, hi = (d, nxt) if side > 0 else (nxt, d)
                self.axioms.append(any_of(v <= self.exact(lo), v >= self.exact(hi)))

    def _eq_lit(self, t: str, v: Any, x: Any) -> Any:
        if t == "bool":
            return v == z3.BoolVal(x)
        if t == "string":
            return v == _sval(x)
        return self._compare("eq", v, self._lit(x, v))

    def _glob(self, pattern: str) -> Any:
        got = self._re.get(pattern)
        if got is None:
            parts = []
            for kind, text in glob_tokens(pattern):
                if kind == "star":
                    parts.append(_ANY)
                elif kind == "one":
                    parts.append(_CHARS)
                elif kind == "lit":
                    parts.append(z3.Re(_sval(text)))
                else:
                    neg, ranges = glob_class(text)
                    top = chr(MAX_CHAR)  # past the solver's alphabet no character is in a witness
                    kept = [z3.Range(lo, min(hi, top)) for lo, hi in ranges if lo <= top]
                    none = z3.Intersect(_CHARS, z3.Complement(_CHARS))
                    cls = z3.Union(kept) if len(kept) > 1 else kept[0] if kept else none
                    parts.append(z3.Intersect(_CHARS, z3.Complement(cls)) if neg else cls)
            got = z3.Concat(parts) if len(parts) > 1 else parts[0] if parts else z3.Re(z3.StringVal(""))
            self._re[pattern] = got
        return got

    # ------------------------------------------------------------ models back to facts

    def fact(self, model: Any, strings: dict[int, str] | None = None) -> dict[str, Any]:
        """The fact a model describes: every encoded field as the model sets it (a string as
        ``strings`` gives it by node id, else ""), fields the conditions do not read only where
        the schema requires them (a plain value). ``rounded`` lists the number values that are
        not doubles (term, exact value)."""
        self.rounded = []
        self._strings = strings or {}
        out = self._object(model, self.root)
        assert isinstance(out, dict)
        return out

    def _object(self, m: Any, node: Node) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, fld in node.fld.fields.items():
            child = node.children.get(name)
            if child is None:
                if fld.required:
                    out[name] = _filler(fld)
                continue
            if not _true(m, child.pres):
                continue
            value = None if _true(m, child.null) else self._read(m, child)
            if not (fld.has_default and value == fld.default and type(value) is type(fld.default)):
                out[name] = value  # a value equal to the default is left to the default
        for name, fld in node.fld.fields.items():
            if fld.required_if and name not in node.children and out.get(fld.required_if) is True:
                out[name] = _filler(fld)
        return out

    def _read(self, m: Any, node: Node) -> Any:
        t = node.fld.type
        if t == "object":
            return self._object(m, node)
        if t == "list":
            n = m.eval(node.length, model_completion=True).as_long()
            if not node.elems:
                return [_filler(node.fld.items)] * n if n else []
            return [None if _true(m, e.null) else self._read(m, e) for e in node.elems[:n]]
        if t == "string":
            return self._strings.get(id(node), "")
        v = m.eval(node.val, model_completion=True)
        if t == "bool":
            return z3.is_true(v)
        if t == "int":
            return v.as_long()
        if t == "number":
            fr = Fraction(v.numerator_as_long(), v.denominator_as_long())
            if Fraction(float(fr)) != fr:
                self.rounded.append((node.val, fr))
            return int(fr) if fr.denominator == 1 and abs(fr) <= SAFE_INT else float(fr)
        names = {self._ids[x]: x for x in node.fld.values}
        return names[v.as_long()]


def _sval(text: str) -> Any:
    if any(ord(ch) > MAX_CHAR for ch in text):
        raise AnalysisLimit(f"the string {text!r} holds a character beyond U+2FFFF, the solver's alphabet")
    return z3.StringVal(text)


def _shape_of(v: Any) -> Any:
    """A literal as a key that tells apart what Python's equality does not (1, 1.0, True)."""
    if isinstance(v, dict):
        return ("d", tuple(sorted((k, _shape_of(x)) for k, x in v.items())))
    if isinstance(v, (tuple, list)):
        return ("t", tuple(_shape_of(x) for x in v))
    return (type(v).__name__, v)


def _true(m: Any, term: Any) -> bool:
    return bool(z3.is_true(m.eval(term, model_completion=True)))


def _filler(fld: FactField | None) -> Any:
    """A valid value for a field no condition reads."""
    if fld is None:
        return None
    t = fld.type
    if t == "object":
        return {n: _filler(f) for n, f in fld.fields.items() if f.required}
    plain = {"bool": False, "int": 0, "number": 0, "string": "x", "list": []}
    return plain.get(t, fld.values[0] if fld.values else None)
