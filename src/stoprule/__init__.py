"""stoprule: decide what an AI coding agent must do at a task boundary.

Public API::

    policy = stoprule.load_policy()          # the selected pack, compiled once
    verdict = policy.evaluate(fact)          # -> Verdict
    verdicts = policy.evaluate_many(facts)   # batch

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

from stoprule.diagnostics import (
    AnalysisLimit,
    Diagnostic,
    EvaluationError,
    FactError,
    NoRuleMatched,
    PolicyError,
    StopruleError,
)
from stoprule.engine.evaluator import Evaluator, Match, Verdict
from stoprule.engine.packs import bundled_pack, compile_policy, load_policy, select_pack
from stoprule.version import __version__

__all__ = [
    "AnalysisLimit",
    "Diagnostic",
    "EvaluationError",
    "Evaluator",
    "FactError",
    "Match",
    "NoRuleMatched",
    "PolicyError",
    "StopruleError",
    "Verdict",
    "__version__",
    "bundled_pack",
    "compile_policy",
    "load_policy",
    "select_pack",
]
