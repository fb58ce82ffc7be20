"""The stop hook's ledger write: one line in a journal beside the ledger, one sync; the next
command that opens the ledger folds the journal in (:mod:`stoprule.ledger.folding`).

Appending to the SQLite ledger costs a fresh process tens of milliseconds (SQLite loaded, the
signing keys read, a write-ahead log made, synced four times and checkpointed at close). A
stop hook instead appends one line to ``<ledger>.journal`` and syncs it (and, when it made the
file, its folder): once :func:`append` returns, the decision survives a crash of the process
and of the machine, as a committed ledger transaction does.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy
(:func:`append` is the stop hook's; folding is :mod:`stoprule.ledger.folding`'s).
"""

from __future__ import annotations

import time

from stoprule._util import oslite as os
from stoprule._util.jsonout import dumps

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from stoprule.engine.evaluator import Evaluator, Verdict

__all__ = ["FORMAT", "SUFFIX", "append", "decision_kind", "journal_path"]

FORMAT = 1
SUFFIX = ".journal"


def journal_path(ledger_path: str) -> str:
    """The journal of the ledger file at ``ledger_path``."""
    return os.path.abspath(ledger_path) + SUFFIX


def _now() -> str:
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t % 1 * 1000):03d}Z"


def decision_kind(verdict: Verdict, evaluator: Evaluator, checkpoint: bool = False) -> tuple[str, bool]:
    """A decision's node kind and whether it is retryable: ``step`` (``checkpoint`` when asked) when
    the verdict is ok, else ``blocked_attempt``, retryable when the pack's verdict kind says so."""
    if verdict.ok:
        return ("checkpoint" if checkpoint else "step"), False
    meta = evaluator.compiled.verdicts.get(verdict.verdict)
    return "blocked_attempt", bool(meta and meta.retryable)


def append(ledger_path: str, run: str, fact: Any, verdict: dict[str, Any], *, kind: str, retryable: bool) -> str:
    """Journal one decision (``verdict``: the envelope, :meth:`Verdict.to_dict`) for the ledger at
    ``ledger_path``; durable when this returns.

    ``fact`` and ``verdict`` are written as given: redact them first. Returns the decision's
    time (its ``at`` in the ledger). Raises ``OSError``, ``LedgerError`` for a bad run id, or
    ``ValueError`` for a number JSON cannot write."""
    from stoprule._util.files import append_durably
    from stoprule.ledger.errors import check_run_id

    check_run_id(run)  # what the fold would refuse is refused now, never acknowledged
    at = _now()
    entry = {"v": FORMAT, "run": run, "at": at, "kind": kind, "retryable": retryable, "verdict": verdict,
             "fact": fact}  # fmt: skip
    # a line of its own whatever came before it: a hook killed mid-line never glues a decision to its fragment
    # (a number JSON cannot write, NaN or an infinity, is refused now: ValueError, never acknowledged)
    line = dumps(entry, separators=(",", ":"), allow_nan=False)
    append_durably(journal_path(ledger_path), ("\n" + line + "\n").encode("ascii"))
    return at
