"""Static analysis of one pack: gaps, conflicts, dead rules, unused declarations, verdict map.

Every region is computed exactly over the abstraction of :mod:`.domain`; every
example fact is re-checked with the reference interpreter before it is reported.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from stoprule.analysis.domain import Space, build_space
from stoprule.analysis.explore import (
    Cell,
    Decider,
    Explorer,
    Outcome,
    OutOfTime,
    Progress,
    set_deadline,
    widen_regions,
)
from stoprule.analysis.queries import (
    Refs,
    catch_all,
    drop_member,
    drop_stop,
    field_paths,
    outcome_of,
    references,
    uses_stops,
)
from stoprule.engine.compiled import rank_key
from stoprule.engine.interpret import evaluate
from stoprule.language import conditions as C
from stoprule.language.checked import CheckedPolicy

__all__ = ["AuditReport", "Finding", "audit_pack", "exhaustive_audit", "member_sets"]

MAX_REGIONS = 5


@dataclass(frozen=True)
class Finding:
    """One problem (or note) with where it is and the evidence."""

    kind: str
    location: str
    message: str
    data: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "location": self.location, "message": self.message, **self.data}


@dataclass
class AuditReport:
    pack: str
    name: str
    digest: str
    findings: list[Finding] = field(default_factory=list)
    notes: list[Finding] = field(default_factory=list)
    verdict_map: list[dict[str, Any]] = field(default_factory=list)
    domain: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    corpus: dict[str, Any] | None = None
    backend: str = "exhaustive"
    unanswered: list[str] = field(default_factory=list)  # questions not answered before the deadline
    bugs: list[dict[str, Any]] = field(default_factory=list)  # witnesses that did not reproduce
    timeout: float | None = None

    @property
    def ok(self) -> bool:
        return not self.findings and not self.unanswered and not self.bugs

    def to_dict(self) -> dict[str, Any]:
        out = {
            "ok": self.ok,
            "pack": self.pack,
            "name": self.name,
            "policy": self.digest,
            "seconds": round(self.seconds, 3),
            "domain": self.domain,
            "findings": [f.to_dict() for f in self.findings],
            "notes": [f.to_dict() for f in self.notes],
            "verdict_map": self.verdict_map,
        }
        if self.backend != "exhaustive":
            out["backend"] = self.backend
        if self.unanswered:
            out["stopped_after"] = self.timeout
            out["unanswered"] = self.unanswered
        if self.bugs:
            out["bugs"] = self.bugs
        if self.corpus is not None:
            out["corpus"] = self.corpus
        return out


class _Audit:
    def __init__(self, checked: CheckedPolicy, progress: Progress | None) -> None:
        self.checked = checked
        self.rules = checked.rules
        self.progress = progress
        ranked = sorted(self.rules, key=rank_key)
        self.conds = [r.when for r in ranked] + [s.when for s in checked.stops]
        self.space: Space = build_space(checked.schema.root, self.conds)
        self.formulas = [self.space.formula(r.when) for r in self.rules]
        self.pris = [r.priority for r in self.rules]
        self.decider = Decider(self.formulas, self.pris)
        self.total = 1
        self.wins: dict[int, int] = {}

    # ------------------------------------------------------------ helpers

    def label(self, i: int) -> tuple[str, str]:
        return (self.rules[i].verdict, self.rules[i].reason)

    def example(self, cell: Cell, expect: tuple[int, ...] | None = None, matches: int | None = None) -> dict[Any, Any]:
        """The cell's example fact, checked: it validates and gives the claimed outcome."""
        fact = self.space.fact(cell.assignment())
        norm = self.checked.schema.validate(fact)
        got = outcome_of(self.rules, norm)
        if expect is not None and got != expect:
            raise AssertionError(f"audit example {fact} gives {got}, not {expect}")
        if matches is not None:
            assert evaluate(self.rules[matches].when, norm), fact
        return fact

    def share(self, count: int, total: int | None = None) -> float:
        return round(count / (total or self.total), 6)

    def rule_ref(self, i: int) -> dict[str, Any]:
        r = self.rules[i]
        return {
            "rule": r.id,
            "location": str(r.loc),
            "priority": r.priority,
            "verdict": r.verdict,
            "reason": r.reason,
        }

    # ------------------------------------------------------------ main exploration

    def explore(self, report: AuditReport) -> None:
        if self.progress:
            self.progress.phase("exploring")
        ex = Explorer(self.space, [self.decider], progress=self.progress)
        result = ex.run()
        self.total = sum(c.count for c in result.values()) or 1
        vmap: dict[tuple[str, str], dict[int, int]] = {}
        best: dict[tuple[str, str], tuple[Cell, tuple[int, ...]]] = {}
        gap_cells = 0
        conflicts: dict[tuple[int, int], list[Any]] = {}
        for o, cell in result.items():
            top = o[0]
            assert top is not None
            if not top:
                gap_cells += cell.count
                continue
            self.wins[top[0]] = self.wins.get(top[0], 0) + cell.count
            vmap.setdefault(self.label(top[0]), {}).setdefault(top[0], 0)
            vmap[self.label(top[0])][top[0]] += cell.count
            prev = best.get(self.label(top[0]))
            if prev is None or cell.cost < prev[0].cost:
                best[self.label(top[0])] = (cell, top)
            for a in top:
                for b in top:
                    if a < b and self.label(a) != self.label(b):
                        entry = conflicts.setdefault((a, b), [0, None, None])
                        entry[0] += cell.count
                        if entry[1] is None or cell.cost < entry[1].cost:
                            entry[1], entry[2] = cell, top
        report.domain = {
            "variables": len(self.space.vars),
            "cells": self.total,
            "states": len(ex.memo),
        }
        for (verdict, reason), by_rule in sorted(vmap.items(), key=lambda kv: -sum(kv[1].values())):
            cells = sum(by_rule.values())
            report.verdict_map.append(
                {
                    "verdict": verdict,
                    "reason": reason,
                    "cells": cells,
                    "share": self.share(cells),
                    "rules": [
                        {"rule": self.rules[i].id, "cells": n, "catch_all": catch_all(self.rules[i])}
                        for i, n in sorted(by_rule.items(), key=lambda kv: -kv[1])
                    ],
                    "example": self.example(*best[(verdict, reason)]),
                }
            )
        if gap_cells:
            report.verdict_map.append(
                {"verdict": None, "reason": None, "cells": gap_cells, "share": self.share(gap_cells), "rules": []}
            )
            self.gaps(report, gap_cells)
        for (a, b), (count, cell, top) in sorted(conflicts.items()):
            ra, rb = self.rules[a], self.rules[b]

            def both(o: Outcome, a: int = a, b: int = b) -> bool:
                return a in o[0] and b in o[0]  # type: ignore[operator]

            regions, _ = widen_regions(self.space, [self.decider], both, 3)
            report.findings.append(
                Finding(
                    "conflict",
                    str(rb.loc),
                    f"{ra.id} ({'/'.join(self.label(a))}) and {rb.id} ({'/'.join(self.label(b))}) both match at "
                    f"priority {ra.priority} and disagree; {self.rules[top[0]].id} wins only by declaration order",
                    {
                        "rules": [self.rule_ref(a), self.rule_ref(b)],
                        "cells": count,
                        "share": self.share(count),
                        "example": self.example(cell, expect=top),
                        "regions": [{"region": r, "example": self.example(c)} for r, c in regions],
                    },
                )
            )

    def gaps(self, report: AuditReport, cells: int) -> None:
        regions, more = widen_regions(self.space, [self.decider], lambda o: o[0] == (), MAX_REGIONS)
        for region, cell in regions:
            report.findings.append(
                Finding(
                    "gap",
                    self.checked.root,
                    "no rule matches these facts (evaluating one fails with policy.no_rule)",
                    {
                        "region": region,
                        "example": self.example(cell, expect=()),
                        "share": self.share(cell.count),
                        "gap_share": self.share(cells),
                        "more_regions": more,
                    },
                )
            )

    # ------------------------------------------------------------ dead rules

    def dead_rules(self, report: AuditReport) -> None:
        if self.progress:
            self.progress.phase("dead rules")
        dead = [i for i in range(len(self.rules)) if not self.wins.get(i)]
        for i in dead:
            r = self.rules[i]
            sub = Explorer(self.space, [self.decider], constraints=[self.formulas[i]]).run()
            if self.progress:
                self.progress.advance(1 / len(dead))
            root = r.when
            while isinstance(root, C.Ref) and root.body is not None:  # a named condition's own location
                root = root.body
            cond_loc = str(root.loc)
            if not sub:
                report.findings.append(
                    Finding(
                        "unsatisfiable",
                        str(r.loc),
                        f"{r.id}: its condition can never hold, so the rule never matches",
                        {"rule": r.id, "condition": cond_loc},
                    )
                )
                continue
            region = sum(c.count for c in sub.values())
            by_winner: dict[int, list[Any]] = {}
            for o, cell in sub.items():
                top = o[0]
                assert top
                entry = by_winner.setdefault(top[0], [0, None, None])
                entry[0] += cell.count
                if entry[1] is None or cell.cost < entry[1].cost:
                    entry[1], entry[2] = cell, top
            shadows = [
                {
                    **self.rule_ref(w),
                    "share_of_region": self.share(n, region),
                    "example": self.example(cell, expect=top, matches=i),
                }
                for w, (n, cell, top) in sorted(by_winner.items(), key=lambda kv: -kv[1][0])
            ]
            names = " or ".join(s["rule"] for s in shadows)
            report.findings.append(
                Finding(
                    "dead_rule",
                    str(r.loc),
                    f"{r.id} never wins: wherever it matches, {names} wins first",
                    {"rule": r.id, "condition": cond_loc, "region_share": self.share(region), "shadowed_by": shadows},
                )
            )

    # ------------------------------------------------------------ declarations

    def _matters(self, fn: Callable[[C.Cond], C.Cond | None]) -> bool:
        """Whether rewriting every rule's condition with ``fn`` changes the winner anywhere.

        The check runs over a space built from both versions of the conditions, so it
        tells apart every value either version tells apart.
        """
        conds = [r.when for r in self.rules]
        variant = [C.rewrite(c, fn) for c in conds]
        if variant == conds:
            return False
        space = build_space(self.space.root, self.conds + variant)
        old = [space.formula(c) for c in conds]
        new = [space.formula(c) for c in variant]
        if old == new:
            return False
        n = len(old)
        ex = Explorer(space, [Decider(old, self.pris), Decider(new, self.pris)])

        def differ(o: Outcome) -> bool:
            return (o[0] or (None,))[0] != (o[1] or (None,))[0]

        return ex.find(differ, prune=lambda res: res[:n] == res[n:]) is not None

    def stops(self, report: AuditReport) -> None:
        stops = self.checked.stops
        if self.progress:
            self.progress.phase("high-risk stops")
        used = any(uses_stops(r.when) for r in self.rules)
        for stop in stops:
            if self.progress:
                self.progress.advance(1 / len(stops))
            data = {"section": "high_risk_stops", "name": stop.id}
            if not self._satisfiable(stop.when):
                why = "its condition can never hold"
            elif not used:
                why = "no rule refers to high_risk_stop"
            else:
                if self._matters(drop_stop(stop.id)):
                    continue
                why = "no outcome depends on it (wherever it holds, the winner is the same without it)"
            report.findings.append(Finding("unused", str(stop.loc), f"high-risk stop {stop.id}: {why}", data))

    def _satisfiable(self, cond: C.Cond) -> bool:
        f = self.space.formula(cond)
        return Explorer(self.space, [], constraints=[f]).find(lambda o: True) is not None

    def declarations(self, report: AuditReport) -> None:
        refs = references(self.checked)
        self.unreferenced(report, refs)
        self.members(report, refs)
        self.fields(report, refs)

    def unreferenced(self, report: AuditReport, refs: Refs) -> None:
        """Sets, named conditions and verdict kinds nothing refers to (or only rules that cannot win)."""
        checked = self.checked
        sets = checked.sets
        grouping = {d.within for d in sets.values() if d.within is not None}
        for name, d in sets.items():
            if name in grouping or name in refs.sets or name in refs.template_sets:
                continue
            via = [d.within] if d.within is not None and d.within in refs.sets else []
            extra = f" (its members are used only through {', '.join(via)})" if via else ""
            report.findings.append(
                Finding(
                    "unused",
                    str(d.loc),
                    f"{name} is not referred to by any rule, high-risk stop or message{extra}",
                    {"section": d.section, "name": name},
                )
            )
        for name, nc in checked.conditions.items():
            if name not in refs.conditions:
                report.findings.append(
                    Finding(
                        "unused",
                        str(nc.loc),
                        f"named condition {name} is not used by any rule or high-risk stop",
                        {"section": "conditions", "name": name},
                    )
                )
        for name, v in checked.verdicts.items():
            if name not in refs.verdicts:
                why = "no rule gives this verdict"
            elif not any(self.wins.get(i) for i, r in enumerate(self.rules) if r.verdict == name):
                why = "no rule giving this verdict can win"
            else:
                continue
            report.findings.append(
                Finding("unused", str(v.loc), f"verdict kind {name}: {why}", {"section": "verdicts", "name": name})
            )

    def members(self, report: AuditReport, refs: Refs) -> None:
        """Members of referenced sets whose removal (from every set holding them) changes no winner."""
        sets = self.checked.sets
        if self.progress:
            self.progress.phase("set members")
        members = member_sets(self.checked, refs)
        for m, names in members.items():
            if self.progress:
                self.progress.advance(1 / len(members))
            if self._matters(drop_member(names, m)):
                continue
            # where the member is written: in a set of its own section, or a class of a grouping set
            home = max(names, key=lambda n: sets[n].within is not None or sets[n].section == "sets")
            d = sets[home]
            report.findings.append(
                Finding(
                    "unused",
                    str(d.member_locs[d.members.index(m)]),
                    f"{m!r} in {', '.join(names)}: no outcome depends on it (the rules treat it like any other value)",
                    {"section": d.section, "name": f"{home}.{m}", "member": m, "sets": names},
                )
            )

    def fields(self, report: AuditReport, refs: Refs) -> None:
        """Schema fields no condition or message reads (notes, not findings)."""
        checked = self.checked
        for p in field_paths(checked.schema.root):
            if not any(r[: len(p)] == p for r in refs.fields):
                text = ".".join(p).replace(".[]", "[]")
                loc = checked.field_loc(p)
                report.notes.append(
                    Finding(
                        "unused_field",
                        str(loc) if loc else "?",
                        f"schema field {text} is read by no condition and no message",
                        {"field": text},
                    )
                )


def member_sets(checked: CheckedPolicy, refs: Refs) -> dict[Any, list[str]]:
    """Members of the sets referred to, each with every set that holds it."""
    sets = checked.sets
    members: dict[Any, list[str]] = {}
    for name in sorted(refs.sets | refs.template_sets):
        for m in sets[name].members if name in sets else ():
            members.setdefault(m, [])
    for name, d in sets.items():
        for m in d.members:
            if m in members and name not in members[m]:
                members[m].append(name)
    return members


def audit_pack(checked: CheckedPolicy, progress: Progress | None = None, timeout: float | None = None) -> AuditReport:
    """Audit a checked pack (:func:`stoprule.language.compiler.check_pack`) on the exhaustive
    backend; past ``timeout`` seconds the phases not reached are listed as unanswered.
    :func:`stoprule.analysis.backends.audit_pack` chooses between the backends."""
    return exhaustive_audit(checked, progress, timeout, False)


def exhaustive_audit(
    checked: CheckedPolicy, progress: Progress | None, budget: float | None, whole: bool
) -> AuditReport:
    """The exhaustive audit; past ``budget`` seconds it raises :class:`OutOfTime` when ``whole``
    (nothing to keep), otherwise it lists the phases it did not reach as unanswered."""
    start = time.perf_counter()
    report = AuditReport(checked.root, checked.name, checked.digest, timeout=budget)
    if budget is not None:
        set_deadline(time.monotonic() + budget)
    phases = [
        ("gaps, conflicts and the verdict map", "explore"),
        ("dead and unsatisfiable rules", "dead_rules"),
        ("unused high-risk stops", "stops"),
        ("unused declarations", "declarations"),
    ]
    try:
        a = _Audit(checked, progress)
        for k, (_question, method) in enumerate(phases):
            try:
                getattr(a, method)(report)
            except OutOfTime:
                if whole:
                    raise
                report.unanswered = [q for q, _ in phases[k:]]
                break
    except OutOfTime:
        if whole:
            raise
        report.unanswered = [q for q, _ in phases]
    finally:
        if budget is not None:
            set_deadline(None)
        if progress:
            progress.close()
    order = {"gap": 0, "conflict": 1, "dead_rule": 2, "unsatisfiable": 3, "unused": 4}
    report.findings.sort(key=lambda f: order.get(f.kind, 9))
    report.seconds = time.perf_counter() - start
    return report
