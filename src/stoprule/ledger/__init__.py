"""The decision ledger: every recorded decision of a run, append-only, in SQLite.

Modules, lowest first (each imports only those above it, and core modules: diagnostics, evaluator)::

    errors   LedgerError, TokenError
    sha      SHA-256, HMAC-SHA256, compare_digest (CPython's built-in SHA-256: no OpenSSL to load)
    events   canonical JSON, digests, the hash-chain links (run and ledger), the validation_performed body
    journal  the stop hook's write (one synced line beside the ledger), folded in by the next open (folding)
    ddl      the SQL schema: tables, triggers (append-only, chain extension, the head), indexes
    keys     the signing-key file beside the ledger: create, rotate, retire; the head's HMAC
    runcheck one run's chain checked against every table (verify, and the schema-1 upgrade)
    store    Ledger: open (0600; upgrade), the append transaction and signed head, indexed reads
    tokens   retry tokens: mint, verify (HMAC-SHA256, constant-time)
    recorder Recorder: evaluate + append + mint; retry and idempotent replay
    verification every run's chain, the ledger chain and its signed head; name what broke
    render   status line, tree, JSON and Mermaid views of a run
    protocols LedgerBackend: the seam both ledgers implement (SQLite in store, PostgreSQL in postgres)
    backend  which ledger a path or URL names (SQLite file or PostgreSQL), opened: the one place
    postgres the ledger on PostgreSQL (psycopg; loaded only for a postgresql:// URL)
    transfer export and import of runs between ledgers

Nothing in the evaluator, compiler, engine or analysis imports this package, and it imports
neither the CLI nor analysis; the CLI imports it only when a command needs the ledger.
The names below load with their module on first use: the stop hook records a decision
through ``journal`` alone (no SQLite), and recording never imports ``verification``.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import ModuleType
    from typing import Any

    from stoprule.ledger.errors import LedgerError, TokenError
    from stoprule.ledger.recorder import Outcome, Recorder
    from stoprule.ledger.store import Ledger, Node, RunStatus
    from stoprule.ledger.verification import Break, Report, verify

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

_EXPORTS = {"LedgerError": "errors", "TokenError": "errors", "Outcome": "recorder", "Recorder": "recorder",
            "Ledger": "store", "Node": "store", "RunStatus": "store", "Break": "verification",
            "Report": "verification", "verify": "verification"}  # fmt: skip


def _load(module: str) -> ModuleType:
    """The defining module, imported (each named here, so the import graph sees it)."""
    if module == "errors":
        import stoprule.ledger.errors
    elif module == "recorder":
        import stoprule.ledger.recorder
    elif module == "store":
        import stoprule.ledger.store
    else:
        import stoprule.ledger.verification  # noqa: F401
    return sys.modules[f"{__name__}.{module}"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    loaded = _load(module)
    for export, where in _EXPORTS.items():  # all of the module's names
        if where == module:
            globals()[export] = getattr(loaded, export)
    return globals()[name]
