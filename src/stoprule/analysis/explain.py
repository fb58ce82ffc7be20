"""Why a fact got its verdict: the winner, what lost on priority, and for every other
rule the first atomic condition that failed, with the fact's value and what was wanted.

The engine decides; the reference interpreter (:mod:`stoprule.engine.interpret`) explains.
"""

from __future__ import annotations

import json
from typing import Any

from stoprule.engine.compiled import rank
from stoprule.engine.evaluator import Evaluator, Verdict
from stoprule.engine.interpret import evaluate, get_path
from stoprule.facts.schema import MISSING
from stoprule.language import conditions as C
from stoprule.language.checked import CheckedPolicy

__all__ = ["Explanation", "explain", "render_pretty"]

Explanation = dict[str, Any]


def _value(v: Any) -> Any:
    return "(absent)" if v is MISSING else v


def _truth(c: C.Cond, scope: Any) -> bool:
    """Truth of ``c`` with paths resolved from ``scope`` (the fact, or a list item)."""
    return evaluate(c, scope)


def _culprit(c: C.Cond, want: bool, fact: dict[str, Any], scope: Any, where: str = "") -> dict[str, Any]:
    """The atomic condition that made ``c`` differ from ``want`` (``c`` evaluates to ``not want``)."""
    if isinstance(c, (C.Ref, C.HighRisk)) and c.body is not None:
        return _culprit(c.body, want, fact, scope, where)
    if isinstance(c, C.Not):
        return _culprit(c.item, not want, fact, scope, where)
    if isinstance(c, (C.AllOf, C.AnyOf)):
        conj = isinstance(c, C.AllOf)
        if conj == want:  # an all that should hold / an any that should not: one child is off
            for item in c.items:
                if _truth(item, scope) != want:
                    return _culprit(item, want, fact, scope, where)
        # an any that should hold / an all that should not: every child is off; name the first
        out = _culprit(c.items[0], want, fact, scope, where)
        if len(c.items) > 1:
            out["note"] = f"none of {len(c.items)} alternatives" if want else f"all {len(c.items)} parts held"
        return out
    if isinstance(c, C.Quant):
        seq = get_path(scope, c.path)
        items = seq if isinstance(seq, list) else []
        label = ".".join(c.path)
        if (c.kind == "some") == want:
            # some should hold (no element matched) / every should not (all matched)
            return {
                "condition": C.cond_text(c),
                "field": label,
                "actual": f"{len(items)} element(s), " + ("none matching" if want else "all matching"),
                "wanted": C.cond_text(c) if want else f"not {C.cond_text(c)}",
                "file": c.loc.file,
                "line": c.loc.line,
                "path": c.loc.path,
            }
        # every should hold (an element failed) / some should not (an element matched)
        for i, item in enumerate(items):
            if evaluate(c.where, item) != want:
                return _culprit(c.where, want, fact, item, f"{label}[{i}]")
        raise AssertionError("quantifier explanation found no element")
    if isinstance(c, C.Const):
        return {
            "condition": str(c.value).lower(),
            "actual": c.value,
            "wanted": want,
            "file": c.loc.file,
            "line": c.loc.line,
            "path": c.loc.path,
        }
    assert isinstance(c, C.Atom)
    base = ".".join(c.path)
    field = f"{where}.{base}" if where and base else (where or base)
    out = {
        "condition": c.text(),
        "field": field,
        "actual": _value(get_path(scope, c.path) if c.path else scope),
        "wanted": ("" if want else "not ") + c.text(),
        "file": c.loc.file,
        "line": c.loc.line,
        "path": c.loc.path,
    }
    if c.ref_path is not None:
        out["compared_to"] = {"field": ".".join(c.ref_path), "actual": _value(get_path(fact, c.ref_path))}
    return out


def explain(checked: CheckedPolicy, evaluator: Evaluator, fact: Any) -> tuple[Verdict, Explanation]:
    """Evaluate ``fact`` (raises FactError if invalid) and explain every rule's outcome."""
    verdict = evaluator.evaluate(fact)
    data = evaluator.validate(fact)
    matched = [m.rule for m in verdict.matched]
    by_id = {r.id: r for r in checked.rules}
    rules = []
    for r in rank(checked.rules):
        entry: dict[str, Any] = {
            "rule": r.id,
            "priority": r.priority,
            "verdict": r.verdict,
            "reason": r.reason,
            "file": r.loc.file,
            "line": r.loc.line,
        }
        if r.id == verdict.rule:
            entry["status"] = "won"
        elif r.id in matched:
            entry["status"] = "matched"
            entry["lost_to"] = verdict.rule
            win = by_id[verdict.rule].priority
            entry["lost_on"] = "priority" if win > r.priority else "declaration order"
        else:
            entry["status"] = "not matched"
            entry["failed"] = _culprit(r.when, True, data, data)
        rules.append(entry)
    stops = [
        {"id": s.id, "applies": evaluate(s.when, data), "file": s.loc.file, "line": s.loc.line} for s in checked.stops
    ]
    return verdict, {"verdict": verdict.to_dict(), "rules": rules, "high_risk_stops": stops}


def _show(v: Any) -> str:
    return v if isinstance(v, str) and v.startswith("(") else json.dumps(v)


def render_pretty(exp: Explanation) -> str:
    """A short story: the decision, what else matched, why each other rule did not."""
    v = exp["verdict"]
    rules = exp["rules"]
    won = next(r for r in rules if r["status"] == "won")
    lines = [
        f"Verdict {v['verdict']} / {v['reason']} (ok: {str(v['ok']).lower()}, stop: {v['stop']}), "
        f"decided by {won['rule']} (priority {won['priority']}, {won['file']}:{won['line']}).",
        f"  {v['message']}",
    ]
    lost = [r for r in rules if r["status"] == "matched"]
    if lost:
        lines.append("Also matched, but lost:")
        lines += [
            f"  {r['rule']} ({r['verdict']}/{r['reason']}, priority {r['priority']}): lost to {r['lost_to']} "
            f"on {r['lost_on']}"
            for r in lost
        ]
    stops = [s["id"] for s in exp["high_risk_stops"] if s["applies"]]
    if stops:
        lines.append("High-risk stops that apply: " + ", ".join(stops))
    failed = [r for r in rules if r["status"] == "not matched"]
    if failed:
        lines.append("Did not match:")
        for r in failed:
            f = r["failed"]
            actual = f"{f.get('field') or 'value'} is {_show(f['actual'])}"
            if "compared_to" in f:
                actual += f", {f['compared_to']['field']} is {_show(f['compared_to']['actual'])}"
            note = f" ({f['note']})" if "note" in f else ""
            lines.append(
                f"  {r['rule']} (priority {r['priority']}): needs {f['wanted']}{note}, but {actual} "
                f"[{f['file']}:{f['line']}]"
            )
    return "\n".join(lines)
