"""The decision ledger: every recorded decision of a run, append-only, in SQLite.

Modules, lowest first (each imports only those above it, and core modules: diagnostics, evaluator)::

    errors   LedgerError, TokenError
    events   canonical JSON, digests, the hash-chain link, the validation_performed body
    ddl      the SQL schema: tables, triggers (append-only, chain extension), indexes
    store    Ledger: open, the append transaction, indexed reads; where the key file lives
    keys     the signing-key file beside the ledger: create, rotate, retire
    tokens   retry tokens: mint, verify (HMAC-SHA256, constant-time)
    recorder Recorder: evaluate + append + mint; retry and idempotent replay
    verify   recompute every run's chain and name its first broken link
    render   status line, tree, JSON and Mermaid views of a run

Nothing in the evaluator, compiler, engine or analysis imports this package, and it imports
neither the CLI nor analysis; the CLI imports it only when a command needs the ledger.
"""

from __future__ import annotations

from .errors import LedgerError, TokenError
from .recorder import Outcome, Recorder
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
