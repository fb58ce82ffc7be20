"""Static analysis of one pack: gaps, conflicts, dead rules, unused declarations, verdict map.

Every region is computed exactly over the abstraction of :mod:`.domain`; every
example fact is re-checked with the reference interpreter before it is reported.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .. import conditions as C
from ..compiler import CompileContext
from ..interpret import evaluate
from .domain import Space, build_space
from .explore import Cell, Decider, Explorer, Outcome, Progress, widen_regions
from .pack import (
    Refs,
    catch_all,
    decl_loc,
    drop_member,
    drop_stop,
    field_paths,
    member_loc,
    outcome_of,
    references,
    rewrite,
    rule_loc,
    schema_field_loc,
    uses_stops,
)

__all__ = ["AuditReport", "Finding", "audit_pack"]

MAX_REGIONS = 5


@dataclass
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

    @property
    def ok(self) -> bool:
        return not self.findings

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
        if self.corpus is not None:
            out["corpus"] = self.corpus
        return out


class _Audit:
    def __init__(self, ctx: CompileContext, progress: Progress | None) -> None:
        assert ctx.schema is not None
        self.ctx = ctx
        self.rules = ctx.rules
        self.progress = progress
        order = sorted(range(len(self.rules)), key=lambda i: (-self.rules[i].spec.priority, i))
        self.conds = [self.rules[i].cond for i in order] + [s.value[1] for s in ctx.stops]
        self.space: Space = build_space(ctx.schema.root, self.conds)  # type: ignore[arg-type]
        self.formulas = [self.space.formula(r.cond) for r in self.rules]  # type: ignore[arg-type]
        self.pris = [r.spec.priority for r in self.rules]
        self.decider = Decider(self.formulas, self.pris)
        self.total = 1
        self.wins: dict[int, int] = {}

    # ------------------------------------------------------------ helpers

    def label(self, i: int) -> tuple[str, str]:
        return (self.rules[i].spec.verdict, self.rules[i].spec.reason)

    def example(self, cell: Cell, expect: tuple[int, ...] | None = None, matches: int | None = None) -> dict:
        """The cell's example fact, checked: it validates and gives the claimed outcome."""
        assert self.ctx.schema is not None
        fact = self.space.fact(cell.assignment())
        norm = self.ctx.schema.validate(fact)
        got = outcome_of(self.rules, norm)
        if expect is not None and got != expect:
            raise AssertionError(f"audit example {fact} gives {got}, not {expect}")
        if matches is not None:
            assert evaluate(self.rules[matches].cond, norm), fact  # type: ignore[arg-type]
        return fact

    def share(self, count: int, total: int | None = None) -> float:
        return round(count / (total or self.total), 6)

    def rule_ref(self, i: int) -> dict[str, Any]:
        r = self.rules[i]
        return {
            "rule": r.id,
            "location": rule_loc(r),
            "priority": r.spec.priority,
            "verdict": r.spec.verdict,
            "reason": r.spec.reason,
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
            regions, _ = widen_regions(self.space, [self.decider], lambda o, a=a, b=b: a in o[0] and b in o[0], 3)
            report.findings.append(
                Finding(
                    "conflict",
                    rule_loc(rb),
                    f"{ra.id} ({'/'.join(self.label(a))}) and {rb.id} ({'/'.join(self.label(b))}) both match at "
                    f"priority {ra.spec.priority} and disagree; {self.rules[top[0]].id} wins only by declaration order",
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
                    str(self.ctx.root),
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
            cond_loc = f"{r.cond.loc.file}:{r.cond.loc.line}" if r.cond is not None else rule_loc(r)
            if not sub:
                report.findings.append(
                    Finding(
                        "unsatisfiable",
                        rule_loc(r),
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
                    rule_loc(r),
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
        conds = [r.cond for r in self.rules]
        variant = [rewrite(c, fn) for c in conds]  # type: ignore[arg-type]
        if variant == conds:
            return False
        space = build_space(self.space.root, self.conds + variant)  # type: ignore[arg-type]
        old = [space.formula(c) for c in conds]  # type: ignore[arg-type]
        new = [space.formula(c) for c in variant]
        if old == new:
            return False
        n = len(old)
        ex = Explorer(space, [Decider(old, self.pris), Decider(new, self.pris)])

        def differ(o: Outcome) -> bool:
            return (o[0] or (None,))[0] != (o[1] or (None,))[0]

        return ex.find(differ, prune=lambda res: res[:n] == res[n:]) is not None

    def stops(self, report: AuditReport) -> None:
        ctx = self.ctx
        if self.progress:
            self.progress.phase("high-risk stops")
        used = any(r.cond is not None and uses_stops(ctx, r.cond) for r in self.rules)
        for k, stop in enumerate(ctx.stops):
            if self.progress:
                self.progress.advance(1 / len(ctx.stops))
            f = self.space.formula(stop.value[1])
            data = {"section": stop.path[0], "name": stop.name}
            if Explorer(self.space, [], constraints=[f]).find(lambda o: True) is None:
                why = "its condition can never hold"
            elif not used:
                why = "no rule refers to high_risk_stop"
            else:
                if self._matters(drop_stop(ctx, k)):
                    continue
                why = "no outcome depends on it (wherever it holds, the winner is the same without it)"
            report.findings.append(Finding("unused", decl_loc(stop), f"high-risk stop {stop.name}: {why}", data))

    def declarations(self, report: AuditReport) -> None:
        refs = references(self.ctx)
        self.unreferenced(report, refs)
        self.members(report, refs)
        self.fields(report, refs)

    def unreferenced(self, report: AuditReport, refs: Refs) -> None:
        """Sets, named conditions and verdict kinds nothing refers to (or only rules that cannot win)."""
        ctx = self.ctx
        decls = ctx.sets
        grouping = {
            n
            for n, d in decls.items()
            if any(o is not d and o.path[: len(d.path)] == d.path and o.path != d.path for o in decls.values())
        }
        for name, d in decls.items():
            if name in grouping or name in refs.sets or name in refs.template_sets:
                continue
            via = [g for g in grouping if decls[g].path == d.path[: len(decls[g].path)] and g in refs.sets]
            extra = f" (its members are used only through {', '.join(via)})" if via else ""
            report.findings.append(
                Finding(
                    "unused",
                    decl_loc(d),
                    f"{name} is not referred to by any rule, high-risk stop or message{extra}",
                    {"section": d.path[0], "name": name},
                )
            )
        for name, d in ctx.conditions.items():
            if name not in refs.conditions:
                report.findings.append(
                    Finding(
                        "unused",
                        decl_loc(d),
                        f"named condition {name} is not used by any rule or high-risk stop",
                        {"section": d.path[0], "name": name},
                    )
                )
        for name, d in ctx.verdicts.items():
            if name not in refs.verdicts:
                why = "no rule gives this verdict"
            elif not any(self.wins.get(i) for i, r in enumerate(self.rules) if r.spec.verdict == name):
                why = "no rule giving this verdict can win"
            else:
                continue
            report.findings.append(
                Finding("unused", decl_loc(d), f"verdict kind {name}: {why}", {"section": d.path[0], "name": name})
            )

    def members(self, report: AuditReport, refs: Refs) -> None:
        """Members of referenced sets whose removal (from every set holding them) changes no winner."""
        decls = self.ctx.sets
        if self.progress:
            self.progress.phase("set members")
        members: dict[Any, list[str]] = {}
        for name in sorted(refs.sets | refs.template_sets):
            for m in decls[name].value if name in decls else ():
                members.setdefault(m, [])
        for name, d in decls.items():
            for m in d.value:
                if m in members and name not in members[m]:
                    members[m].append(name)
        for m, names in members.items():
            if self.progress:
                self.progress.advance(1 / len(members))
            values = [tuple(decls[n].value) for n in names]
            if self._matters(drop_member(values, m)):
                continue
            home = max(names, key=lambda n: len(decls[n].path))
            report.findings.append(
                Finding(
                    "unused",
                    member_loc(decls[home], m),
                    f"{m!r} in {', '.join(names)}: no outcome depends on it (the rules treat it like any other value)",
                    {"section": decls[home].path[0], "name": f"{home}.{m}", "member": m, "sets": names},
                )
            )

    def fields(self, report: AuditReport, refs: Refs) -> None:
        """Schema fields no condition or message reads (notes, not findings)."""
        ctx = self.ctx
        assert ctx.schema is not None
        for p in field_paths(ctx.schema.root):
            if not any(r[: len(p)] == p for r in refs.fields):
                text = ".".join(p).replace(".[]", "[]")
                report.notes.append(
                    Finding(
                        "unused_field",
                        schema_field_loc(ctx, p),
                        f"schema field {text} is read by no condition and no message",
                        {"field": text},
                    )
                )


def audit_pack(ctx: CompileContext, progress: Progress | None = None) -> AuditReport:
    """Audit a compiled pack (``compile_pack`` result)."""
    start = time.perf_counter()
    report = AuditReport(str(ctx.root), ctx.name, ctx.digest)
    a = _Audit(ctx, progress)
    a.explore(report)
    a.dead_rules(report)
    a.stops(report)
    a.declarations(report)
    order = {"gap": 0, "conflict": 1, "dead_rule": 2, "unsatisfiable": 3, "unused": 4}
    report.findings.sort(key=lambda f: order.get(f.kind, 9))
    report.seconds = time.perf_counter() - start
    if progress:
        progress.close()
    return report
