"""``audit`` on the solver backend (:mod:`.solver`): the same findings as the exhaustive
one, each with a checked witness; no shares of the domain and no regions."""

from __future__ import annotations

import time
from typing import Any

import cvc5.pythonic as z3  # type: ignore[import-untyped]

from stoprule.analysis.audit import AuditReport, Finding, _Audit, member_sets
from stoprule.analysis.encoding import Encoder, all_of, any_of
from stoprule.analysis.explore import Progress
from stoprule.analysis.queries import catch_all, references
from stoprule.analysis.solver import (
    Checker,
    Engine,
    Solver,
    SolverUnknown,
    solver_name,
    variant_winner,
    variants,
    win_chain,
    winner,
)
from stoprule.diagnostics import FactError
from stoprule.engine.compiled import rank_key
from stoprule.engine.interpret import evaluate
from stoprule.language import conditions as C
from stoprule.language.checked import CheckedPolicy

__all__ = ["EVERY_BEATER_UP_TO", "MAX_BEATERS", "solver_audit"]

EVERY_BEATER_UP_TO = 150  # rules: up to this size a dead rule lists every rule that beats it
MAX_BEATERS = 5  # beyond it, the first ones found (the finding says the list may be incomplete)


class _SolverAudit(_Audit):
    def __init__(
        self, checked: CheckedPolicy, progress: Progress | None, deadline: float | None, engine: Engine | None
    ) -> None:
        self.checked = checked
        self.rules = checked.rules
        self.progress = progress
        self.pris = [r.priority for r in self.rules]
        self.wins: dict[int, int] = {}
        self.total = 1
        self.ranked = sorted(range(len(self.rules)), key=lambda i: rank_key(self.rules[i]))
        self.refs = references(checked)
        self.member_sets = member_sets(checked, self.refs)
        self.variants = variants(checked, self.member_sets)
        conds = [r.when for r in self.rules] + [s.when for s in checked.stops]
        for vs in self.variants.values():
            conds += vs
        self.enc = Encoder(checked.schema.root, conds)
        self.m = [self.enc.cond(r.when) for r in self.rules]
        self.solver = Solver(self.enc, deadline)
        self.check = Checker(checked, engine)
        self.unanswered: list[str] = []
        self.plain = self.solver.new()  # the axioms only
        self._chained: z3.Solver | None = None
        self._none_above: list[Any] = []

    @property
    def base(self) -> z3.Solver:
        """A solver that also defines, per rule, "no rule above it matches" (made on first use)."""
        if self._chained is None:
            self._chained = self.solver.new()
            self._none_above = win_chain(self._chained, self.m, self.ranked, "above")
        return self._chained

    @property
    def none_above(self) -> list[Any]:
        _ = self.base
        return self._none_above

    def ask(self, question: str, s: z3.Solver, *terms: Any) -> Any:
        """A witness fact, None (there is none), or False when the solver did not answer in time."""
        try:
            return self.solver.check(s, *terms)
        except SolverUnknown:
            self.unanswered.append(question)
            return False

    def matching(self, fact: dict[str, Any], among: list[int]) -> list[int]:
        """Which rules of ``among`` match ``fact`` (reference semantics)."""
        try:
            norm = self.checked.schema.validate(fact)
        except FactError:
            return []
        return [i for i in among if evaluate(self.rules[i].when, norm)]

    def step(self, k: int, n: int) -> None:
        if self.progress:
            self.progress.advance(1 / max(n, 1))

    # ------------------------------------------------------------ who can win, gaps, conflicts

    def explore(self, report: AuditReport) -> None:
        if self.progress:
            self.progress.phase("rules that win")
        rules = self.rules
        sweep = self.solver.new()
        examples: dict[int, dict[str, Any]] = {}
        for k, i in enumerate(self.ranked):
            self.step(k, len(self.ranked))
            q = f"can {rules[i].id} win?"
            model = self.ask(q, sweep, self.m[i])
            if isinstance(model, dict):
                fact = model
                top = self.check.outcome(fact, q, [i])
                if top is not None and winner(rules, top) != i:
                    self.check.bug(q, fact, f"the witness is won by {winner(rules, top)}, not {rules[i].id}")
                elif top is not None:
                    self.wins[i] = 1
                    examples[i] = fact
            sweep.add(z3.Not(self.m[i]))
        report.domain = {"variables": self.enc._n, "solver": solver_name()}
        labels: dict[tuple[str, str], list[int]] = {}
        for i in self.ranked:
            if i in examples:
                labels.setdefault(self.label(i), []).append(i)
        for (verdict, reason), won in labels.items():
            report.verdict_map.append(
                {
                    "verdict": verdict,
                    "reason": reason,
                    "cells": None,
                    "share": None,
                    "rules": [{"rule": rules[i].id, "cells": None, "catch_all": catch_all(rules[i])} for i in won],
                    "example": examples[won[0]],
                }
            )
        q = "is there a fact no rule matches?"
        model = self.ask(q, sweep)
        if isinstance(model, dict):
            fact = model
            top = self.check.outcome(fact, q)
            if top == ():
                report.verdict_map.append({"verdict": None, "reason": None, "cells": None, "share": None, "rules": []})
                report.findings.append(
                    Finding(
                        "gap",
                        self.checked.root,
                        "no rule matches these facts (evaluating one fails with policy.no_rule)",
                        {"example": fact, "share": None, "gap_share": None, "more_regions": None},
                    )
                )
            elif top is not None:
                self.check.bug(q, fact, "a rule matches the witness")
        self.conflicts(report)

    def conflicts(self, report: AuditReport) -> None:
        rules = self.rules
        by_pri: dict[int, list[int]] = {}
        for i in self.ranked:
            by_pri.setdefault(rules[i].priority, []).append(i)
        for group in by_pri.values():
            if len({self.label(i) for i in group}) < 2:
                continue
            above = self.none_above[group[0]]
            for x, a in enumerate(group):
                for b in group[x + 1 :]:
                    a, b = min(a, b), max(a, b)
                    if self.label(a) == self.label(b):
                        continue
                    q = f"do {rules[a].id} and {rules[b].id} both match at the top?"
                    model = self.ask(q, self.base, self.m[a], self.m[b], above)
                    if not isinstance(model, dict):
                        continue
                    fact = model
                    top = self.check.outcome(fact, q, [a, b])
                    if top is None:
                        continue
                    if a not in top or b not in top:
                        self.check.bug(q, fact, "the two rules do not both match at the top")
                        continue
                    ra, rb = rules[a], rules[b]
                    first = rules[winner(rules, top)]  # type: ignore[index]
                    report.findings.append(
                        Finding(
                            "conflict",
                            str(rb.loc),
                            f"{ra.id} ({'/'.join(self.label(a))}) and {rb.id} ({'/'.join(self.label(b))}) both "
                            f"match at priority {ra.priority} and disagree; {first.id} wins only by declaration order",
                            {
                                "rules": [self.rule_ref(a), self.rule_ref(b)],
                                "cells": None,
                                "share": None,
                                "example": fact,
                                "regions": [],
                            },
                        )
                    )

    # ------------------------------------------------------------ dead rules

    def dead_rules(self, report: AuditReport) -> None:
        """Rules that never win: unsatisfiable ones, then, in one more sweep down the winner
        order, each rule that wins somewhere inside a dead rule's condition."""
        if self.progress:
            self.progress.phase("dead rules")
        rules = self.rules
        live: list[int] = []
        for i in (i for i in self.ranked if not self.wins.get(i)):
            r = rules[i]
            model = self.ask(f"can {r.id} match?", self.plain, self.m[i])
            if model is None:
                report.findings.append(
                    Finding(
                        "unsatisfiable",
                        str(r.loc),
                        f"{r.id}: its condition can never hold, so the rule never matches",
                        {"rule": r.id, "condition": self.cond_loc(i)},
                    )
                )
            elif isinstance(model, dict):
                live.append(i)
        shadows: dict[int, list[dict[str, Any]]] = {i: [] for i in live}
        incomplete: set[int] = set()
        if len(rules) > EVERY_BEATER_UP_TO:
            for i in live:
                if self.some_beaters(i, shadows[i]):
                    incomplete.add(i)
        else:
            self.every_beater(live, shadows, incomplete)
        for i in live:
            if not shadows[i]:
                continue
            r = rules[i]
            names = " or ".join(s["rule"] for s in shadows[i])
            more = " (and possibly others: not every rule that beats it is listed)" if i in incomplete else ""
            report.findings.append(
                Finding(
                    "dead_rule",
                    str(r.loc),
                    f"{r.id} never wins: wherever it matches, {names} wins first{more}",
                    {
                        "rule": r.id,
                        "condition": self.cond_loc(i),
                        "region_share": None,
                        "shadowed_by": shadows[i],
                        **({"incomplete": True} if i in incomplete else {}),
                    },
                )
            )

    def some_beaters(self, i: int, out: list[dict[str, Any]]) -> bool:
        """Up to :data:`MAX_BEATERS` rules that win inside rule ``i``'s condition, each with a
        witness: a model gives one, then the next model must avoid the rules found so far.
        Returns whether the list may be incomplete (always, past the first)."""
        rules = self.rules
        avoid: list[Any] = []
        while len(out) < MAX_BEATERS:
            q = f"which rules beat {rules[i].id}?"
            fact = self.ask(q, self.plain, self.m[i], *avoid)
            if not isinstance(fact, dict):
                return fact is False or bool(avoid)
            top = self.check.outcome(fact, q, [i])
            w = winner(rules, top) if top else None
            if w is None or w == i:
                if top is not None:
                    self.check.bug(q, fact, f"the witness does not show {rules[i].id} beaten")
                return True
            out.append({**self.rule_ref(w), "share_of_region": None, "example": fact})
            avoid.append(z3.Not(self.m[w]))
        return True

    def every_beater(self, live: list[int], shadows: dict[int, list[dict[str, Any]]], incomplete: set[int]) -> None:
        """Every rule that wins somewhere inside a dead rule's condition: one sweep down the
        winner order asks, for each rule, which dead rules below it it beats."""
        rules = self.rules
        pos = {i: k for k, i in enumerate(self.ranked)}
        sweep = self.solver.new()
        for k, w in enumerate(self.ranked):
            self.step(k, len(self.ranked))
            below = [i for i in live if pos[i] > k]
            if not below:
                break
            while below:
                q = f"which dead rules does {rules[w].id} beat?"
                fact = self.ask(q, sweep, self.m[w], any_of([self.m[i] for i in below]))
                if fact is False:
                    incomplete.update(below)
                if not isinstance(fact, dict):
                    break
                hit = self.matching(fact, below)
                top = self.check.outcome(fact, q, [w, *hit])
                if top is None or winner(rules, top) != w or not hit:
                    if top is not None:
                        self.check.bug(q, fact, f"the witness does not show {rules[w].id} beating a dead rule")
                    incomplete.update(below)
                    break
                for i in hit:
                    shadows[i].append({**self.rule_ref(w), "share_of_region": None, "example": fact})
                below = [i for i in below if i not in hit]
            sweep.add(z3.Not(self.m[w]))

    def cond_loc(self, i: int) -> str:
        root = self.rules[i].when
        while isinstance(root, C.Ref) and root.body is not None:  # a named condition's own location
            root = root.body
        return str(root.loc)

    # ------------------------------------------------------------ declarations

    def _satisfiable(self, cond: C.Cond) -> bool:
        model = self.ask("can a high-risk stop hold?", self.plain, self.enc.cond(cond))
        return model is not None  # not answered: taken as satisfiable (listed as unanswered)

    def _matters(self, fn: Any) -> bool:
        conds = [r.when for r in self.rules]
        variant = [C.rewrite(c, fn) for c in conds]
        if variant == conds:
            return False
        mv = [self.enc.cond(c) for c in variant]
        changed = [i for i in self.ranked if not mv[i].eq(self.m[i])]
        if not changed:
            return False
        q = f"does any winner change without {getattr(fn, 'what', 'a declaration')}?"
        # the winners differ iff, for the first rule (in winner order) that matches in one version
        # and not in the other, no rule above it matches in either version
        cases = []
        for k, i in enumerate(changed):
            above = [z3.Not(mv[j]) for j in changed[:k]]
            cases.append(all_of(z3.Xor(self.m[i], mv[i]), self.none_above[i], *above))
        s = self.base
        differ = any_of(cases)
        model = self.ask(q, s, differ)
        if model is False:
            return True  # not answered: not reported as unused
        if model is None:
            return False
        fact = model
        if self.check.outcome(fact, q) is None:
            return True
        norm = self.checked.schema.validate(fact)
        if variant_winner(self.rules, conds, norm) == variant_winner(self.rules, variant, norm):
            self.check.bug(q, fact, "the winner is the same with and without it")
        return True


def solver_audit(
    checked: CheckedPolicy,
    progress: Progress | None = None,
    *,
    timeout: float | None = None,
    engine: Engine | None = None,
) -> AuditReport:
    """Audit a checked pack on the solver backend (see :mod:`.solver`)."""
    start = time.perf_counter()
    deadline = time.monotonic() + timeout if timeout is not None else None
    report = AuditReport(checked.root, checked.name, checked.digest)
    a = _SolverAudit(checked, progress, deadline, engine)
    a.explore(report)
    a.dead_rules(report)
    a.stops(report)
    a.declarations(report)
    order = {"gap": 0, "conflict": 1, "dead_rule": 2, "unsatisfiable": 3, "unused": 4}
    report.findings.sort(key=lambda f: order.get(f.kind, 9))
    report.backend = "solver"
    report.unanswered = a.unanswered
    report.bugs = a.check.bugs
    report.domain["queries"] = a.solver.queries
    report.seconds = time.perf_counter() - start
    if progress:
        progress.close()
    return report
