"""Which backend audits a pack: the exhaustive one (:mod:`.audit`), the SMT solver
(:mod:`.solver_audit`), or ``auto`` (exhaustive within a budget, else the solver)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from stoprule.analysis.audit import AuditReport, _exhaustive
from stoprule.analysis.diff import DiffReport, exhaustive_diff
from stoprule.analysis.explore import OutOfTime, Progress, set_deadline
from stoprule.analysis.solver_audit import solver_audit
from stoprule.analysis.solver_diff import solver_diff
from stoprule.diagnostics import AnalysisLimit
from stoprule.language.checked import CheckedPolicy

__all__ = ["AUTO_BUDGET", "BACKENDS", "audit_pack", "diff_packs"]

AUTO_BUDGET = 3.0  # seconds the exhaustive backend gets under ``auto`` before the solver takes over
BACKENDS = ("auto", "exhaustive", "solver")


def audit_pack(
    checked: CheckedPolicy,
    progress: Progress | None = None,
    *,
    backend: str = "exhaustive",
    timeout: float | None = None,
    engine: Callable[[dict[str, Any]], tuple[str | None, tuple[str, ...]]] | None = None,
) -> AuditReport:
    """Audit a checked pack (:func:`stoprule.language.compiler.check_pack`).

    ``backend``: ``exhaustive`` (exact shares and regions over the finite abstraction),
    ``solver`` (one SMT query per question, :mod:`.solver_audit`) or ``auto`` (exhaustive
    when it finishes within :data:`AUTO_BUDGET` seconds or is not beyond its limits, else
    the solver). ``timeout``: stop after that many seconds with the questions not answered
    listed in the report. ``engine``: ``fact -> (winner id, matched ids)``, the engine
    every solver witness is re-checked with.
    """
    assert backend in BACKENDS, backend
    start = time.monotonic()
    if backend != "solver":
        try:
            if backend == "exhaustive":
                return _exhaustive(checked, progress, timeout, False)
            # CPU seconds: a busy machine does not change the backend; an explicit timeout still holds
            with _cpu_budget(min(AUTO_BUDGET, timeout or AUTO_BUDGET)):
                return _exhaustive(checked, progress, None, True)
        except (OutOfTime, AnalysisLimit):
            if backend == "exhaustive":
                raise
    left = None if timeout is None else max(0.0, timeout - (time.monotonic() - start))
    report = solver_audit(checked, progress, timeout=left, engine=engine)
    report.timeout = timeout
    report.seconds = time.monotonic() - start
    return report


@contextmanager
def _cpu_budget(seconds: float) -> Iterator[None]:
    set_deadline(time.process_time() + seconds, time.process_time)
    try:
        yield
    finally:
        set_deadline(None)


def diff_packs(
    old: CheckedPolicy,
    new: CheckedPolicy,
    progress: Progress | None = None,
    *,
    backend: str = "exhaustive",
    timeout: float | None = None,
) -> DiffReport:
    """Compare two checked packs (:func:`stoprule.language.compiler.check_pack` results).

    ``backend``: ``exhaustive`` (shares and regions), ``solver`` (:mod:`.solver_diff`) or
    ``auto`` (exhaustive within a few CPU seconds, else the solver)."""
    assert backend in BACKENDS, backend
    if backend == "exhaustive":
        return exhaustive_diff(old, new, progress)
    if backend == "auto":
        try:
            with _cpu_budget(AUTO_BUDGET):
                return exhaustive_diff(old, new, progress)
        except (OutOfTime, AnalysisLimit):
            pass
    return solver_diff(old, new, progress, timeout=timeout)
