"""``diff`` on the solver backend: both packs' conditions encoded once over the union of
their schemas; one query per old rule and one more per pair of winners that differ.

One sweep down the old pack's winner order: for old rule *i*, with every old rule above it
asserted false, the query asks for a fact it matches where the new pack's winner has
another verdict/reason (no new rule of *i*'s label wins: at most one new rule wins, through
the new pack's winner chain). Each model gives a pair (old rule *i*, new winner), which is
then excluded, until there is no such fact; then "not *i*" is asserted and the sweep goes
on. After the last rule, the facts no old rule matches (the gap) are asked about the same
way. Rules the packs share are the same terms, so a pair that does not differ is refuted
by propagation. Each witness is re-checked against both packs with the reference
interpreter. No shares of the domain and no regions.
"""

from __future__ import annotations

import time
from typing import Any

import cvc5.pythonic as z3  # type: ignore[import-untyped]

from stoprule.analysis.decls import diff_declarations
from stoprule.analysis.diff import DiffReport, Label, _rule, _Side, _text, _verdict, union_schema
from stoprule.analysis.encoding import Encoder, all_of, any_of
from stoprule.analysis.explore import Progress
from stoprule.analysis.queries import outcome_of
from stoprule.analysis.solver import Solver, SolverUnknown, win_chain
from stoprule.language.checked import CheckedPolicy

__all__ = ["solver_diff"]


def solver_diff(
    old: CheckedPolicy, new: CheckedPolicy, progress: Progress | None = None, *, timeout: float | None = None
) -> DiffReport:
    """Compare two checked packs on the solver backend."""
    start = time.perf_counter()
    deadline = time.monotonic() + timeout if timeout is not None else None
    report = DiffReport(old.root, new.root, old.digest, new.digest)
    report.backend = "solver"
    report.timeout = timeout
    root = union_schema(old.schema.root, new.schema.root, notes=report.schema_notes)
    a, b = _Side(old), _Side(new)
    enc = Encoder(root, [r.when for r in a.rules + b.rules] + [s.when for s in old.stops + new.stops])
    solver = Solver(enc, deadline)
    s = solver.new()
    names: dict[int, Any] = {}

    def named(term: Any) -> Any:
        """One Bool per distinct condition (a rule both packs share is one Bool): asserting it
        false is a unit the winner chains propagate at once."""
        got = names.get(term.get_id())
        if got is None:
            got = names[term.get_id()] = z3.Bool(f"rule!{len(names)}")
            s.add(got == term)
        return got

    ma = [named(enc.cond(r.when)) for r in a.rules]
    mb = [named(enc.cond(r.when)) for r in b.rules]
    ra = sorted(range(len(a.rules)), key=lambda i: a.seq.index(a.rules[i].index))
    rb = sorted(range(len(b.rules)), key=lambda i: b.seq.index(b.rules[i].index))
    wb = [all_of(mb[k], x) for k, x in enumerate(win_chain(s, mb, rb, "new"))]
    by_label: dict[Label, list[int]] = {}
    for k in rb:
        by_label.setdefault(b.labels[k], []).append(k)

    def new_differs(label: Label) -> Any:
        """The new pack's winner has another label than ``label`` (None: no rule)."""
        if label is None:
            return any_of(mb)
        return z3.Not(any_of([wb[k] for k in by_label.get(label, [])]))

    groups: dict[tuple[Label, Label], list[dict[str, Any]]] = {}
    if progress:
        progress.phase("comparing")
    for i in [*ra, None]:
        if progress:
            progress.advance(1 / (len(ra) + 1))
        label = a.labels[i] if i is not None else None
        query = [ma[i]] if i is not None else []
        query.append(new_differs(label))
        avoid: list[Any] = []
        seen: set[str] = set()
        while True:
            try:
                fact = solver.check(s, *query, *avoid)
            except SolverUnknown:
                what = f"old rule {a.rules[i].id}" if i is not None else "facts no old rule matches"
                report.unanswered.append(f"do the verdicts differ where {what} wins?")
                break
            if fact is None:
                break
            key = repr(fact)
            if key in seen:  # a fact one schema rejects: its winners are not known on that side
                report.unanswered.append("more facts that only one pack's schema accepts")
                break
            seen.add(key)
            la, ea = a.check(fact)
            lb, eb = b.check(fact)
            oa = _winner(a, fact) if ea is None else None
            ob = _winner(b, fact) if eb is None else None
            if (ea is None and (oa != i or la == lb)) or (ea is not None and eb is not None):
                report.bugs.append(
                    {
                        "question": "which facts' verdict differs?",
                        "fact": fact,
                        "problem": f"the old pack gives {_text(la)} by {_rule(a, oa)}, the new one {_text(lb)}",
                    }
                )
                break
            row: dict[str, Any] = {"old_rule": _rule(a, oa), "new_rule": _rule(b, ob), "cells": None,
                                   "share": None, "example": {"fact": fact}}  # fmt: skip
            if ea is not None:
                row["example"]["old_error"] = ea
            if eb is not None:
                row["example"]["new_error"] = eb
            groups.setdefault((la if ea is None else label, lb), []).append(row)
            avoid.append(z3.Not(wb[ob]) if ob is not None else any_of(mb))
        if i is not None:
            s.add(z3.Not(ma[i]))
    for (la, lb), rows in groups.items():
        report.changes.append(
            {
                "old": _verdict(la),
                "new": _verdict(lb),
                "title": f"{_text(la)} -> {_text(lb)}",
                "cells": None,
                "share": None,
                "regions": [],
                "rules": rows,
            }
        )
    report.declarations = diff_declarations(old.inventory, new.inventory)
    report.seconds = time.perf_counter() - start
    if progress:
        progress.close()
    return report


def _winner(side: _Side, fact: dict[str, Any]) -> int | None:
    top = outcome_of(side.rules, side.checked.schema.validate(fact))
    return top[0] if top else None
