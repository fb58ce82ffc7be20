"""The solver backend of ``audit``: every question one z3 query over :mod:`.encoding`.

Questions, in order: which rules can win (one incremental sweep down the winner
order: rule *i* wins somewhere iff its condition holds while no rule above it does),
the gap (no rule holds), conflicts (two rules of the same priority and different
verdicts hold while no rule of a higher priority does), dead rules (never win:
unsatisfiable, or else each rule that beats them, one query per beater), high-risk
stops and set members (does taking it out change the winner anywhere), and the
reachable verdicts. Shares of the domain are not computed (``None``).

Every finding keeps a witness fact built from the model. It is validated, run through
the reference interpreter and, when an evaluator is given, through the engine; a
witness that does not give what the query claims is reported as a bug
(``AuditReport.bugs``), never as a finding. With a deadline, a question the solver
has not answered in time is listed in ``AuditReport.unanswered``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import cvc5.pythonic as z3  # type: ignore[import-untyped]

from stoprule.analysis.encoding import CHARS, Encoder, all_of, any_of
from stoprule.analysis.queries import drop_member, drop_stop, uses_stops
from stoprule.diagnostics import AnalysisError, FactError
from stoprule.engine.compiled import rank_key
from stoprule.engine.interpret import evaluate
from stoprule.language import conditions as C
from stoprule.language.checked import CheckedPolicy, CheckedRule

__all__ = ["Checker", "Solver", "SolverUnknown", "solver_name"]

Engine = Callable[[dict[str, Any]], tuple[str | None, tuple[str, ...]]]  # fact -> (winner id, matched ids)


def solver_name() -> str:
    import cvc5

    return f"cvc5 {cvc5.__version__}"


class SolverUnknown(AnalysisError):
    """The solver gave no answer in time."""


class Checker:
    """Re-checks a witness: valid fact, reference interpreter, engine."""

    def __init__(self, checked: CheckedPolicy, engine: Engine | None) -> None:
        self.checked = checked
        self.rules = checked.rules
        self.engine = engine
        self.ranked = sorted(range(len(self.rules)), key=lambda i: rank_key(self.rules[i]))
        self.bugs: list[dict[str, Any]] = []

    def outcome(self, fact: dict[str, Any], question: str, matching: Sequence[int] = ()) -> tuple[int, ...] | None:
        """The rules matching ``fact`` at the top priority (reference semantics), or None after
        recording why the witness is a bug: it is not a valid fact, a rule of ``matching`` does
        not match it, or the engine decides it otherwise (another winner, or a rule of
        ``matching`` not among its matches)."""
        try:
            norm = self.checked.schema.validate(fact)
        except FactError as exc:
            self.bug(question, fact, f"the witness is not a valid fact: {exc}")
            return None
        top = self.top(norm)
        missed = [self.rules[i].id for i in matching if not evaluate(self.rules[i].when, norm)]
        if missed:
            self.bug(question, fact, f"{', '.join(missed)} does not match the witness")
            return None
        if self.engine is not None:
            want = self.rules[top[0]].id if top else None
            try:
                got, matched = self.engine(fact)
            except Exception as exc:  # the engine must decide every valid fact
                self.bug(question, fact, f"the engine fails on the witness: {exc}")
                return None
            lost = [self.rules[i].id for i in matching if self.rules[i].id not in matched]
            if got != want or lost:
                self.bug(
                    question,
                    fact,
                    f"the engine gives winner {got} (matched {list(matched)}), the reference "
                    f"interpreter {want} (and {', '.join(self.rules[i].id for i in matching)} matching)",
                )
                return None
        return top

    def top(self, norm: dict[str, Any]) -> tuple[int, ...]:
        """The rules matching at the highest matching priority, winner first."""
        out: list[int] = []
        for i in self.ranked:
            if out and self.rules[i].priority != self.rules[out[0]].priority:
                break
            if evaluate(self.rules[i].when, norm):
                out.append(i)
        return tuple(out)

    def bug(self, question: str, fact: dict[str, Any], problem: str) -> None:
        self.bugs.append({"question": question, "fact": fact, "problem": problem})


class Solver:
    """Queries over one encoding, with a deadline shared by all of them."""

    def __init__(self, enc: Encoder, deadline: float | None) -> None:
        self.enc = enc
        self.deadline = deadline
        self.queries = 0
        self.texts = Texts(enc, self._limit)

    def new(self) -> z3.Solver:
        s = z3.Solver()
        # no preprocessing: it would substitute the winner chains' definitions into one deep
        # formula at every check (diff of 200 rules: 76 ms a query with it, under 1 ms without)
        s.set("simplification", "none")
        self._sync(s)
        return s

    def _sync(self, s: z3.Solver) -> None:
        """Adds the axioms (and lemmas) the encoder has gained since ``s`` last saw them."""
        seen = getattr(s, "_axioms_seen", 0)
        if seen < len(self.enc.axioms):
            s.add(self.enc.axioms[seen:])
            s._axioms_seen = len(self.enc.axioms)

    def _limit(self, s: z3.Solver) -> None:
        if self.deadline is not None:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise SolverUnknown
            s.set("tlimit-per", max(1, int(left * 1000)))  # cvc5: milliseconds per check

    def check(self, s: z3.Solver, *terms: Any) -> dict[str, Any] | None:
        """The fact of a model of ``terms`` on ``s``, or None when there is none; :class:`SolverUnknown`
        when the solver gives no answer in time."""
        self.queries += 1
        got = self._solve(s, terms)
        if got is None:
            return None
        fact = self.enc.fact(*got)
        if self.enc.rounded:  # a number that is not a double: pin it to a double next to it, if one fits
            pins: list[Any] = []
            for term, value in list(self.enc.rounded):
                d = float(value)
                for cand in (d, math.nextafter(d, math.inf), math.nextafter(d, -math.inf)):
                    pin = term == self.enc.exact(cand)
                    if self._solve(s, (*terms, *pins, pin)) is not None:
                        pins.append(pin)
                        break
            if pins and (got := self._solve(s, (*terms, *pins))) is not None:
                fact = self.enc.fact(*got)
        return fact

    def _solve(self, s: z3.Solver, terms: Sequence[Any]) -> tuple[Any, dict[int, str]] | None:
        """A model of ``terms`` whose string tests hold on real strings, and those strings (by
        node id); None when there is none. A model whose string tests cannot hold together
        teaches the encoding why (a lemma) and is asked again."""
        short = self.enc.short
        while True:
            self._limit(s)
            self._sync(s)
            # as assumptions: nothing to take back afterwards. Short lists first: a model is a
            # witness whatever its lists; only "none" needs the lists at their exact bound
            r = s.check(*terms, *short) if short else None
            if r != z3.sat:
                r = s.check(*terms)
            if r == z3.unknown:
                raise SolverUnknown
            if r != z3.sat:
                return None
            model = s.model()
            strings = self.texts.solve(model)
            if strings is not None:
                return model, strings


class Texts:
    """Checks a model's string tests (:class:`~.encoding.TextAtom`) on real strings: per group of
    string fields tied by tests, one query over just their tests, as the model has them. Answers
    are kept per set of tests and values; a set that cannot hold becomes a lemma (the tests of
    the solver's unsatisfiable core cannot hold together) in the encoding's axioms."""

    def __init__(self, enc: Encoder, limit: Callable[[z3.Solver], None]) -> None:
        self.enc = enc
        self.limit = limit
        self.groups: list[tuple[list[Any], list[int]]] = []
        self.seen = -1
        self.solvers: dict[frozenset[int], z3.Solver] = {}
        self.known: dict[frozenset[tuple[int, bool]], dict[int, str]] = {}
        self.checks = 0
        self.lemmas = 0

    def solve(self, model: Any) -> dict[int, str] | None:
        """The strings (by node id) of the model's string fields, or None after adding a lemma."""
        enc = self.enc
        if not enc.texts:
            return {}
        if self.seen != len(enc.texts):
            self.groups, self.seen = enc.text_groups(), len(enc.texts)
        alive: dict[int, bool] = {}

        def on(node: Any) -> bool:
            got = alive.get(id(node))
            if got is None:
                got = alive[id(node)] = z3.is_true(model.eval(node.alive, model_completion=True))
            return got

        out: dict[int, str] = {}
        for nodes, atoms in self.groups:
            lits = frozenset(
                (k, z3.is_true(model.eval(enc.texts[k].var, model_completion=True)))
                for k in atoms
                if all(on(n) for n in enc.texts[k].nodes)
            )
            if not lits:
                continue
            got = self.known.get(lits)
            if got is None:
                got = self._check(nodes, lits)
                if got is None:
                    return None
                self.known[lits] = got
            out.update(got)
        return out

    def _check(self, nodes: list[Any], lits: frozenset[tuple[int, bool]]) -> dict[int, str] | None:
        enc = self.enc
        key = frozenset(id(n) for n in nodes)
        s = self.solvers.get(key)
        if s is None:
            s = self.solvers[key] = z3.Solver()
            s.set("produce-unsat-cores", "true")
            s.add([z3.InRe(n.val, CHARS) for n in nodes])
        self.limit(s)
        self.checks += 1
        assumed = {}
        for k, value in lits:
            test = enc.texts[k].test
            term = test if value else z3.Not(test)
            assumed[term.get_id()] = (k, value, term)
        r = s.check(*[t for _, _, t in assumed.values()])
        if r == z3.unknown:
            raise SolverUnknown
        if r == z3.sat:
            m = s.model()
            used = {id(n): n for k, _ in lits for n in enc.texts[k].nodes}
            return {i: m.eval(n.val, model_completion=True).as_string() for i, n in used.items()}
        core = [assumed[c.get_id()] for c in s.unsat_core() if c.get_id() in assumed]
        if not core:  # the tests of one field alone: every one of them
            core = list(assumed.values())
        self.lemmas += 1
        enc.axioms.append(any_of([z3.Not(enc.texts[k].var) if v else enc.texts[k].var for k, v, _ in core]))
        return None


def win_chain(s: z3.Solver, conds: Sequence[Any], ranked: Sequence[int], tag: str) -> list[Any]:
    """Adds to ``s`` one Bool per position of the winner order: no rule above it holds.
    Returns them indexed by rule (``none_above[i]``)."""
    out: list[Any] = [None] * len(conds)
    prev = z3.BoolVal(True)
    for k, i in enumerate(ranked):
        out[i] = prev
        nxt = z3.Bool(f"{tag}!{k}")
        s.add(nxt == all_of(prev, z3.Not(conds[i])))
        prev = nxt
    return out


def variants(checked: CheckedPolicy, member_sets: dict[Any, list[str]]) -> dict[Any, list[C.Cond]]:
    """The rules' conditions without each high-risk stop and each set member (keys ``("stop", id)``
    and ``("member", m)``)."""
    conds = [r.when for r in checked.rules]
    out: dict[Any, list[C.Cond]] = {}
    if any(uses_stops(c) for c in conds):
        for stop in checked.stops:
            out[("stop", stop.id)] = [C.rewrite(c, drop_stop(stop.id)) for c in conds]
    for m, names in member_sets.items():
        out[("member", m)] = [C.rewrite(c, drop_member(names, m)) for c in conds]
    return out


def winner(rules: Sequence[CheckedRule], top: tuple[int, ...]) -> int | None:
    return min(top, key=lambda i: rank_key(rules[i])) if top else None


def variant_winner(rules: Sequence[CheckedRule], conds: Sequence[C.Cond], fact: dict[str, Any]) -> int | None:
    """The winner when the rules have conditions ``conds`` (reference semantics)."""
    matched = [i for i, c in enumerate(conds) if evaluate(c, fact)]
    return min(matched, key=lambda i: rank_key(rules[i])) if matched else None
