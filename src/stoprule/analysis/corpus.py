"""What a corpus of real facts does to a pack: hits per rule, verdicts, fall-through, rejects.

Facts are evaluated by the engine (the same path as ``stoprule eval``).
"""

from __future__ import annotations

from typing import Any

from stoprule._util.gcpause import paused_gc
from stoprule.analysis.queries import catch_all
from stoprule.diagnostics import FactError, NoRuleMatched
from stoprule.engine.evaluator import Evaluator
from stoprule.language.checked import CheckedPolicy

__all__ = ["corpus_counts", "corpus_report", "merge_counts"]


def corpus_counts(ev: Evaluator, items: list[tuple[int, Any]]) -> dict[str, Any]:
    """The raw counts over ``items``; counts of consecutive parts of a corpus add up with
    :func:`merge_counts` (``audit --corpus --jobs``). Only the compiled pack is needed (a
    worker counts while the pack is analysed): the lines won by each rule whose condition is
    constant true are kept, the catch-alls among them (see :func:`corpus_report`)."""
    compiled = ev.compiled
    hits: dict[str, list[int]] = {r.id: [0, 0] for r in compiled.rules}  # matched, won
    always = set(compiled.always)
    won_lines: dict[str, list[int]] = {r.id: [] for r in compiled.rules if r.engine_name in always}
    verdicts: dict[tuple[str, str], int] = {}
    no_rule: list[int] = []
    invalid: list[dict[str, Any]] = []
    evaluated = 0
    with paused_gc():  # see gcpause
        for line, item in items:
            if isinstance(item, FactError):
                invalid.append({**item.to_dict(), "line": line})
                continue
            try:
                v = ev.evaluate(item)
            except NoRuleMatched:
                no_rule.append(line)
                evaluated += 1
                continue
            except FactError as exc:
                invalid.append({**exc.to_dict(), "line": line})
                continue
            evaluated += 1
            hits[v.rule][1] += 1
            for m in v.matched:
                hits[m.rule][0] += 1
            verdicts[(v.verdict, v.reason)] = verdicts.get((v.verdict, v.reason), 0) + 1
            if v.rule in won_lines:
                won_lines[v.rule].append(line)
    return {
        "facts": len(items),
        "evaluated": evaluated,
        "hits": hits,
        "verdicts": verdicts,
        "won_lines": won_lines,
        "no_rule": no_rule,
        "invalid": invalid,
    }


def merge_counts(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """The counts of consecutive parts of a corpus, as one pass over the whole would give."""
    out = parts[0]
    for p in parts[1:]:
        out["facts"] += p["facts"]
        out["evaluated"] += p["evaluated"]
        for rule, (matched, won) in p["hits"].items():
            out["hits"][rule][0] += matched
            out["hits"][rule][1] += won
        for key, n in p["verdicts"].items():  # first-seen order kept (it breaks ties below)
            out["verdicts"][key] = out["verdicts"].get(key, 0) + n
        for rule, lines in p["won_lines"].items():
            out["won_lines"][rule] += lines
        for k in ("no_rule", "invalid"):
            out[k] += p[k]
    return out


def corpus_report(checked: CheckedPolicy, counts: dict[str, Any], name: str = "") -> dict[str, Any]:
    """The ``corpus`` section of the audit report from :func:`corpus_counts`."""
    counted = counts["hits"]
    hits = [
        {"rule": r.id, "location": str(r.loc), "matched": counted[r.id][0], "won": counted[r.id][1]}
        for r in checked.rules
    ]
    # a catch-all's condition is constant true: its lines are among those counted
    fell = sorted(line for r in checked.rules if catch_all(r) for line in counts["won_lines"][r.id])
    evaluated = counts["evaluated"]
    return {
        "file": name,
        "facts": counts["facts"],
        "evaluated": evaluated,
        "rules": hits,
        "never_matched": [h["rule"] for h in hits if not h["matched"]],
        "never_won": [h["rule"] for h in hits if not h["won"]],
        "verdicts": [
            {"verdict": k[0], "reason": k[1], "count": n, "share": round(n / (evaluated or 1), 6)}
            for k, n in sorted(counts["verdicts"].items(), key=lambda kv: -kv[1])
        ],
        "catch_all": sorted(r.id for r in checked.rules if catch_all(r)),
        "fell_through": fell,
        "no_rule": counts["no_rule"],
        "invalid": counts["invalid"],
    }
