"""Evaluating a batch of facts (:meth:`Evaluator.evaluate_many
<stoprule.engine.evaluator.Evaluator.evaluate_many>`): the backend's runner for each thread
(the C accelerator by default) and the plan it is made from; off the stop's path (one fact).

On the cold path of ``stoprule eval`` (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

from stoprule._util.gcpause import paused_gc
from stoprule.diagnostics import EvaluationError
from stoprule.engine.verdict import Verdict, prototype
from stoprule.facts.schema import MISSING

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any, Literal

    from stoprule.engine.plan import Plan
    from stoprule.engine.protocols import Backend, Runner

__all__ = ["BACKEND", "WARM_UP", "backend_name", "describe_backend", "evaluate_many", "plan", "runner"]

# ``ev`` below is an Evaluator (typed Any: stoprule.engine.evaluator imports this module)

BACKEND = "python"  # the Python path's name (and the backend's when no accelerator is there)
WARM_UP = 32  # the fact of a batch at which the default backend is made (see evaluate_many)
# positions in a Verdict of what the C accelerator puts in a prototype
_FILLED = (Verdict._fields.index("matched"), Verdict._fields.index("high_risk_stop"), Verdict._fields.index("warnings"))


def evaluate_many(
    ev: Any,
    facts: Iterable[Any],
    on_error: Literal["raise", "return"] = "raise",
    strict: bool = False,
    *,
    explicit: bool,
) -> list[Verdict | EvaluationError]:
    """Evaluate facts in order; with ``on_error="return"`` a fact that cannot be decided
    yields its error (:class:`FactError`, or :class:`NoRuleMatched` for a gap in the pack).

    The default backend (the C accelerator) is made for this thread at the batch's
    ``WARM_UP``-th fact (a short batch, such as one fact, pays nothing to make it) and used
    from the first fact of every later batch; a backend given explicitly (``explicit``) is used
    at once."""
    out: list[Verdict | EvaluationError] = []
    append = out.append
    check = ev._check
    match = ev._data_matcher()
    decide = ev._decide
    run = runner(ev, make=explicit)
    warm = WARM_UP if run is None and ev._backend is not None else -1
    with paused_gc():
        for i, fact in enumerate(facts):
            if i == warm:
                run = runner(ev)
            try:
                verdict = None if run is None else run(fact)
                if verdict is None:
                    data, warnings = check(fact)
                    if warnings and strict:
                        from stoprule.facts.errors import strict_error

                        raise strict_error(warnings)
                    verdict = decide(data, match(data), tuple(warnings))
                elif strict and verdict.warnings:
                    from stoprule.facts.errors import strict_error

                    raise strict_error(list(verdict.warnings))
                append(verdict)
            except EvaluationError as exc:
                if on_error == "raise":
                    raise
                exc.extra.setdefault("index", i)
                append(exc)
    return out


def runner(ev: Any, make: bool = True) -> Runner | None:
    """This thread's runner of the plugged-in backend, or None (the Python path); with
    ``make`` false, None unless it was made already."""
    if ev._backend is None:
        return None
    if ev._runners is None:
        import threading

        ev._runners = threading.local()
    run = getattr(ev._runners, "run", MISSING)
    if run is MISSING:
        if not make:
            return None
        from stoprule.engine.backends import select_backend

        chosen: Backend | None = select_backend(ev._backend) if isinstance(ev._backend, str) else ev._backend
        run = ev._runners.run = None if chosen is None else chosen(ev.plan())
    found: Runner | None = run
    return found


def plan(ev: Any) -> Plan:
    """What a backend evaluates this pack with (:class:`~stoprule.engine.plan.Plan`), made once."""
    if ev._plan is None:
        from stoprule.engine.durable import library
        from stoprule.engine.plan import Plan, WinningRule

        compiled = ev.compiled
        winners = []
        for name in sorted(ev._rank, key=ev._rank.__getitem__):
            proto, messages = prototype(compiled, ev._rules[name])
            winners.append(WinningRule(name, ev._match[name], proto, messages))
        ev._plan = Plan(
            compiled=compiled,
            winners=tuple(winners),
            stops=tuple((name, ev._stops[name].id) for name in ev._stop_order),
            always=compiled.always,
            filled=_FILLED,
            thread_handles=ev._engine.thread_handles,
            engine_library=library(),
            unknown_warnings=compiled.schema._unknown_warnings,
            check=compiled.schema.check,
            interpret=lambda data: ev._interpreted(data, None),
            decide=ev._decide,
        )
    made: Plan = ev._plan
    return made


def backend_name(ev: Any) -> str:
    """The name of the backend evaluating this thread's batches (:attr:`Evaluator.backend
    <stoprule.engine.evaluator.Evaluator.backend>`)."""
    if ev._backend is None or runner(ev) is None:
        return BACKEND
    name = str(getattr(ev._backend, "__name__", type(ev._backend).__name__))
    return "c" if isinstance(ev._backend, str) or name == "c_backend" else name


def describe_backend() -> str:
    """What evaluates facts, for ``--version`` and ``doctor``."""
    from stoprule.engine import speedups
    from stoprule.engine.durable import ENGINE_SOURCE

    if speedups.load() is None:
        name = f"{BACKEND}, the C accelerator not built or turned off"
    else:
        name = "c accelerator for batches, python for single facts"
    return f"evaluation backend: {name} (durable_rules engine {ENGINE_SOURCE})"
