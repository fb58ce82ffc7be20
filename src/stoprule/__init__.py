"""stoprule: decide what an AI coding agent must do at a task boundary.

Public API::

    policy = stoprule.load_policy()          # the selected pack, compiled once
    verdict = policy.evaluate(fact)          # -> Verdict
    verdicts = policy.evaluate_many(facts)   # batch

Packages and modules, the pipeline from the bottom up (tools/import_graph.py keeps the layers)::

    codes, diagnostics, limits, project, version, _util/   the base: codes, errors, limits, state paths, helpers
    diagnostic  (the base too) a pack's or config file's Diagnostic, built only when one has a mistake
    facts/      the fact schema, reading facts, batches
    language/   a pack's YAML: load, check, compile stages
    config/     .stoprule/config.yaml and the serve file: defaults, models, the one loader
    engine/     the compiled policy and the evaluator on durable_rules
    analysis/   audit, coverage, diff: questions about a pack
    ledger/     the append-only record of decisions
    agent/      stoprule inside a harness's session: the stop hook, blockers
    console/    runs, decisions, blockers, reports and the policy in a browser
    serve/      the decision service over HTTP (and the console, for a team)
    cli/        the command line; ``__main__`` runs it, ``launch`` as a harness's hook does (no ``site``)

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

from stoprule.version import __version__

TYPE_CHECKING = False
if TYPE_CHECKING:
    from stoprule.diagnostic import Diagnostic
    from stoprule.diagnostics import (
        AnalysisLimit,
        EvaluationError,
        FactError,
        NoRuleMatched,
        PolicyError,
        StopruleError,
    )
    from stoprule.engine.evaluator import Evaluator, Match, Verdict
    from stoprule.engine.packs import bundled_pack, compile_policy, load_policy, select_pack
del TYPE_CHECKING

# imported on first use (PEP 562): ``import stoprule`` alone loads no engine, so a command
# that needs none (the guard, before every tool call) starts fast
_DIAGNOSTICS = frozenset(
    {"AnalysisLimit", "EvaluationError", "FactError", "NoRuleMatched", "PolicyError", "StopruleError"}
)
_EVALUATOR = frozenset({"Evaluator", "Match", "Verdict"})
_PACKS = frozenset({"bundled_pack", "compile_policy", "load_policy", "select_pack"})


def __getattr__(name: str) -> object:
    if name in _DIAGNOSTICS:
        from stoprule import diagnostics as module
    elif name == "Diagnostic":
        from stoprule import diagnostic as module  # type: ignore[no-redef]
    elif name in _EVALUATOR:
        from stoprule.engine import evaluator as module  # type: ignore[no-redef]
    elif name in _PACKS:
        from stoprule.engine import packs as module  # type: ignore[no-redef]
    else:
        raise AttributeError(f"module 'stoprule' has no attribute {name!r}")
    value = getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


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
