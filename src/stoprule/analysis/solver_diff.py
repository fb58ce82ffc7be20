"""``diff`` on the solver backend: both packs' conditions encoded once over the union of
their schemas; one query per pair of verdict regions that differ.

The query asks for a fact whose winning verdict/reason differs between the packs; its
model gives a pair (old winner, new winner), which is then excluded, until there is no
such fact. Each witness is re-checked against both packs with the reference interpreter.
No shares of the domain and no regions.
"""

from __future__ import annotations

import time
from typing import Any

import cvc5.pythonic as z3  # type: ignore[import-untyped]

from stoprule.analysis.decls import diff_declarations
from stoprule.analysis.diff import DiffReport, Label, _rule, _Side, _text, _verdict, union_schema
from stoprule.analysis.encoding import Encoder, all_of, any_of
from stoprule.analysis.explore import Progress
from stoprule.analysis.solver import Solver, Unknown, win_chain
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
    ma = [enc.cond(r.when) for r in a.rules]
    mb = [enc.cond(r.when) for r in b.rules]
    solver = Solver(enc, deadline)
    s = solver.new()
    ra = sorted(range(len(a.rules)), key=lambda i: a.seq.index(a.rules[i].index))
    rb = sorted(range(len(b.rules)), key=lambda i: b.seq.index(b.rules[i].index))
    wa = [all_of(ma[i], x) for i, x in enumerate(win_chain(s, ma, ra, "old"))]
    wb = [all_of(mb[i], x) for i, x in enumerate(win_chain(s, mb, rb, "new"))]
    none_a = z3.Not(any_of(ma))
    none_b = z3.Not(any_of(mb))

    def label_is(side: _Side, wins: list[Any], none: Any, label: Label) -> Any:
        return none if label is None else any_of([w for i, w in enumerate(wins) if side.labels[i] == label])

    labels: list[Label] = [*sorted({*a.labels, *b.labels}), None]
    differ = any_of(
        [z3.Xor(label_is(a, wa, none_a, la), label_is(b, wb, none_b, la)) for la in labels]
    )
    groups: dict[tuple[Label, Label], list[dict[str, Any]]] = {}
    avoid: list[Any] = []
    seen: set[str] = set()
    if progress:
        progress.phase("comparing")
    while True:
        try:
            fact = solver.check(s, differ, *avoid)
        except Unknown:
            report.unanswered.append("are there more facts whose verdict differs?")
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
        if (ea is None and eb is None and la == lb) or (ea is not None and eb is not None):
            report.bugs.append({"question": "which facts' verdict differs?", "fact": fact,
                                "problem": f"both packs give {_text(la)}"})  # fmt: skip
            break
        row: dict[str, Any] = {"old_rule": _rule(a, oa), "new_rule": _rule(b, ob), "cells": None, "share": None,
                               "example": {"fact": fact}}  # fmt: skip
        if ea is not None:
            row["example"]["old_error"] = ea
        if eb is not None:
            row["example"]["new_error"] = eb
        groups.setdefault((la, lb), []).append(row)
        avoid.append(z3.Not(all_of(wa[oa] if oa is not None else none_a, wb[ob] if ob is not None else none_b)))
        if progress:
            progress.advance(0.02)
    for (la, lb), rows in groups.items():
        report.changes.append(
            {"old": _verdict(la), "new": _verdict(lb), "title": f"{_text(la)} -> {_text(lb)}", "cells": None,
             "share": None, "regions": [], "rules": rows}
        )  # fmt: skip
    report.declarations = diff_declarations(old.inventory, new.inventory)
    report.seconds = time.perf_counter() - start
    if progress:
        progress.close()
    return report


def _winner(side: _Side, fact: dict[str, Any]) -> int | None:
    from stoprule.analysis.queries import outcome_of

    top = outcome_of(side.rules, side.checked.schema.validate(fact))
    return top[0] if top else None
