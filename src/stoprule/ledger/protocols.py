"""The ledger's seam: :class:`LedgerBackend`, what every reader and writer of a ledger uses.

Two implementations: the SQLite file (:class:`stoprule.ledger.store.Ledger`) and PostgreSQL
(:class:`stoprule.ledger.postgres.PgLedger`), with the same append-only and hash-chain
guarantees. :func:`stoprule.ledger.backend.open_ledger` is the one place that picks one, by
the path or URL it is given. ``tests/ledger/test_ledger_protocol.py`` checks both against it.

    with open_ledger(target) as ledger:      # a LedgerBackend
        with ledger.write():                 # one transaction: appends commit together
            ledger.hold([run])               # (optional: hold several runs at once, in a fixed order)
            node = ledger.append(run, verdict, fact, body, kind="decision", retryable=False)
        ledger.nodes(run)                    # reads: status, require, runs, node, nodes, records
        ledger.anchor()                      # PostgreSQL: anchor the runs written (SQLite: every write does)
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from stoprule.engine.verdict import Verdict
    from stoprule.ledger.errors import LedgerError
    from stoprule.ledger.keys import KeyRing
    from stoprule.ledger.store import Head, Node, RunStatus

__all__ = ["LedgerBackend"]


@runtime_checkable
class LedgerBackend(Protocol):
    path: str  # the file, or the URL shown without its password
    backend: str  # "sqlite" or "postgresql"
    schema: int  # the schema version the ledger holds
    upgraded_from: int | None  # set when opening upgraded it

    @property
    def keys_path(self) -> str: ...
    @property
    def connection(self) -> Any: ...
    @property
    def head_key(self) -> str | None: ...
    def close(self) -> None: ...
    def __enter__(self) -> Any: ...
    def __exit__(self, *exc: object) -> None: ...
    def write(self) -> AbstractContextManager[Any]: ...
    def head(self) -> Head | None: ...
    def resign(self, ring: KeyRing, retiring: str | None = None) -> None: ...
    def hold(self, runs: list[str], events: int = 1) -> None: ...
    def anchor(self) -> int: ...
    def append(
        self,
        run: str,
        verdict: Verdict,
        fact: str,
        fact_body: str,
        *,
        kind: str,
        retryable: bool,
        parent: Any = ...,
        retry_of: str | None = None,
        by: str | None = None,
        own: bool = False,
    ) -> Node: ...
    def append_recorded(self, body: dict[str, Any], fact_body: str) -> Node: ...
    def unknown_node(self, run: str, node: str, *, exists: bool | None = None) -> LedgerError: ...
    def status(self, run: str) -> RunStatus | None: ...
    def require(self, run: str) -> RunStatus: ...
    def runs(self, limit: int | None = None) -> list[RunStatus]: ...
    def node(self, run: str, node: str) -> Node | None: ...
    def retry_of(self, run: str, node: str) -> Node | None: ...
    def nodes(self, run: str) -> list[Node]: ...
    def records(self, run: str | None = None) -> Iterator[tuple[Node, str]]: ...
