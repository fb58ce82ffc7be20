"""The decision ledger: every recorded decision of a run, append-only, in SQLite.

Modules, lowest first (each imports only those above it, and the evaluator's types)::

    errors   LedgerError, TokenError
    events   canonical JSON, digests, the hash-chain link, the validation_performed body
    schema   tables, triggers (append-only, chain extension), indexes
    store    Ledger: open, the append transaction, indexed reads
    keys     the signing-key file beside the ledger: create, rotate, retire
    tokens   retry tokens: mint, verify (HMAC-SHA256, constant-time)
    record   Recorder: evaluate + append + mint; retry and idempotent replay
    verify   recompute every run's chain and name its first broken link
    render   status line, tree, JSON and Mermaid views of a run

Nothing in the evaluator, compiler or engine imports this package; the CLI imports it
only when a command needs the ledger.
"""

from __future__ import annotations

from .errors import LedgerError, TokenError
from .record import Outcome, Recorder
from .store import Ledger, Node, RunStatus
from .verify import Break, Report, verify

__all__ = [
    "Break",
    "Ledger",
    "LedgerError",
    "Node",
    "Outcome",
    "Recorder",
    "Report",
    "RunStatus",
    "TokenError",
    "verify",
]
