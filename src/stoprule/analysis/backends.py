"""Which backend answers ``audit`` and ``diff``: exhaustive, solver, or auto.

``exhaustive`` (:mod:`.audit`, :mod:`.diff`): exact shares and regions over the finite
abstraction, for packs it can explore. ``solver`` (:mod:`.solver_audit`,
:mod:`.solver_diff`): one SMT query per question, any size, no shares. ``auto``: the
exhaustive report when it finishes within :data:`AUTO_BUDGET` CPU seconds (and is not
beyond its limits), else the solver's.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from stoprule.analysis.audit import AuditReport, exhaustive_audit
from stoprule.analysis.diff import DiffReport
from stoprule.analysis.diff import diff_packs as exhaustive_diff
from stoprule.analysis.explore import OutOfTime, Progress, set_deadline
from stoprule.analysis.solver_audit import solver_audit
from stoprule.analysis.solver_diff import solver_diff
from stoprule.diagnostics import AnalysisLimit, NoRuleMatched
from stoprule.language.checked import CheckedPolicy

__all__ = ["AUTO_BUDGET", "BACKENDS", "audit_pack", "diff_packs", "engine_of"]

AUTO_BUDGET = 3.0  # CPU seconds the exhaustive backend gets under ``auto`` before the solver takes over
BACKENDS = ("auto", "exhaustive", "solver")

Engine = Callable[[dict[str, Any]], tuple[str | None, tuple[str, ...]]]


def engine_of(evaluator: Any) -> Engine:
    """An :data:`Engine` over an :class:`~stoprule.engine.evaluator.Evaluator`."""

    def run(fact: dict[str, Any]) -> tuple[str | None, tuple[str, ...]]:
        try:
            v = evaluator.evaluate(fact)
        except NoRuleMatched:
            return None, ()
        return v.rule, tuple(m.rule for m in v.matched)

    return run


@contextmanager
def _cpu_budget(seconds: float) -> Iterator[None]:
    """CPU seconds: a busy machine does not change the backend."""
    set_deadline(time.process_time() + seconds, time.process_time)
    try:
        yield
    finally:
        set_deadline(None)


def audit_pack(
    checked: CheckedPolicy,
    progress: Progress | None = None,
    *,
    backend: str = "exhaustive",
    timeout: float | None = None,
    engine: Engine | None = None,
) -> AuditReport:
    """Audit a checked pack (:func:`stoprule.language.compiler.check_pack`) on ``backend``.

    ``timeout``: stop after that many seconds with the questions not answered listed in
    the report. ``engine``: ``fact -> (winner id, matched ids)``, the engine every solver
    witness is re-checked with (:func:`engine_of`).
    """
    assert backend in BACKENDS, backend
    start = time.monotonic()
    if backend == "exhaustive":
        return exhaustive_audit(checked, progress, timeout, False)
    if backend == "auto":
        try:
            with _cpu_budget(min(AUTO_BUDGET, timeout or AUTO_BUDGET)):
                return exhaustive_audit(checked, progress, None, True)
        except (OutOfTime, AnalysisLimit):
            pass

    left = None if timeout is None else max(0.0, timeout - (time.monotonic() - start))
    report = solver_audit(checked, progress, timeout=left, engine=engine)
    report.timeout = timeout
    report.seconds = time.monotonic() - start
    return report


def diff_packs(
    old: CheckedPolicy,
    new: CheckedPolicy,
    progress: Progress | None = None,
    *,
    backend: str = "exhaustive",
    timeout: float | None = None,
) -> DiffReport:
    """Compare two checked packs on ``backend`` (see the module docstring)."""
    assert backend in BACKENDS, backend
    if backend == "exhaustive":
        return exhaustive_diff(old, new, progress)
    if backend == "auto":
        try:
            with _cpu_budget(min(AUTO_BUDGET, timeout or AUTO_BUDGET)):
                return exhaustive_diff(old, new, progress)
        except (OutOfTime, AnalysisLimit):
            pass

    return solver_diff(old, new, progress, timeout=timeout)
