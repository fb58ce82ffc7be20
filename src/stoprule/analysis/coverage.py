"""How well a suite of facts covers a pack: rules, atomic conditions, MC/DC and declarations.

Definitions (docs/testing.md has the long form):

- A rule's **decision** is its resolved ``when`` (named conditions and ``high_risk_stop``
  expanded). Its **atomic conditions** are its distinct atoms outside quantifiers and its
  distinct ``some``/``every`` nodes, each quantifier counting as *one* condition of the
  rule. An atom reached twice through named conditions (same source location) is one
  condition: it always has the same value in a fact.
- Each quantifier's ``where`` is a decision of its own over the list's elements: its
  atoms are conditions too (scope ``some LIST``), exercised by the elements the suite's
  facts carry.
- **Rule coverage**: the rule won for some fact (``matched`` is reported beside it).
- **Condition coverage**: the condition was seen both true and false.
- **MC/DC**: a pair of facts (elements) where the condition has both values, the
  decision has both outcomes, and the condition decides the outcome on its own in each
  of them. *Unique-cause* pairs differ in that condition alone; where the suite has
  none, a *masking* pair is accepted (other conditions differ too, but flipping only this
  one in either fact flips the outcome). A condition that no pair of schema-valid facts
  can show this way (e.g. ``x exists`` beside ``x eq y`` in one conjunction) is proven
  **infeasible** by enumerating the decision's truth table under sound implications
  between atoms on the same field, and left out of the MC/DC percentage (and listed).
- **Declarations**: set members, blocker categories and closure states that no fact
  carried in a field compared against their set; high-risk stops no fact triggered;
  verdict kinds no fact received.

Built on :mod:`stoprule.engine.interpret` (the engine's reference semantics); only the CLI's
``test --coverage`` imports this module.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from stoprule.analysis.domain import build_space
from stoprule.analysis.encoding import Encoder
from stoprule.analysis.formula import FALSE, TRUE
from stoprule.analysis.solver import Solver, SolverUnknown
from stoprule.diagnostics import AnalysisLimit, FactError
from stoprule.engine.evaluator import Verdict
from stoprule.engine.interpret import evaluate, get_path
from stoprule.language import conditions as C
from stoprule.language.checked import CheckedPolicy, CheckedSet
from stoprule.language.operators import OPERATORS

__all__ = [
    "MAX_ENUMERATED",
    "PROVERS",
    "Condition",
    "Coverage",
    "Observation",
    "RuleCoverage",
    "Unexercised",
    "compute_coverage",
]

MAX_ENUMERATED = 18  # conditions per decision up to which infeasibility is proven by enumeration
PROVERS = ("auto", "exhaustive", "solver")
MAX_STEPS = 20_000  # exploration steps of one decision's exhaustive proof before auto turns to the solver

Key = tuple[Any, ...]
Node = C.Atom | C.Quant


@dataclass(frozen=True)
class Observation:
    """One evaluated fact: a label naming it (``file::case[i]``), the validated fact and its verdict."""

    label: str
    fact: dict[str, Any]
    verdict: Verdict


@dataclass
class Condition:
    """One atomic condition of a rule and what the suite made of it."""

    rule: str
    text: str
    file: str
    line: int
    scope: str | None  # None: the rule's own decision; "some LIST": a quantifier's where
    kind: str  # "atom" | "quantifier"
    true: int = 0
    false: int = 0
    mcdc: str | None = None  # "unique-cause" | "masking" | "infeasible" | None (not covered)
    pair: tuple[str, str] | None = None  # labels of the facts (true side, false side)
    note: str = ""
    witness: tuple[dict[str, Any], dict[str, Any]] | None = None  # an uncovered but feasible pair (true, false side)

    @property
    def both_ways(self) -> bool:
        return self.true > 0 and self.false > 0

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "file": self.file,
            "line": self.line,
            "text": self.text,
            "scope": self.scope,
            "kind": self.kind,
            "true": self.true,
            "false": self.false,
            "both_ways": self.both_ways,
            "mcdc": self.mcdc,
            "pair": list(self.pair) if self.pair else None,
            "note": self.note,
            "witness": list(self.witness) if self.witness else None,
        }


@dataclass
class RuleCoverage:
    id: str
    file: str
    line: int
    won: int = 0
    matched: int = 0
    conditions: list[Condition] = field(default_factory=list)

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule": self.id,
            "file": self.file,
            "line": self.line,
            "won": self.won,
            "matched": self.matched,
            "covered": self.won > 0,
            "conditions": [c.to_dict() for c in self.conditions],
        }


@dataclass(frozen=True, order=True)
class Unexercised:
    """A declaration no fact exercised: ``kind`` is set, set_member, blocker_category, ...."""

    kind: str
    name: str
    file: str
    line: int
    note: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _ratio(covered: int, total: int) -> dict[str, Any]:
    pct = 100.0 if total == 0 else round(100.0 * covered / total, 2)
    return {"covered": covered, "total": total, "percent": pct}


@dataclass(frozen=True)
class Coverage:
    """The whole report; ``to_dict`` is the JSON form."""

    rules: list[RuleCoverage]
    unexercised: list[Unexercised]
    facts: int
    warnings: list[str] = field(default_factory=list)

    def conditions(self) -> list[Condition]:
        return [c for r in self.rules for c in r.conditions]

    def rule_ratio(self) -> dict[str, Any]:
        return _ratio(sum(r.won > 0 for r in self.rules), len(self.rules))

    def condition_ratio(self) -> dict[str, Any]:
        conds = self.conditions()
        return _ratio(sum(c.both_ways for c in conds), len(conds))

    def mcdc_ratio(self) -> dict[str, Any]:
        conds = [c for c in self.conditions() if c.mcdc != "infeasible"]
        out = _ratio(sum(c.mcdc is not None for c in conds), len(conds))
        out["infeasible"] = len(self.conditions()) - len(conds)
        out["unique_cause"] = sum(c.mcdc == "unique-cause" for c in conds)
        out["masking"] = sum(c.mcdc == "masking" for c in conds)
        return out

    def mcdc_at_least(self, pct: float) -> bool:
        r = self.mcdc_ratio()
        return bool(r["total"] == 0 or 100 * r["covered"] >= pct * r["total"])

    def uncovered_rules(self) -> list[RuleCoverage]:
        return [r for r in self.rules if r.won == 0]

    def uncovered_conditions(self) -> list[Condition]:
        return [c for c in self.conditions() if c.mcdc is None]

    def infeasible_conditions(self) -> list[Condition]:
        return [c for c in self.conditions() if c.mcdc == "infeasible"]

    def to_dict(self) -> dict[str, Any]:
        return {
            "facts": self.facts,
            "rules": self.rule_ratio(),
            "conditions": self.condition_ratio(),
            "mcdc": self.mcdc_ratio(),
            "uncovered_rules": [
                {"rule": r.id, "file": r.file, "line": r.line, "matched": r.matched} for r in self.uncovered_rules()
            ],
            "uncovered_conditions": [c.to_dict() for c in self.uncovered_conditions()],
            "infeasible_conditions": [c.to_dict() for c in self.infeasible_conditions()],
            "unexercised": [u.to_dict() for u in self.unexercised],
            "per_rule": [r.to_dict() for r in self.rules],
            "warnings": self.warnings,
        }


# --- decisions ---------------------------------------------------------------------------------


def _key(n: Node) -> Key:
    loc = n.loc
    if isinstance(n, C.Quant):
        return ("quantifier", loc.file, loc.line, loc.column, loc.path, n.kind, n.field)
    return ("atom", loc.file, loc.line, loc.column, loc.path, n.field, n.op, repr(n.arg))


def _compile(c: C.Cond, index: dict[Key, int]) -> Callable[[Sequence[bool]], bool]:
    """The decision as a function of its conditions' truth values."""
    if isinstance(c, C.Const):
        value = c.value
        return lambda x: value
    if isinstance(c, C.Not):
        inner = _compile(c.item, index)
        return lambda x: not inner(x)
    if isinstance(c, (C.AllOf, C.AnyOf)):
        parts = [_compile(i, index) for i in c.items]
        if isinstance(c, C.AllOf):
            return lambda x: all(p(x) for p in parts)
        return lambda x: any(p(x) for p in parts)
    if isinstance(c, (C.Ref, C.HighRisk)):
        assert c.body is not None
        return _compile(c.body, index)
    assert isinstance(c, (C.Atom, C.Quant))
    i = index[_key(c)]
    return lambda x: x[i]


class _Decision:
    """A boolean decision over atomic conditions, and the distinct truth vectors seen."""

    def __init__(self, cond: C.Cond, make: Callable[[Node, str | None], Condition], scope: str | None) -> None:
        self.nodes: list[Node] = []
        self.conds: list[Condition] = []
        self.subs: dict[int, _Decision] = {}
        index: dict[Key, int] = {}

        def walk(c: C.Cond) -> None:
            if isinstance(c, (C.Atom, C.Quant)):
                k = _key(c)
                if k not in index:
                    index[k] = len(self.nodes)
                    self.nodes.append(c)
                    self.conds.append(make(c, scope))
                    if isinstance(c, C.Quant):
                        self.subs[index[k]] = _Decision(c.where, make, f"{c.kind} {c.field}")
            else:  # the quantifier's where is a decision of its own
                for child in C.children(c):
                    walk(child)

        walk(cond)
        self.f = _compile(cond, index)
        self.seen: dict[tuple[bool, ...], tuple[bool, str]] = {}
        self.cond = cond
        self.index = index
        self.rule = ""  # the rule's id (set for a rule's own decision)

    def all_decisions(self) -> list[_Decision]:
        return [self, *(d for sub in self.subs.values() for d in sub.all_decisions())]

    def observe(self, scope: Any, label: str) -> bool:
        values = tuple(evaluate(n, scope) for n in self.nodes)
        for c, v in zip(self.conds, values, strict=True):
            if v:
                c.true += 1
            else:
                c.false += 1
        out = self.f(values)
        self.seen.setdefault(values, (out, label))
        for i, sub in self.subs.items():
            seq = get_path(scope, self.nodes[i].path)
            for j, item in enumerate(seq if isinstance(seq, list) else []):
                sub.observe(item, f"{label} {self.nodes[i].field}[{j}]")
        return out

    # --- MC/DC ---

    def analyse(self, describe: Callable[[Node], str], prover: _Prover | None = None) -> None:
        """Find an MC/DC pair for each condition; for the ones without a pair, ``prover`` decides exactly
        whether a pair exists (a witness pair, or a proof that none does); without it, or where it gives
        no answer, infeasibility is proven from implications between atoms where possible."""
        pending = []
        for i, c in enumerate(self.conds):
            pair = self._unique_pair(i)
            if pair is not None:
                c.mcdc, c.pair = "unique-cause", pair
                continue
            pair = self._masking_pair(i)
            if pair is not None:
                c.mcdc, c.pair = "masking", pair
                continue
            pending.append(i)
        exact = prover.mcdc(self, pending) if prover is not None and pending else {}
        rest = [i for i in pending if i not in exact]
        feas = _Feasibility(self, describe)
        proven = feas.infeasible(rest) if rest else {}
        for i in pending:
            c = self.conds[i]
            if i in exact:
                how, witness = exact[i]
                c.witness = witness
                if witness is None:
                    c.mcdc = "infeasible"
                    c.note = f"infeasible (proved by {how}): no fact can make it decide the outcome alone: "
                    c.note += feas.why(i)
                    continue
            if i in proven:
                c.mcdc, c.note = "infeasible", proven[i]
            elif c.true == 0 and c.false == 0:
                c.note = "never evaluated (no fact reached it)"
            elif c.false == 0:
                c.note = "only ever true"
            elif c.true == 0:
                c.note = "only ever false"
            else:
                c.note = "no pair of facts where it alone flips the decision"

    def _unique_pair(self, i: int) -> tuple[str, str] | None:
        groups: dict[tuple[bool, ...], list[tuple[bool, str] | None]] = {}
        for v, seen in self.seen.items():
            slot = groups.setdefault(v[:i] + v[i + 1 :], [None, None])
            slot[v[i]] = seen
        for f_side, t_side in groups.values():
            if f_side is not None and t_side is not None and f_side[0] != t_side[0]:
                return t_side[1], f_side[1]
        return None

    def _decides(self, v: tuple[bool, ...], i: int) -> bool:
        return self.f(v) != self.f(v[:i] + (not v[i],) + v[i + 1 :])

    def _masking_pair(self, i: int) -> tuple[str, str] | None:
        sides: dict[bool, dict[bool, str]] = {True: {}, False: {}}  # value of i -> outcome -> label
        for v, (out, label) in self.seen.items():
            if self._decides(v, i):
                sides[v[i]].setdefault(out, label)
        for out, label in sides[True].items():
            if (not out) in sides[False]:
                return label, sides[False][not out]
        return None


# --- infeasibility ------------------------------------------------------------------------------


def _implied(n: Node, value: bool) -> list[tuple[tuple[str, ...], bool]]:
    """(path, present-and-not-null) facts that hold whenever ``n`` has ``value`` (sound, not complete)."""
    if isinstance(n, C.Quant):
        return [(n.path, True)] if value == (n.kind == "some") else []
    present = OPERATORS[n.op].implies(n.arg, value)
    if present is None:
        return []
    out = [(n.path, present)]
    if present and n.ref_path is not None:  # a comparison with a field holds only when both have values
        out.append((n.ref_path, True))
    return out


def _placed(path: tuple[str, ...], value: Any) -> Any:
    for p in reversed(path):
        value = {p: value}
    return value


class _Feasibility:
    """Truth assignments of a decision that some schema-valid fact might produce (an over-approximation).

    An assignment is ruled out only by implications that hold in every fact: a comparison
    is false on an absent or null field; ``exists``/``null``/``absent``/``empty`` fix
    whether the field is present; a present nested field means its parent is; and an
    ``eq`` literal fixes the field's value, and so every other atom on that field.
    """

    def __init__(self, d: _Decision, describe: Callable[[Node], str]) -> None:
        self.d = d
        self.describe = describe
        n = d.nodes
        self.implied = [(_implied(x, True), _implied(x, False)) for x in n]
        paths = {p for imp in self.implied for side in imp for p, _ in side}
        self.prefixes = [(p, q) for p in paths for q in paths if len(q) < len(p) and p[: len(q)] == q]
        self.literals: list[tuple[int, Any, list[int]]] = []
        for i, x in enumerate(n):
            if isinstance(x, C.Atom) and x.op == "eq" and x.ref_path is None and x.arg is not None:
                same = [
                    j
                    for j, y in enumerate(n)
                    if j != i and isinstance(y, C.Atom) and y.path == x.path and y.ref_path is None
                ]
                if same:
                    self.literals.append((i, _placed(x.path, x.arg), same))

    def feasible(self, v: tuple[bool, ...]) -> bool:
        req: dict[tuple[str, ...], bool] = {}
        for value, (when_true, when_false) in zip(v, self.implied, strict=True):
            for p, b in when_true if value else when_false:
                if req.setdefault(p, b) != b:
                    return False
        for p, q in self.prefixes:
            if req.get(p) is True and req.get(q) is False:
                return False
        nodes = self.d.nodes
        for i, scope, same in self.literals:
            if v[i] and any(evaluate(nodes[j], scope) != v[j] for j in same):
                return False
        return True

    def coupled(self, i: int) -> list[Node]:
        """Other conditions of the decision on the same field, a parent or child field, or the compared field."""
        x = self.d.nodes[i]

        def paths(n: Node) -> set[tuple[str, ...]]:
            out = {n.path}
            if isinstance(n, C.Atom) and n.ref_path is not None:
                out.add(n.ref_path)
            return out

        mine = paths(x)
        out = []
        for j, y in enumerate(self.d.nodes):
            theirs = paths(y)
            if j != i and any(p[: len(q)] == q or q[: len(p)] == p for p in mine for q in theirs):
                out.append(y)
        return out

    def infeasible(self, pending: list[int]) -> dict[int, str]:
        n = len(self.d.nodes)
        if n > MAX_ENUMERATED:
            return {}
        found: dict[int, dict[bool, set[bool]]] = {i: {True: set(), False: set()} for i in pending}
        for v in itertools.product((False, True), repeat=n):
            if not self.feasible(v):
                continue
            out = self.d.f(v)
            for i in pending:
                if self.d._decides(v, i):
                    found[i][v[i]].add(out)
        proven = {}
        for i in pending:
            t, f = found[i][True], found[i][False]
            if any(a != b for a in t for b in f):
                continue
            proven[i] = "infeasible (proved from implications between atoms): no fact can make it decide the outcome "
            proven[i] += f"alone: {self.why(i)}"
        return proven

    def why(self, i: int) -> str:
        others = self.coupled(i)
        if others:
            return "coupled with " + ", ".join(self.describe(o) for o in others)
        return "redundant in the decision's logic"


# --- exact MC/DC feasibility ---------------------------------------------------------------------


class _TooBig(Exception):
    pass


Pair = tuple[dict[str, Any], dict[str, Any]] | None  # (true side, false side), None: infeasible


class _Prover:
    """Decides exactly whether a condition of a rule's decision has an MC/DC pair: two valid facts,
    the condition true in one and false in the other, deciding the outcome alone in each, with
    different outcomes. The exhaustive way lists every truth vector of the decision's conditions
    that a fact realises (:func:`stoprule.analysis.domain.build_space`); the solver asks, per
    condition, value and outcome, for a fact where it has that value and flipping it alone flips
    the decision."""

    def __init__(
        self,
        checked: CheckedPolicy,
        backend: str,
        engine: Callable[[dict[str, Any]], tuple[str | None, tuple[str, ...]]] | None,
        warnings: list[str],
    ) -> None:
        self.schema = checked.schema
        self.backend = backend
        self.engine = engine
        self.warnings = warnings

    def mcdc(self, d: _Decision, pending: list[int]) -> dict[int, tuple[str, Pair]]:
        found: dict[int, tuple[str, Pair]] | None = None
        if self.backend != "solver":
            try:
                found = self._exhaustive(d, pending, None if self.backend == "exhaustive" else MAX_STEPS)
            except (_TooBig, AnalysisLimit):
                if self.backend == "exhaustive":
                    return {}
        if found is None:
            found = self._solver(d, pending)
        out = {}
        for i, (how, pair) in found.items():
            ok = pair is None or (self._reproduces(d, i, pair[0], True) and self._reproduces(d, i, pair[1], False))
            if not ok:
                continue  # reported as a warning; the condition stays "not covered"
            out[i] = (how, pair)
        return out

    def _reproduces(self, d: _Decision, i: int, fact: dict[str, Any], side: bool) -> bool:
        """The witness validates, the interpreter sees the claimed truths, the engine the outcome."""
        problem = None
        try:
            norm = self.schema.validate(fact)
        except FactError as e:
            problem = f"does not validate ({e})"
        else:
            v = tuple(evaluate(n, norm) for n in d.nodes)
            if v[i] != side or not d._decides(v, i):
                problem = "the condition does not decide the outcome alone there"
            elif self.engine is not None and (d.rule in self.engine(fact)[1]) != d.f(v):
                problem = "the engine disagrees on the rule"
        if problem is not None:
            self.warnings.append(
                f"internal error: MC/DC witness for rule {d.rule} condition {i + 1}: {json.dumps(fact)} {problem}"
            )
        return problem is None

    @staticmethod
    def _pairs(
        d: _Decision, pending: list[int], facts: Callable[[int, bool, bool], dict[str, Any] | None], how: str
    ) -> dict[int, tuple[str, Pair]]:
        out: dict[int, tuple[str, Pair]] = {}
        for i in pending:
            pair: Pair = None
            for a in (True, False):
                t = facts(i, True, a)
                f = facts(i, False, not a) if t is not None else None
                if t is not None and f is not None:
                    pair = (t, f)
                    break
            out[i] = (how, pair)
        return out

    def _exhaustive(self, d: _Decision, pending: list[int], limit: int | None) -> dict[int, tuple[str, Pair]]:
        space = build_space(self.schema.root, list(d.nodes))
        store = space.store
        n = len(space.vars)
        vectors: dict[tuple[bool, ...], dict[int, int]] = {}
        steps = [0]
        # the earlier variables whose values later domains depend on: with the residual formulas,
        # they fix every continuation, so a state seen before adds no new truth vector
        later = [sorted({d for j in range(k, n) for d in space.vars[j].deps if d < k}) for k in range(n + 1)]
        seen: set[tuple[Any, ...]] = set()

        def dfs(k: int, ctx: dict[int, int], fs: list[int]) -> None:
            steps[0] += 1
            if limit is not None and steps[0] > limit:
                raise _TooBig
            key = (k, tuple(fs), tuple(ctx[d] for d in later[k]))
            if key in seen:
                return
            seen.add(key)
            if all(f in (TRUE, FALSE) for f in fs):
                vec = tuple(f == TRUE for f in fs)
                if vec not in vectors:
                    full = dict(ctx)
                    for j in range(k, n):
                        full[j] = space.domain(j, full)[0]
                    vectors[vec] = full
                return
            for j in space.domain(k, ctx):
                dfs(k + 1, {**ctx, k: j}, [store.subst(f, k, j) for f in fs])

        dfs(0, {}, [space.formula(x) for x in d.nodes])

        def facts(i: int, side: bool, out: bool) -> dict[str, Any] | None:
            for v, assign in vectors.items():
                if v[i] == side and d.f(v) == out and d._decides(v, i):
                    return space.fact(assign)
            return None

        return self._pairs(d, pending, facts, "enumerating every distinguishable fact")

    def _solver(self, d: _Decision, pending: list[int]) -> dict[int, tuple[str, Pair]]:
        import cvc5.pythonic as z3  # type: ignore[import-untyped]

        enc = Encoder(self.schema.root, [d.cond])
        terms = [enc.cond(x) for x in d.nodes]
        solver = Solver(enc, None)
        s = solver.new()

        def decision(i: int, value: bool) -> Any:
            env = list(terms)
            env[i] = z3.BoolVal(value)
            return _term(d.cond, d.index, env, z3)

        def facts(i: int, side: bool, out: bool) -> dict[str, Any] | None:
            now, flipped = decision(i, side), decision(i, not side)
            want = [
                terms[i] if side else z3.Not(terms[i]),
                now if out else z3.Not(now),
                z3.Not(flipped) if out else flipped,
            ]
            try:
                return solver.check(s, *want)
            except SolverUnknown:
                raise _TooBig from None

        try:
            return self._pairs(d, pending, facts, "the solver")
        except _TooBig:
            return {}


def _term(c: C.Cond, index: dict[Key, int], env: list[Any], z3: Any) -> Any:
    """The decision as a solver term over its conditions' terms ``env``."""
    if isinstance(c, C.Const):
        return z3.BoolVal(c.value)
    if isinstance(c, C.Not):
        return z3.Not(_term(c.item, index, env, z3))
    if isinstance(c, (C.AllOf, C.AnyOf)):
        parts = [_term(i, index, env, z3) for i in c.items]
        if not parts:
            return z3.BoolVal(isinstance(c, C.AllOf))
        if len(parts) == 1:
            return parts[0]
        return z3.And(*parts) if isinstance(c, C.AllOf) else z3.Or(*parts)
    if isinstance(c, (C.Ref, C.HighRisk)):
        assert c.body is not None
        return _term(c.body, index, env, z3)
    assert isinstance(c, (C.Atom, C.Quant))
    return env[index[_key(c)]]


# --- texts, sets and declarations ---------------------------------------------------------------


def _plain_text(n: Node, sets: dict[tuple[Any, ...], list[str]] | None = None) -> str:
    if isinstance(n, C.Quant):
        inner = n.where
        if isinstance(inner, C.Atom) and n.kind == "some":
            sep = "." if inner.field else " "
            return f"{n.field}[]{sep}{_plain_text(inner, sets)}"
        return f"{n.kind} {n.field} where {_tree_text(inner, sets)}"
    if sets and OPERATORS[n.op].set_operand and n.arg in sets:
        return f"{n.field or 'item'} {n.op} {sets[n.arg][0]}"
    return n.text()


def _tree_text(c: C.Cond, sets: dict[tuple[Any, ...], list[str]] | None) -> str:
    if isinstance(c, (C.Atom, C.Quant)):
        return _plain_text(c, sets)
    if isinstance(c, C.Const):
        return "true" if c.value else "false"
    if isinstance(c, C.Not):
        return f"not {_tree_text(c.item, sets)}"
    if isinstance(c, (C.AllOf, C.AnyOf)):
        sep = " and " if isinstance(c, C.AllOf) else " or "
        return "(" + sep.join(_tree_text(i, sets) for i in c.items) + ")"
    assert isinstance(c, (C.Ref, C.HighRisk)) and c.body is not None
    return _tree_text(c.body, sets)


def _set_atoms(conds: Iterable[C.Cond]) -> list[tuple[tuple[str, ...] | None, C.Atom]]:
    """Every in/not_in atom, with the list it ranges over (None at the fact's top level)."""
    out: dict[Key, tuple[tuple[str, ...] | None, C.Atom]] = {}

    def walk(c: C.Cond, within: tuple[str, ...] | None) -> None:
        if isinstance(c, C.Atom):
            if OPERATORS[c.op].set_operand:
                out.setdefault(_key(c), (within, c))
        elif isinstance(c, C.Quant):
            walk(c.where, c.path)
        else:
            for child in C.children(c):
                walk(child, within)

    for c in conds:
        walk(c, None)
    return list(out.values())


def compute_coverage(
    checked: CheckedPolicy,
    observations: Iterable[Observation],
    *,
    backend: str = "auto",
    engine: Callable[[dict[str, Any]], tuple[str | None, tuple[str, ...]]] | None = None,
) -> Coverage:
    """Coverage of the checked pack by the evaluated facts ``observations``.

    MC/DC feasibility of the conditions no fact pair covers is decided exactly on ``backend``
    (``exhaustive``: every distinguishable fact; ``solver``: one query per condition and side;
    ``auto``: exhaustive for decisions small enough, else the solver); every witness pair is
    re-checked with the interpreter and with ``engine`` (``fact -> (winner, matched rule ids)``).
    """
    assert backend in PROVERS, backend
    root = checked.root

    def display(file: str) -> str:
        return os.path.join(root, file)

    by_members: dict[tuple[Any, ...], list[str]] = {}
    for name, declared in checked.sets.items():
        by_members.setdefault(declared.members, []).append(name)

    rules: list[RuleCoverage] = []
    decisions: list[_Decision] = []
    for r in checked.rules:
        rc = RuleCoverage(r.id, display(r.loc.file), r.loc.line)

        def make(n: Node, scope: str | None, rc: RuleCoverage = rc) -> Condition:
            kind = "quantifier" if isinstance(n, C.Quant) else "atom"
            c = Condition(rc.id, _plain_text(n, by_members), display(n.loc.file), n.loc.line, scope, kind)
            rc.conditions.append(c)
            return c

        rules.append(rc)
        decisions.append(_Decision(r.when, make, None))
    by_id = {rc.id: (rc, d) for rc, d in zip(rules, decisions, strict=True)}

    set_atoms = _set_atoms(checked.conditions_in_use())
    carried: dict[str, set[Any]] = {name: set() for name in checked.sets}
    triggered: set[str] = set()
    verdicts_seen: set[str] = set()
    warnings: list[str] = []
    facts = 0
    for seen in observations:
        label, fact, verdict = seen.label, seen.fact, seen.verdict
        facts += 1
        verdicts_seen.add(verdict.verdict)
        matched = {m.rule for m in verdict.matched}
        for rc, d in zip(rules, decisions, strict=True):
            fired = d.observe(fact, label)
            if fired != (rc.id in matched):
                warnings.append(f"{label}: the interpreter and the engine disagree on rule {rc.id}")
        if verdict.rule in by_id:
            by_id[verdict.rule][0].won += 1
        for rid in matched:
            if rid in by_id:
                by_id[rid][0].matched += 1
        for s in checked.stops:
            if evaluate(s.when, fact):
                triggered.add(s.id)
        for within, atom in set_atoms:
            scopes = [fact] if within is None else get_path(fact, within)
            for scope in scopes if isinstance(scopes, list) else []:
                v = get_path(scope, atom.path) if atom.path else scope
                if isinstance(v, (str, int)) and not isinstance(v, bool):
                    for name in by_members.get(atom.arg, ()):
                        carried[name].add(v)

    def describe(n: Node) -> str:
        return f"{_plain_text(n, by_members)} ({display(n.loc.file)}:{n.loc.line})"

    prover = _Prover(checked, backend, engine, warnings)
    for rc, d in zip(rules, decisions, strict=True):
        d.rule = rc.id
        d.analyse(describe, prover)
        for sub in d.all_decisions()[1:]:  # a quantifier's where: over elements, from implications
            sub.analyse(describe)
    unexercised = _unexercised(checked, set_atoms, by_members, carried, triggered, verdicts_seen)
    return Coverage(rules, unexercised, facts, warnings)


def _unexercised(
    checked: CheckedPolicy,
    set_atoms: list[tuple[tuple[str, ...] | None, C.Atom]],
    by_members: dict[tuple[Any, ...], list[str]],
    carried: dict[str, set[Any]],
    triggered: set[str],
    verdicts_seen: set[str],
) -> list[Unexercised]:
    used = {name for _, a in set_atoms for name in by_members.get(a.arg, ())}
    out: list[Unexercised] = []

    def add(kind: str, name: str, loc: C.Loc, note: str) -> None:
        out.append(Unexercised(kind, name, os.path.join(checked.root, loc.file), loc.line, note))

    grouping = {d.within for d in checked.sets.values() if d.within is not None}
    members: dict[str, set[Any]] = {}  # member of a grouped set -> values carried against any set holding it
    for name, d in checked.sets.items():
        if name in grouping or d.within is not None:
            for m in d.members:
                members.setdefault(m, set()).update(carried[name])
    for name, d in checked.sets.items():
        if name in grouping:
            continue
        if d.within is not None:  # a class of a grouping set (e.g. the blocker categories)
            for m, loc in zip(d.members, d.member_locs, strict=True):
                if m not in members[m]:
                    note = f"no fact carried it in a field compared against {name} or {d.within}"
                    add(_kind(d), f"{name}.{m}", loc, note)
            continue
        kind = _kind(d)
        if name not in used:
            add("set" if kind == "set_member" else kind, name, d.loc, "no rule condition compares a field against it")
            continue
        for m, loc in zip(d.members, d.member_locs, strict=True):
            if m not in carried[name]:
                note = f"no fact carried it in a field compared against {name}"
                add(kind, f"{name}.{m}" if kind == "set_member" else str(m), loc, note)
    for s in checked.stops:
        if s.id not in triggered:
            add("high_risk_stop", s.id, s.loc, "no fact triggered it")
    for name, v in checked.verdicts.items():
        if name not in verdicts_seen:
            add("verdict", name, v.loc, "no fact received this verdict")
    return out


_MEMBER_KINDS = {"blocker_categories": "blocker_category", "legal_closure_states": "closure_state"}


def _kind(d: CheckedSet) -> str:
    """What a set's members are called in the report, after the pack section declaring them."""
    return _MEMBER_KINDS.get(d.section, "set_member")
