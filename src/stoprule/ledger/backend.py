"""Which ledger: a file path is the SQLite ledger, a ``postgresql://`` URL the PostgreSQL one.

The URL (or path) comes from ``--ledger``, else ``$STOPRULE_LEDGER``, else the default file
(see ``store.resolve_path``). Both are a :class:`~stoprule.ledger.protocols.LedgerBackend`: the
same append, reads, recorder, verify, export and import. psycopg loads only for a URL. This is
the one place a ledger is opened.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

from stoprule.ledger.store import Ledger

TYPE_CHECKING = False
if TYPE_CHECKING:
    from stoprule.ledger.protocols import LedgerBackend

__all__ = ["is_url", "keys_file", "open_ledger"]

_SCHEMES = ("postgresql://", "postgres://")


def is_url(target: str | None) -> bool:
    """Whether ``target`` names a PostgreSQL ledger."""
    return bool(target) and str(target).startswith(_SCHEMES)


def open_ledger(
    target: str,
    *,
    create: bool = True,
    readonly: bool = False,
    label: str | None = None,
    timeout_ms: int | None = None,
) -> LedgerBackend:
    """Open the ledger ``target`` names (LedgerError if it cannot be used). For a PostgreSQL one,
    ``label`` names it in messages and ``timeout_ms`` bounds every wait (a file takes neither)."""
    if is_url(target):
        from stoprule.ledger.postgres import PgLedger

        return PgLedger.open(target, create=create, readonly=readonly, label=label, timeout_ms=timeout_ms)
    return Ledger.open(target, create=create, readonly=readonly)


def keys_file(target: str) -> str:
    """Where the signing keys of the ledger ``target`` live (beside a file; see ``postgres`` for a URL)."""
    if is_url(target):
        from stoprule.ledger.postgres import default_keys_path

        return default_keys_path()
    from stoprule.ledger.store import keys_path

    return keys_path(target)
