"""Semantic difference of two packs: where their verdicts differ, and what their declarations changed.

Both packs' conditions are abstracted together (over the union of their fact
schemas), so the space tells apart every value either pack tells apart; one
exploration then decides every cell under both packs. Subtrees where the two rule
lists have become the same list of (verdict, reason, residual condition), in the
same order, cannot differ and are not explored.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from stoprule.analysis.decls import diff_declarations
from stoprule.analysis.domain import build_space
from stoprule.analysis.explore import SAME, Cell, Decider, Explorer, Outcome, Progress, widen_regions
from stoprule.analysis.formula import FALSE
from stoprule.analysis.queries import outcome_of
from stoprule.diagnostics import FactError
from stoprule.engine.compiled import rank_key
from stoprule.facts.schema import FactField
from stoprule.language.checked import CheckedPolicy, CheckedRule

__all__ = ["DiffReport", "diff_packs", "union_schema"]

MAX_REGIONS = 2
Label = tuple[str, str] | None


@dataclass
class DiffReport:
    old: str
    new: str
    old_policy: str
    new_policy: str
    changes: list[dict[str, Any]] = field(default_factory=list)
    declarations: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    schema_notes: list[str] = field(default_factory=list)
    cells: int = 0
    changed_cells: int = 0
    seconds: float = 0.0
    backend: str = "exhaustive"
    unanswered: list[str] = field(default_factory=list)
    bugs: list[dict[str, Any]] = field(default_factory=list)
    timeout: float | None = None

    @property
    def changed(self) -> bool:
        return bool(self.changes)

    def to_dict(self) -> dict[str, Any]:
        return {
            "changed": self.changed,
            "old": {"pack": self.old, "policy": self.old_policy},
            "new": {"pack": self.new, "policy": self.new_policy},
            "seconds": round(self.seconds, 3),
            "schema_changed": bool(self.schema_notes),
            "schema_notes": self.schema_notes,
            "cells": self.cells,
            "changed_share": round(self.changed_cells / (self.cells or 1), 6),
            "changes": self.changes,
            "declarations": self.declarations,
            **({"backend": self.backend, "changed_share": None} if self.backend != "exhaustive" else {}),
            **({"stopped_after": self.timeout, "unanswered": self.unanswered} if self.unanswered else {}),
            **({"bugs": self.bugs} if self.bugs else {}),
        }


def _spec(f: FactField) -> tuple[Any, ...]:
    return (f.type, f.required, f.nullable, f.has_default, repr(f.default), f.values, f.required_if, f.additional)


def _like(f: FactField, **changes: Any) -> FactField:
    """A copy of ``f`` with some attributes replaced."""
    return f._replace(**changes)


def union_schema(a: FactField, b: FactField, path: str = "", notes: list[str] | None = None) -> FactField:
    """A schema with every field of both (the newer spec where both declare one); differences noted."""
    notes = notes if notes is not None else []
    where = path or "the fact"
    if _spec(a) != _spec(b):
        notes.append(f"{where}: {a.describe()} -> {b.describe()} (attributes differ; the new schema is used)")
    if a.type == b.type == "list" and a.items is not None and b.items is not None:
        return _like(b, items=union_schema(a.items, b.items, f"{path}[]", notes))
    if a.type != "object" or b.type != "object":
        return b
    fields: dict[str, FactField] = {}
    for name in [*a.fields, *(n for n in b.fields if n not in a.fields)]:
        sub = f"{path}.{name}" if path else name
        if name not in b.fields:
            notes.append(f"{sub}: only in the old schema")
            fields[name] = a.fields[name]
        elif name not in a.fields:
            notes.append(f"{sub}: only in the new schema")
            fields[name] = b.fields[name]
        else:
            fields[name] = union_schema(a.fields[name], b.fields[name], sub, notes)
    return _like(b, fields=fields)


class _Side:
    def __init__(self, checked: CheckedPolicy) -> None:
        self.checked = checked
        self.rules: tuple[CheckedRule, ...] = checked.rules
        self.labels: list[tuple[str, str]] = [(r.verdict, r.reason) for r in self.rules]
        self.seq = [r.index for r in sorted(self.rules, key=rank_key)]

    def label(self, top: tuple[int, ...] | None) -> Label:
        return self.labels[top[0]] if top else None

    def check(self, fact: dict[str, Any]) -> tuple[Label, str | None]:
        """The label this pack gives ``fact`` (reference semantics), or the validation error."""
        try:
            norm = self.checked.schema.validate(fact)
        except FactError as exc:
            return None, str(exc)
        return self.label(outcome_of(self.rules, norm)), None


def _text(label: Label) -> str:
    return "/".join(label) if label else "(no rule: policy.no_rule)"


def diff_packs(
    old: CheckedPolicy,
    new: CheckedPolicy,
    progress: Progress | None = None,
) -> DiffReport:
    """Compare two checked packs (:func:`stoprule.language.compiler.check_pack` results) on the
    exhaustive backend (:func:`stoprule.analysis.backends.diff_packs` chooses the backend)."""
    start = time.perf_counter()
    report = DiffReport(old.root, new.root, old.digest, new.digest)
    root = union_schema(old.schema.root, new.schema.root, notes=report.schema_notes)
    a, b = _Side(old), _Side(new)
    ordered = sorted(
        [(-r.priority, 0, r.index, r.when) for r in a.rules] + [(-r.priority, 1, r.index, r.when) for r in b.rules],
        key=lambda t: t[:3],
    )
    stops = [s.when for s in old.stops + new.stops]
    space = build_space(root, [t[3] for t in ordered] + stops)
    fa = [space.formula(r.when) for r in a.rules]
    fb = [space.formula(r.when) for r in b.rules]
    deciders = [Decider(fa, [r.priority for r in a.rules]), Decider(fb, [r.priority for r in b.rules])]
    n = len(fa)

    def same(res: tuple[int, ...]) -> bool:
        sa = [(a.labels[i], res[i]) for i in a.seq if res[i] != FALSE]
        sb = [(b.labels[i], res[n + i]) for i in b.seq if res[n + i] != FALSE]
        return sa == sb

    if progress:
        progress.phase("comparing")
    ex = Explorer(space, deciders, progress=progress, same=same)
    result = ex.run()
    report.cells = sum(c.count for c in result.values())
    groups: dict[tuple[Label, Label], dict[tuple[int | None, int | None], list[Any]]] = {}
    for o, cell in result.items():
        if o == SAME:
            continue
        la, lb = a.label(o[0]), b.label(o[1])
        if la == lb:
            continue
        pair = (o[0][0] if o[0] else None, o[1][0] if o[1] else None)
        entry = groups.setdefault((la, lb), {}).setdefault(pair, [0, None])
        entry[0] += cell.count
        if entry[1] is None or cell.cost < entry[1].cost:
            entry[1] = cell
    for (la, lb), pairs in sorted(groups.items(), key=lambda kv: -sum(e[0] for e in kv[1].values())):
        cells = sum(e[0] for e in pairs.values())
        report.changed_cells += cells
        rows = []
        for (ra, rb), (count, cell) in sorted(pairs.items(), key=lambda kv: -kv[1][0]):
            rows.append(
                {
                    "old_rule": _rule(a, ra),
                    "new_rule": _rule(b, rb),
                    "cells": count,
                    "share": round(count / report.cells, 6),
                    "example": _example(space, cell, a, b, la, lb),
                }
            )

        def pred(o: Outcome, la: Label = la, lb: Label = lb) -> bool:
            return a.label(o[0]) == la and b.label(o[1]) == lb

        regions, _ = widen_regions(space, deciders, pred, MAX_REGIONS, same)
        report.changes.append(
            {
                "old": _verdict(la),
                "new": _verdict(lb),
                "title": f"{_text(la)} -> {_text(lb)}",
                "cells": cells,
                "share": round(cells / report.cells, 6),
                "regions": [{"region": r, "example": _example(space, c, a, b, la, lb)} for r, c in regions],
                "rules": rows,
            }
        )
    report.declarations = diff_declarations(old.inventory, new.inventory)
    report.seconds = time.perf_counter() - start
    if progress:
        progress.close()
    return report


def _verdict(label: Label) -> dict[str, str] | None:
    return {"verdict": label[0], "reason": label[1]} if label else None


def _rule(side: _Side, i: int | None) -> dict[str, Any] | None:
    if i is None:
        return None
    r = side.rules[i]
    return {"rule": r.id, "location": str(r.loc)}


def _example(space: Any, cell: Cell, a: _Side, b: _Side, la: Label, lb: Label) -> dict[str, Any]:
    """The example fact, checked against both packs (reference semantics)."""
    fact = space.fact(cell.assignment())
    out: dict[str, Any] = {"fact": fact}
    for side, want, key in ((a, la, "old"), (b, lb, "new")):
        got, error = side.check(fact)
        if error is not None:
            out[f"{key}_error"] = error  # the schemas differ: this fact is not valid for one pack
        elif got != want:
            raise AssertionError(f"diff example {fact} gives {got} on the {key} pack, not {want}")
    return out
