"""The engine's seams, as protocols a second implementation plugs in behind.

    Backend    (plan) -> Runner | None: a faster way to evaluate batches of one compiled pack
               (None: it does not apply to this pack); made once per thread
    Runner     (fact) -> Verdict | None: one fact decided exactly as
               :meth:`~stoprule.engine.evaluator.Evaluator.evaluate` (not strict) decides it,
               or None to leave it to the Python path (which then names its error)

Implementations: the C accelerator (:func:`stoprule.engine.speedups.c_backend`) and any plug-in
registered under the ``stoprule.backends`` entry-point group (:mod:`stoprule.engine.backends`
selects one). The conformance corpus (``tests/conformance``) holds each to the Python path, and
``tests/engine/test_protocols.py`` checks each against these protocols.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from stoprule.engine.plan import Plan
    from stoprule.engine.verdict import Verdict

__all__ = ["Backend", "Runner"]


@runtime_checkable
class Runner(Protocol):
    def __call__(self, fact: Any, /) -> Verdict | None: ...


@runtime_checkable
class Backend(Protocol):
    def __call__(self, plan: Plan) -> Runner | None: ...
