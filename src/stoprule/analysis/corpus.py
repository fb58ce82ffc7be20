"""What a corpus of real facts does to a pack: hits per rule, verdicts, fall-through, rejects.

Facts are evaluated by the engine (the same path as ``stoprule eval``).
"""

from __future__ import annotations

from typing import Any

from ..checked import CheckedPolicy
from ..compiled import CompiledPolicy
from ..diagnostics import FactError, NoRuleMatched
from ..evaluator import Evaluator
from .queries import catch_all

__all__ = ["corpus_stats"]


def corpus_stats(
    checked: CheckedPolicy, compiled: CompiledPolicy, items: list[tuple[int, Any]], name: str = ""
) -> dict[str, Any]:
    """Statistics over ``(line, fact or FactError)`` pairs (as ``eval`` parses NDJSON)."""
    ev = Evaluator(compiled)
    hits: dict[str, dict[str, Any]] = {
        r.id: {"rule": r.id, "location": str(r.loc), "matched": 0, "won": 0} for r in checked.rules
    }
    fallback = {r.id for r in checked.rules if catch_all(r)}
    verdicts: dict[tuple[str, str], int] = {}
    fell: list[int] = []
    no_rule: list[int] = []
    invalid: list[dict[str, Any]] = []
    evaluated = 0
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
        hits[v.rule]["won"] += 1
        for m in v.matched:
            hits[m.rule]["matched"] += 1
        verdicts[(v.verdict, v.reason)] = verdicts.get((v.verdict, v.reason), 0) + 1
        if v.rule in fallback:
            fell.append(line)
    return {
        "file": name,
        "facts": len(items),
        "evaluated": evaluated,
        "rules": list(hits.values()),
        "never_matched": [h["rule"] for h in hits.values() if not h["matched"]],
        "never_won": [h["rule"] for h in hits.values() if not h["won"]],
        "verdicts": [
            {"verdict": k[0], "reason": k[1], "count": n, "share": round(n / (evaluated or 1), 6)}
            for k, n in sorted(verdicts.items(), key=lambda kv: -kv[1])
        ],
        "catch_all": sorted(fallback),
        "fell_through": fell,
        "no_rule": no_rule,
        "invalid": invalid,
    }
