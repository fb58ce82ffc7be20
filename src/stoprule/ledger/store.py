"""The ledger file: opening it safely, the append transaction, and indexed reads.

One decision is one transaction (``BEGIN IMMEDIATE`` … ``COMMIT``) that inserts the fact body,
the ``validation_performed`` event, the node and its edge, and moves the run's status row
forward. SQLite in WAL mode with ``synchronous=FULL``: a decision whose transaction committed
survives a crash of the process *and* of the machine; one that did not commit leaves nothing.

Each run is a hash chain of its own, and its status row carries an HMAC of the chain's head: a
writer checks it before extending the run, so a run changed by someone without the key file is
refused rather than extended (and so vouched for). The runs a transaction wrote are *anchored*:
named with their heads in the ledger chain (``anchors``), whose last hash is the ledger head,
HMAC-signed; anchoring first checks the head's signature, so a head rewritten without the key is
never signed over. SQLite anchors in every write transaction (it has one writer at a time
anyway); PostgreSQL, where writers of different runs append at once, anchors periodically
(``postgres``). The file is created owner-only (0600); SQLite gives its ``-wal`` and ``-shm``
files the same mode.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from contextlib import contextmanager, suppress

from stoprule import codes
from stoprule._util.records import Record, record
from stoprule._util.redact import redact
from stoprule.ledger import keys
from stoprule.ledger.ddl import APPLICATION_ID, LEGACY_HEAD, SCHEMA_VERSION, STATEMENTS, UPGRADE
from stoprule.ledger.errors import LedgerError, check_run_id  # (defined there: the hook's journal checks ids)
from stoprule.ledger.events import (
    EVENT_TYPE,
    GENESIS,
    anchor_body,
    canonical,
    link,
    validation_event,
    well_formed,
)
from stoprule.ledger.sha import compare_digest

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

    from typing_extensions import Self

    from stoprule.engine.evaluator import Verdict

__all__ = [
    "BUSY_TIMEOUT",
    "DEFAULT_PATH",
    "SYNCHRONOUS",
    "TIP",
    "Head",
    "Ledger",
    "LedgerCore",
    "Node",
    "RunStatus",
    "check_run_id",
    "keys_path",
    "resolve_path",
    "corrupt",
    "sqlite_error",
]

DEFAULT_PATH = os.path.join(".stoprule", "ledger.db")
BUSY_TIMEOUT = 10.0  # seconds a writer waits for another writer's transaction
SYNCHRONOUS = "FULL"  # fsync the WAL at every commit: a returned decision survives power loss
# What marks the file, read in one statement so that a ledger another process is creating is seen
# before or after its creation, never half-way (three reads could see its id as 0, then its version).
_STAMP = (
    "SELECT (SELECT application_id FROM pragma_application_id),"
    " (SELECT user_version FROM pragma_user_version), EXISTS (SELECT 1 FROM sqlite_master)"
)
TIP: Any = object()  # append's default parent: the run's current tip
# a reader that cannot create the WAL index (-shm) beside a read-only ledger
_NO_SHM = ("SQLITE_READONLY_DIRECTORY", "SQLITE_READONLY_CANTINIT", "SQLITE_CANTOPEN")
# Python 3.10's sqlite3 errors carry no sqlite_errorname (3.11+): the messages of those codes
_NO_SHM_TEXT = ("attempt to write a readonly database", "unable to open database file")


def _no_shm(exc: BaseException) -> bool:
    name = getattr(exc, "sqlite_errorname", None)
    return name in _NO_SHM if name is not None else str(exc) in _NO_SHM_TEXT


_DB_ERRORS = (sqlite3.Error, UnicodeDecodeError)  # a damaged schema can make SQLite's own messages undecodable


@record
class Head(Record):
    """The ledger head: how many anchors it covers (= the last anchor's id), the chain hash, its signature."""

    anchors: int
    hash: str
    key: str | None
    mac: str | None


@record
class RunStatus(Record):
    """One run's status, read from its row in ``runs`` (no scan of the event log)."""

    run: str
    decisions: int
    head: str
    tip: str
    tip_kind: str
    retryable: bool
    attempt: int
    ok: bool
    verdict: str
    reason: str
    blocked: int
    created: str
    updated: str

    def to_dict(self) -> dict[str, Any]:
        return self._asdict()


@record
class Node(Record):
    """A node of a run's DAG with its incoming edge and the event that recorded it."""

    run: str
    node: str
    seq: int
    parent: str | None
    edge: str
    kind: str
    retryable: bool
    attempt: int
    retry_of: str | None
    ok: bool
    verdict: str
    reason: str
    fact: str
    hash: str
    body: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "parent": self.parent,
            "edge": self.edge,
            "kind": self.kind,
            "retryable": self.retryable,
            "attempt": self.attempt,
            "retry_of": self.retry_of,
            "ok": self.ok,
            "verdict": self.verdict,
            "reason": self.reason,
            "rule": self.body["verdict"]["rule"],
            "at": self.body["at"],
            "policy": self.body["policy"],
            "fact": self.fact,
            "event": self.hash,
            "by": self.body.get("by"),
        }


_NODE_SQL = """
SELECT n.run, n.node, n.seq, g.parent, g.kind, n.kind, n.retryable, n.attempt, n.retry_of,
       n.ok, n.verdict, n.reason, n.fact, e.hash, e.body
FROM nodes n JOIN edges g ON g.run = n.run AND g.child = n.node JOIN events e ON e.id = n.event
"""
_RUN_SQL = """
SELECT run, events, head, tip, tip_kind, retryable, attempt, ok, verdict, reason, blocked, created, updated
FROM runs
"""


def _node(row: tuple[Any, ...], path: str = "the ledger") -> Node:
    *cols, text = row
    try:
        body = json.loads(text)
    except (TypeError, ValueError):
        body = None
    if not well_formed(body):
        raise corrupt(path, f"the event body of run {cols[0]!r} node {cols[1]!r} is damaged")
    cols[6] = bool(cols[6])
    cols[9] = bool(cols[9])
    return Node._make([*cols, body])


def _run(row: tuple[Any, ...]) -> RunStatus:
    cols = list(row)
    cols[5] = bool(cols[5])
    cols[7] = bool(cols[7])
    return RunStatus(*cols)


# the verdict's texts that a pack's templates fill with a fact's values (the rest of an event body is
# stoprule's own: ids, digests, times, the pack's rule names): redacted, each text once (they repeat)
_TEXTS = ("message", "review_reason", "high_risk_stop")
_REDACTED: dict[str, str] = {}


def _redact_texts(verdict: dict[str, Any]) -> None:
    for name in _TEXTS:
        text = verdict.get(name)
        if isinstance(text, str):
            done = _REDACTED.get(text)
            if done is None:
                if len(_REDACTED) >= 4096:
                    _REDACTED.clear()
                done = _REDACTED[text] = redact(text)
            verdict[name] = done


# the rows of an append after its event (``LedgerCore._insert_rest``), in the SQL both databases speak
INSERT_NODE = (
    "INSERT INTO nodes (run, node, seq, kind, retryable, attempt, retry_of, ok, verdict, reason, fact, event)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
INSERT_EDGE = "INSERT INTO edges (run, child, parent, kind) VALUES (?, ?, ?, ?)"
RUN_COLUMNS = ("events", "head", "tip", "tip_kind", "retryable", "attempt", "ok", "verdict", "reason", "blocked",
               "updated", "last_event", "key", "mac")  # fmt: skip
INSERT_RUN = (
    f"INSERT INTO runs ({', '.join(RUN_COLUMNS)}, created, run) VALUES ({', '.join('?' * (len(RUN_COLUMNS) + 2))})"
)
UPDATE_RUN = f"UPDATE runs SET {', '.join(c + ' = ?' for c in RUN_COLUMNS)} WHERE run = ?"


def _now() -> str:
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t % 1 * 1000):03d}Z"


def resolve_path(explicit: str | None, env: dict[str, str] | os._Environ[str]) -> tuple[str, bool]:
    """The ledger path (``--ledger``, ``$STOPRULE_LEDGER``, ``ledger.db`` in the nearest ``.stoprule/``
    upward, else ``./.stoprule/ledger.db``) and whether it is the default."""
    if explicit:
        return explicit, False
    if env.get("STOPRULE_LEDGER"):
        return env["STOPRULE_LEDGER"], False
    from stoprule.project import find_project

    project = find_project()
    return (os.path.join(project, "ledger.db") if project else DEFAULT_PATH), True


def keys_path(ledger_path: str) -> str:
    """The signing-key file of the ledger at ``ledger_path``: beside it, ``<ledger>.keys`` (see ``keys``)."""
    return ledger_path + ".keys"


def corrupt(path: str, what: str) -> LedgerError:
    """``ledger.corrupt``: the file is damaged or was altered; it is left untouched."""
    return LedgerError(codes.LEDGER_CORRUPT, f"{path}: {what}; nothing was changed (run `stoprule log verify`)")


def sqlite_error(path: str, exc: sqlite3.Error | UnicodeDecodeError) -> LedgerError:
    """A SQLite error as a LedgerError that names the file and what to do."""
    if isinstance(exc, UnicodeDecodeError) or str(exc).startswith("Could not decode"):
        return corrupt(path, "it holds text that is not UTF-8 (a damaged or altered file)")
    name = getattr(exc, "sqlite_errorname", "") or ""
    text = str(exc)

    def means(names: tuple[str, ...], *words: str) -> bool:  # the error name when SQLite gives one, else its text
        return name.startswith(names) if name else any(w in text for w in words)

    if means(("SQLITE_BUSY", "SQLITE_LOCKED"), "database is locked", "database table is locked"):
        message = f"{path} is locked by another writer (waited {BUSY_TIMEOUT:g}s); try again"
        return LedgerError(codes.LEDGER_BUSY, message)
    if means(("SQLITE_READONLY",), "readonly database"):
        return LedgerError(codes.LEDGER_READ_ONLY, f"{path} is read-only ({text}); nothing was recorded")
    if means(("SQLITE_NOTADB", "SQLITE_CORRUPT"), "not a database", "malformed"):
        return LedgerError(codes.LEDGER_CORRUPT, f"{path} is not a readable SQLite database ({text}); left untouched")
    if means(("SQLITE_CANTOPEN",), "unable to open"):
        return LedgerError(codes.LEDGER_CANNOT_OPEN, f"cannot open {path} ({text})")
    if means(("SQLITE_FULL", "SQLITE_IOERR"), "disk I/O", "database or disk is full"):
        return LedgerError(codes.LEDGER_IO, f"cannot write {path} ({text}); nothing was recorded")
    if "no such table" in text or "no such column" in text:
        return corrupt(path, f"its schema is damaged ({text})")
    return LedgerError(codes.LEDGER_ERROR, f"{path}: {text}")


class LedgerCore:
    """What both ledgers share (:class:`Ledger` on SQLite, :class:`~stoprule.ledger.postgres.PgLedger`
    on PostgreSQL): the write transaction, the keys and signatures, the anchors of the ledger
    chain, appends and reads, all in the SQL both speak (``?`` parameters). Each ledger implements
    the storage primitives declared at the end: how a transaction begins and what it holds, how
    rows and event ids are taken, how its database's errors read, when runs are anchored.
    Together they make a :class:`~stoprule.ledger.protocols.LedgerBackend`."""

    def __init__(self, conn: Any, path: str) -> None:
        self._conn = conn
        self.path = path
        self.schema = SCHEMA_VERSION  # what the file holds (1: a schema-1 ledger opened read-only, not upgraded)
        self.upgraded_from: int | None = None  # set when opening upgraded the file
        self._in_tx = False
        self._head: Head | None = None  # inside write(), once checked: the head as of the last anchor
        self._touched: dict[str, tuple[str, int, str, int]] = {}  # inside write(): each run's new state
        self._ring: keys.KeyRing | None = None
        self._ring_stamp: tuple[int, ...] | None = None
        self._rows: dict[str, tuple[Any, ...] | None] = {}  # inside write(): each run held, as this transaction left it
        self._ids: list[int] = []  # inside write(): event ids taken ahead (when the database does not assign them)
        self.decided_at: str | None = None  # the time of the decision append records (None: now); see .journal

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def connection(self) -> Any:
        """The DB-API connection (``sqlite3``; for PostgreSQL an adapter that reads ``?`` parameters)."""
        return self._conn

    @contextmanager
    def write(self) -> Iterator[Self]:
        """One write transaction: everything inside commits together or not at all."""
        if self._in_tx:
            raise RuntimeError("write transactions do not nest")
        wrote = False
        with self._transaction():
            yield self
            wrote = bool(self._touched)
        if wrote:
            self._written()

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        try:
            self._begin()
        except self._errors as exc:
            raise self._error(exc) from None
        self._in_tx = True
        try:
            self._keyring()
            if self.anchor_every_write:
                self._head = self._checked_head()
            yield
            if self._touched and self.anchor_every_write:
                assert self._head is not None
                self._anchor(self._head, list(self._touched.values()))
            self._commit()
        except BaseException as exc:
            with suppress(*self._errors):  # the connection may be gone; the transaction is void either way
                self._conn.execute("ROLLBACK")
            if isinstance(exc, self._errors):
                raise self._error(exc) from None
            raise
        finally:
            self._in_tx = False
            self._head = None
            self._touched, self._rows, self._ids = {}, {}, []

    def _commit(self) -> None:
        self._flush()
        self._conn.execute("COMMIT")

    # ------------------------------------------------------------------ keys, signatures, the ledger head

    def _keyring(self) -> keys.KeyRing:
        """The key file as it is now (read again only when it changed on disk)."""
        try:
            st = os.stat(self.keys_path)
            stamp: tuple[int, ...] | None = (st.st_ino, st.st_mtime_ns, st.st_size, st.st_mode)
        except OSError:
            stamp = None
        if self._ring is None or stamp is None or stamp != self._ring_stamp:
            self._ring, self._ring_stamp = keys.load(self.keys_path), stamp
        return self._ring

    def _secret(self, kid: Any, what: str) -> bytes:
        """The secret of key ``kid`` (a write refuses what it cannot check: ``ledger.corrupt``)."""
        key = self._keyring().keys.get(kid) if isinstance(kid, str) else None
        if key is None or key.secret is None:
            raise corrupt(
                self.path,
                (
                    f"{what} is signed with key {kid!r}, which {self.keys_path} does not hold (the key file is part "
                    "of the ledger: restore it), so nothing can be appended"
                ),
            )
        return key.secret

    def head(self) -> Head | None:
        """The ledger head as stored (None for a ledger of an older schema opened read-only)."""
        if self.schema < SCHEMA_VERSION:
            return None
        rows = self._read("SELECT anchors, hash, key, mac FROM head WHERE id = 1")
        if not rows:
            raise corrupt(self.path, "the ledger head is missing")
        return Head(*rows[0])

    def _checked_head(self) -> Head:
        """The head, once its signature verifies with the key file (read holding the head).

        A head that does not verify is not signed again: that would vouch for whatever changed it.
        """
        head = self.head()
        assert head is not None  # a writable ledger has the current schema (opening upgrades it)
        if head.key is None:
            if head.anchors != 0 or head.hash != GENESIS:
                raise corrupt(self.path, "the ledger head is not signed")
            return head
        secret = self._secret(head.key, "the ledger head")
        if not isinstance(head.mac, str) or not compare_digest(
            head.mac.encode(), keys.head_mac(secret, head.anchors, head.hash).encode()
        ):
            raise corrupt(self.path, "the ledger head's signature does not verify (the head was altered)")
        return head

    def _signing_key(self) -> keys.Key:
        ring = self._keyring()
        if ring.active is None:
            self._ring = ring = keys.ensure(self.keys_path)
        key = ring.signing_key()
        assert key.secret is not None
        return key

    def _sign(self, anchors: int, head: str) -> tuple[str, str]:
        """``(key id, mac)`` for a head, with the signing key (the key file is made if there is none)."""
        key = self._signing_key()
        assert key.secret is not None
        return key.id, keys.head_mac(key.secret, anchors, head)

    def _sign_run(self, run: str, events: int, head: str) -> tuple[str, str]:
        """``(key id, mac)`` for a run's status row at ``events`` events whose chain ends at ``head``."""
        key = self._signing_key()
        assert key.secret is not None
        return key.id, keys.run_mac(key.secret, run, events, head)

    def _check_run(self, run: str, row: tuple[Any, ...]) -> None:
        """Refuse to extend a run whose status row's signature does not verify."""
        events, head, _, _, kid, mac = row
        if kid is None:
            raise corrupt(
                self.path,
                f"run {run!r}'s status row is not signed (changed without the key), so nothing can be appended to it",
            )
        secret = self._secret(kid, f"run {run!r}'s status row")
        want = keys.run_mac(secret, run, events, head)
        if not isinstance(mac, str) or not compare_digest(mac.encode(), want.encode()):
            raise corrupt(
                self.path,
                f"run {run!r}'s status row does not match its signature (it was altered "
                "without the key), so nothing can be appended to it",
            )

    def _anchor(self, head: Head, entries: list[tuple[str, int, str, int]]) -> Head:
        """Append one anchor naming ``entries`` (``(run, events, head, last event id)``) to the ledger chain
        after ``head`` (checked, and held by this transaction), and sign the new head."""
        n = head.anchors + 1
        body = anchor_body(n, _now(), entries)
        h = link(head.hash, body)
        self._conn.execute("INSERT INTO anchors (id, body, prev, hash) VALUES (?, ?, ?, ?)", (n, body, head.hash, h))
        key, mac = self._sign(n, h)
        self._conn.execute("UPDATE head SET anchors = ?, hash = ?, key = ?, mac = ? WHERE id = 1", (n, h, key, mac))
        self._head = Head(n, h, key, mac)
        return self._head

    def resign(self, ring: keys.KeyRing, retiring: str | None = None) -> None:
        """Inside :meth:`write`: sign again with ``ring``'s active key the ledger head (after a rotation),
        or, ``retiring`` a key, whatever it still signs (the head, run status rows)."""
        if not self._in_tx:
            raise RuntimeError("resign must run inside Ledger.write()")
        self._ring, self._ring_stamp = ring, None
        head = self._held_head()
        if retiring is None or head.key == retiring:
            key, mac = self._sign(head.anchors, head.hash)
            self._conn.execute("UPDATE head SET key = ?, mac = ? WHERE id = 1", (key, mac))
            self._head = head._replace(key=key, mac=mac)
        if retiring is not None:
            rows = self._conn.execute("SELECT run, events, head, mac FROM runs WHERE key = ?", (retiring,)).fetchall()
            for run, events, h, old in rows:
                self._check_run(run, (events, h, None, None, retiring, old))  # never vouch for an altered row
                key, mac = self._sign_run(run, events, h)
                self._conn.execute("UPDATE runs SET key = ?, mac = ? WHERE run = ?", (key, mac, run))

    @property
    def head_key(self) -> str | None:
        """The key the ledger head is signed with (as stored)."""
        head = self.head()
        return head.key if head is not None else None

    def append(
        self,
        run: str,
        verdict: Verdict,
        fact: str,
        fact_body: str,
        *,
        kind: str,
        retryable: bool,
        parent: Any = TIP,
        retry_of: str | None = None,
        by: str | None = None,
        own: bool = False,
    ) -> Node:
        """Append one decision (fact, event, node, edge, run status); call inside :meth:`write`.

        ``parent`` defaults to the run's tip; a retry's parent is the node it retries. ``by`` names
        the server token recording it; with ``own``, only into a new run or one ``by`` started
        (else LedgerError ``ledger.not_yours``). Its time is now, or a journaled decision's own
        (``decided_at``, set by :mod:`.journal` while it folds).
        """
        if not self._in_tx:
            raise RuntimeError("append must run inside Ledger.write()")
        c = self._conn
        row = self._locked_run(run)
        if own and row is not None:
            first = c.execute("SELECT body FROM events WHERE run = ? AND seq = 1", (run,)).fetchone()
            owner = json.loads(first[0]).get("by") if first else None
            if owner != by:
                raise LedgerError(
                    codes.LEDGER_NOT_YOURS,
                    f"run {run!r} was started by another token: this one may only record into runs of its own",
                )
        events, tip = (row[0], row[2]) if row else (0, None)
        attempt = 1
        if retry_of is not None:
            parent = retry_of
        if parent is TIP:
            parent = tip
        elif parent is not None:
            found = c.execute("SELECT attempt FROM nodes WHERE run = ? AND node = ?", (run, parent)).fetchone()
            if found is None:
                raise self.unknown_node(run, parent, exists=row is not None)
            if retry_of is not None:
                attempt = found[0] + 1
        seq = events + 1
        node = f"n{seq}"
        at = self.decided_at or _now()
        body = validation_event(
            run=run,
            seq=seq,
            node=node,
            parent=parent,
            kind=kind,
            retryable=retryable,
            attempt=attempt,
            retry_of=retry_of,
            fact=fact,
            verdict=verdict,
            at=at,
            by=by,
        )
        _redact_texts(body["verdict"])  # a verdict's message may quote a fact's secret
        return self._store(body, fact_body, row)

    def _locked_run(self, run: str) -> tuple[Any, ...] | None:
        """The run's row, held for this transaction and its signature checked (None: a new run)."""
        if run not in self._rows:
            self.hold([run])
        elif run in self._touched:
            self._flush()  # what this transaction appended to it is written before it is read or extended
        return self._rows[run]

    def hold(self, runs: list[str], events: int = 1) -> None:
        """Inside :meth:`write`: hold ``runs`` for this transaction, in a fixed order (two transactions
        that each write several runs then never wait on each other in a circle), read their status
        rows at once and check their signatures; take ``events`` event ids ahead."""
        if not self._in_tx:
            raise RuntimeError("hold must run inside Ledger.write()")
        fresh = sorted(set(runs) - set(self._rows))
        self._lock_runs(fresh)
        rows, ids = self._run_rows(fresh, events if not self._ids else 0)
        self._ids += ids
        for run in fresh:
            row = rows[run]
            if row is not None:
                self._check_run(run, row)
            self._rows[run] = row

    def append_recorded(self, body: dict[str, Any], fact_body: str) -> Node:
        """Append an event exactly as another ledger recorded it (``log import``); inside :meth:`write`.

        The body must extend the run here: its ``seq`` the run's next, its ``prev`` the run's head.
        """
        if not self._in_tx:
            raise RuntimeError("append_recorded must run inside Ledger.write()")
        run = body["run"]
        row = self._locked_run(run)
        if body["seq"] != (row[0] if row else 0) + 1:
            raise LedgerError(
                codes.LEDGER_IMPORT,
                f"run {run!r}: event {body['seq']} does not follow the run's "
                f"{row[0] if row else 0} event(s) in {self.path}",
            )
        return self._store(body, fact_body, row)

    def _store(self, body: dict[str, Any], fact_body: str, row: tuple[Any, ...] | None) -> Node:
        """Insert the fact, the event, its node and edge; sign and move the run's status forward."""
        run, seq, node, parent, kind = body["run"], body["seq"], body["node"], body["parent"], body["kind"]
        retryable, attempt, retry_of = body["retryable"], body["attempt"], body["retry_of"]
        fact, at = body["fact"], body["at"]
        v = body["verdict"]
        _, head, _, blocked = row[:4] if row else (0, GENESIS, None, 0)
        edge = "root" if parent is None else ("retry" if retry_of is not None else "next")
        text = canonical(body)
        h = link(head, text)
        self._insert_fact(fact, fact_body)
        event_id = self._insert_event((run, seq, EVENT_TYPE, node, text, head, h), self._event_id())
        key, mac = self._sign_run(run, seq, h)
        status = (seq, h, node, kind, retryable, attempt, v["ok"], v["verdict"], v["reason"],
                  blocked + (kind == "blocked_attempt"), at, event_id, key, mac)  # fmt: skip
        self._insert_rest(
            (run, node, seq, kind, retryable, attempt, retry_of, v["ok"], v["verdict"], v["reason"], fact, event_id),
            (run, node, parent, edge),
            (*status, at, run) if row is None else (*status, run),
            new=row is None,
        )
        self._touched[run] = (run, seq, h, event_id)
        self._rows[run] = (seq, h, node, status[9], key, mac)  # as the next append in this transaction reads it
        self._note_pending(run)
        return Node(
            run,
            node,
            seq,
            parent,
            edge,
            kind,
            retryable,
            attempt,
            retry_of,
            v["ok"],
            v["verdict"],
            v["reason"],
            fact,
            h,
            body,
        )

    def unknown_node(self, run: str, node: str, *, exists: bool | None = None) -> LedgerError:
        """The error for a node id the run does not have."""
        if exists is None:
            exists = self.status(run) is not None
        if not exists:
            return LedgerError(
                codes.LEDGER_UNKNOWN_RUN, f"run {run!r} has no decisions in {self.path}, so no node {node!r}"
            )
        return LedgerError(codes.LEDGER_UNKNOWN_NODE, f"run {run!r} has no node {node!r}")

    def _sign_all_runs(self) -> None:
        """(The upgrade, in its transaction:) sign every run's status row and anchor every run's head."""
        c = self._conn
        self._ring = keys.ensure(self.keys_path)
        entries = []
        for run, events, head, last in c.execute("SELECT run, events, head, last_event FROM runs").fetchall():
            key, mac = self._sign_run(run, events, head)
            c.execute("UPDATE runs SET key = ?, mac = ? WHERE run = ?", (key, mac, run))
            entries.append((run, events, head, last))
        c.execute("INSERT INTO head (id, anchors, hash) VALUES (1, 0, ?)", (GENESIS,))
        if entries:
            self._anchor(Head(0, GENESIS, None, None), entries)

    # ------------------------------------------------------------------ reading

    def _read(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        try:
            if self._in_tx:
                self._flush()  # a read inside a write sees what the write appended
            rows: list[tuple[Any, ...]] = self._conn.execute(sql, args).fetchall()
            return rows
        except self._errors as exc:
            raise self._error(exc) from None

    def status(self, run: str) -> RunStatus | None:
        """The run's status: one primary-key lookup in ``runs``."""
        rows = self._read(_RUN_SQL + " WHERE run = ?", (run,))
        return _run(rows[0]) if rows else None

    def require(self, run: str) -> RunStatus:
        """The run's status, or LedgerError naming the unknown run."""
        st = self.status(run)
        if st is None:
            raise LedgerError(codes.LEDGER_UNKNOWN_RUN, f"no run {run!r} in {self.path}")
        return st

    def runs(self, limit: int | None = None) -> list[RunStatus]:
        """Runs, most recently appended to first."""
        sql = _RUN_SQL + " ORDER BY last_event DESC LIMIT ?"
        return [_run(r) for r in self._read(sql, (limit if limit else -1,))]

    def node(self, run: str, node: str) -> Node | None:
        rows = self._read(_NODE_SQL + " WHERE n.run = ? AND n.node = ?", (run, node))
        return _node(rows[0], self.path) if rows else None

    def retry_of(self, run: str, node: str) -> Node | None:
        """The node that retried ``node``, if any (the ``nodes_retry`` unique index)."""
        rows = self._read(_NODE_SQL + " WHERE n.run = ? AND n.retry_of = ?", (run, node))
        return _node(rows[0], self.path) if rows else None

    def nodes(self, run: str) -> list[Node]:
        """Every node of the run, in append order."""
        return [_node(r, self.path) for r in self._read(_NODE_SQL + " WHERE n.run = ? ORDER BY n.seq", (run,))]

    def records(self, run: str | None = None) -> Iterator[tuple[Node, str]]:
        """``(node, fact JSON)`` for every decision (of one run), in append order."""
        sql = _NODE_SQL.replace("SELECT ", "SELECT f.body, ", 1) + " JOIN facts f ON f.digest = n.fact"
        sql += " WHERE n.run = ? ORDER BY e.id" if run is not None else " ORDER BY e.id"
        try:
            cur = self._conn.execute(sql, (run,) if run is not None else ())
            for row in cur:
                yield _node(row[1:], self.path), row[0]
        except self._errors as exc:
            raise self._error(exc) from None

    # ------------------------------------------------------------------ the storage primitives each ledger implements

    backend: str  # "sqlite" or "postgresql"
    anchor_every_write: bool  # each write transaction anchors the runs it wrote (else periodically: anchor())
    _errors: tuple[type[BaseException], ...]  # the database's errors

    @property
    def keys_path(self) -> str:
        """Where this ledger's signing keys live."""
        raise NotImplementedError

    def _error(self, exc: BaseException) -> LedgerError:
        """One of the database's errors as a LedgerError."""
        raise NotImplementedError

    def _begin(self) -> None:
        """Start a write transaction."""
        raise NotImplementedError

    def _written(self) -> None:
        """After a write transaction that appended committed."""
        raise NotImplementedError

    def _lock_run(self, run: str) -> None:
        """Hold ``run`` against other writers to the end of the transaction."""
        raise NotImplementedError

    def _lock_runs(self, runs: list[str]) -> None:
        """Hold each of ``runs``, in the order given."""
        for run in runs:
            self._lock_run(run)

    def _run_rows(self, runs: list[str], ids: int) -> tuple[dict[str, tuple[Any, ...] | None], list[int]]:
        """Each run's ``(events, head, tip, blocked, key, mac)`` (None: a new run), and ``ids`` event
        ids taken ahead (none where the database assigns them)."""
        raise NotImplementedError

    def _event_id(self) -> int | None:
        """The id of the event being appended (None: the database assigns it)."""
        raise NotImplementedError

    def _note_pending(self, run: str) -> None:
        """Queue ``run`` for the next anchor."""
        raise NotImplementedError

    def _insert_fact(self, fact: str, body: str) -> None:
        raise NotImplementedError

    def _insert_event(self, row: tuple[str, int, str, str, str, str, str], event_id: int | None) -> int:
        """Insert ``(run, seq, type, node, body, prev, hash)``; the new event's id."""
        raise NotImplementedError

    def _insert_rest(self, node: tuple[Any, ...], edge: tuple[Any, ...], status: tuple[Any, ...], *, new: bool) -> None:
        """Insert an appended event's node and edge, and insert (``new``) or move forward its run's row
        (the rows as :data:`INSERT_NODE`, :data:`INSERT_EDGE`, :data:`INSERT_RUN` / :data:`UPDATE_RUN` take them)."""
        c = self._conn
        c.execute(INSERT_NODE, node)
        c.execute(INSERT_EDGE, edge)
        c.execute(INSERT_RUN if new else UPDATE_RUN, status)

    def _flush(self) -> None:
        """Inside :meth:`write`: write what appends left waiting (nothing here: every row is written at once)."""

    def _held_head(self) -> Head:
        """Inside :meth:`write`: the head, held by this transaction and checked."""
        raise NotImplementedError

    def anchor(self) -> int:
        """Anchor the runs written since the last anchor; how many runs."""
        raise NotImplementedError


class Ledger(LedgerCore):
    """An open ledger file (SQLite). Use :meth:`open`; appends go inside :meth:`write`."""

    # ------------------------------------------------------------------ opening

    @classmethod
    def open(cls, path: str, *, create: bool = True, readonly: bool = False) -> Ledger:
        """Open (or, with ``create``, make) the ledger at ``path``; LedgerError if it cannot be used.

        Decisions the stop hook journaled beside it are folded in first (:mod:`.folding`); a reader
        that cannot write the ledger reads it without them."""
        from stoprule.ledger.folding import fold, pending

        if pending(path):
            try:
                fold(path, lambda: cls._open(path, create=True, readonly=False))
            except (LedgerError, OSError):
                if not readonly:
                    raise
        return cls._open(path, create=create, readonly=readonly)

    @classmethod
    def _open(cls, path: str, *, create: bool, readonly: bool) -> Ledger:
        full = os.path.abspath(path)
        folder = os.path.dirname(full)
        if os.path.isdir(full):
            raise LedgerError(codes.LEDGER_CANNOT_OPEN, f"{path} is a directory, not a ledger file")
        if not os.path.exists(full):
            if readonly or not create:
                raise LedgerError(
                    codes.LEDGER_MISSING,
                    f"no ledger here: {path} does not exist (nothing was created; "
                    "`stoprule eval --run RUN` records the first decision and creates it)",
                )
            if not os.path.isdir(folder):
                raise LedgerError(
                    codes.LEDGER_NO_DIRECTORY, f"cannot create ledger {path}: directory {folder} does not exist"
                )
            cls._create_file(full, path)
        try:
            conn = cls._connect(full, "ro" if readonly else "rw")
        except _DB_ERRORS as exc:
            raise sqlite_error(path, exc) from None
        ledger = cls(conn, path)
        try:
            ledger._prepare(readonly)
        except _DB_ERRORS as exc:
            conn.close()
            if readonly and _no_shm(exc):
                return cls._open_immutable(full, path)
            raise sqlite_error(path, exc) from None
        except BaseException:
            conn.close()
            raise
        return ledger

    @staticmethod
    def _create_file(full: str, path: str) -> None:
        """Create the (empty) ledger file owner-only: it holds every fact body. SQLite then makes
        its ``-wal`` and ``-shm`` files with the same mode. Losing a creation race is fine."""
        try:
            os.close(os.open(full, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600))
        except FileExistsError:
            pass
        except OSError as exc:
            raise LedgerError(codes.LEDGER_CANNOT_OPEN, f"cannot create ledger {path}: {exc.strerror}") from None

    @staticmethod
    def _connect(full: str, mode: str, extra: str = "") -> sqlite3.Connection:
        path = full.replace("%", "%25").replace("?", "%3f").replace("#", "%23")  # what a file: URI must escape
        uri = f"file:{path}?mode={mode}{extra}"
        return sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT, isolation_level=None)

    @classmethod
    def _open_immutable(cls, full: str, path: str) -> Ledger:
        """Read a ledger whose file and directory we cannot write (no ``-shm`` can be made)."""
        try:
            conn = cls._connect(full, "ro", "&immutable=1")
        except _DB_ERRORS as exc:
            raise sqlite_error(path, exc) from None
        ledger = cls(conn, path)
        try:
            ledger._prepare(True)
        except BaseException as exc:
            conn.close()
            if isinstance(exc, _DB_ERRORS):
                raise sqlite_error(path, exc) from None
            raise
        return ledger

    def _prepare(self, readonly: bool) -> None:
        c = self._conn
        app, version, has_tables = c.execute(_STAMP).fetchone()
        if app == APPLICATION_ID and version == SCHEMA_VERSION:
            pass
        elif app == APPLICATION_ID and version in (1, 2):
            if readonly:
                self.schema = version  # readable as it is; `log verify` says it needs the upgrade
            else:
                self._upgrade()
        elif app == APPLICATION_ID and version > SCHEMA_VERSION:
            raise LedgerError(
                codes.LEDGER_TOO_NEW, f"{self.path} has ledger schema {version}; this stoprule reads {SCHEMA_VERSION}"
            )
        elif app == 0 and version == 0 and not has_tables:
            if readonly:
                raise LedgerError(codes.LEDGER_MISSING, f"{self.path} is empty: no decisions recorded yet")
            self._create()
        else:
            raise LedgerError(codes.LEDGER_NOT_A_LEDGER, f"{self.path} is an SQLite database but not a stoprule ledger")
        c.execute("PRAGMA foreign_keys = ON")
        if not readonly:
            if c.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                self._wal()
            c.execute(f"PRAGMA synchronous = {SYNCHRONOUS}")

    def _wal(self) -> None:
        """Switch to WAL (it persists in the file); another process may hold the lock meanwhile."""
        deadline = time.monotonic() + BUSY_TIMEOUT
        while True:
            try:
                if self._conn.execute("PRAGMA journal_mode = WAL").fetchone()[0] == "wal":
                    return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc):
                    raise
            if time.monotonic() > deadline:
                raise LedgerError(codes.LEDGER_BUSY, f"{self.path} is locked by another process; cannot enable WAL")
            time.sleep(0.01)

    def _create(self) -> None:
        self._wal()
        c = self._conn
        c.execute("BEGIN IMMEDIATE")
        try:
            if c.execute("PRAGMA user_version").fetchone()[0] == 0:  # else another process created it meanwhile
                for statement in STATEMENTS:
                    c.execute(statement)
                c.execute("INSERT INTO head (id, anchors, hash) VALUES (1, 0, ?)", (GENESIS,))
            c.execute("COMMIT")
        except BaseException:
            with suppress(sqlite3.Error):
                c.execute("ROLLBACK")
            raise

    def _upgrade(self) -> None:
        """Schema 1 or 2 -> 3, in one transaction: sign every run's status row, anchor every run's head.

        Only a ledger that verifies is upgraded (every run's chain, and a schema-2 ledger's signed
        head: signing a damaged ledger would vouch for the damage); otherwise LedgerError
        ``ledger.corrupt`` naming the first break, and the file is left as it was.
        """
        c = self._conn
        if c.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            self._wal()
        c.execute("BEGIN IMMEDIATE")
        try:
            version = c.execute("PRAGMA user_version").fetchone()[0]
            if version in (1, 2):  # else another process upgraded it meanwhile
                from stoprule.ledger.runcheck import check_head_v2, check_runs  # not on the recording path

                _, breaks = check_runs(c)
                if version == 2 and not breaks:
                    breaks = check_head_v2(c, keys.load(self.keys_path), self.keys_path)[0]
                if breaks:
                    raise corrupt(self.path, f"cannot upgrade from ledger schema {version}: {breaks[0].format()}")
                for name in LEGACY_HEAD:
                    c.execute(f"DROP TRIGGER IF EXISTS {name}")
                c.execute("DROP TABLE IF EXISTS head")
                for statement in UPGRADE:
                    c.execute(statement)
                self._sign_all_runs()
                self.upgraded_from = version
            c.execute("COMMIT")
        except BaseException:
            with suppress(sqlite3.Error):
                c.execute("ROLLBACK")
            raise

    @property
    def keys_path(self) -> str:
        """Where this ledger's signing keys live: beside it, ``<ledger>.keys``."""
        return keys_path(self.path)

    # ------------------------------------------------------------------ the storage primitives, on SQLite

    backend = "sqlite"
    anchor_every_write = True  # each write transaction anchors the runs it wrote
    _errors: tuple[type[BaseException], ...] = _DB_ERRORS

    def _error(self, exc: BaseException) -> LedgerError:
        assert isinstance(exc, _DB_ERRORS)
        return sqlite_error(self.path, exc)

    def _begin(self) -> None:
        """Start a write transaction (SQLite: holding the file's write lock)."""
        self._conn.execute("BEGIN IMMEDIATE")

    def _written(self) -> None:
        """Nothing to do: the write transaction anchored what it wrote."""

    def _lock_run(self, run: str) -> None:
        """Nothing to do: the write transaction holds the file's write lock."""

    def _run_rows(self, runs: list[str], ids: int) -> tuple[dict[str, tuple[Any, ...] | None], list[int]]:
        """Each run's row (None: a new run); no ids taken ahead (SQLite assigns them)."""
        sql = "SELECT events, head, tip, blocked, key, mac FROM runs WHERE run = ?"
        return {run: self._conn.execute(sql, (run,)).fetchone() for run in runs}, []

    def _event_id(self) -> int | None:
        """The id of the event being appended (None: the database assigns it)."""
        return self._ids.pop() if self._ids else None

    def _note_pending(self, run: str) -> None:
        """Nothing to queue: the run is anchored in the same transaction."""

    def _insert_fact(self, fact: str, body: str) -> None:
        self._conn.execute("INSERT OR IGNORE INTO facts (digest, body) VALUES (?, ?)", (fact, body))

    def _insert_event(self, row: tuple[str, int, str, str, str, str, str], event_id: int | None) -> int:
        """Insert ``(run, seq, type, node, body, prev, hash)``; the new event's id."""
        cur = self._conn.execute(
            "INSERT INTO events (run, seq, type, node, body, prev, hash) VALUES (?, ?, ?, ?, ?, ?, ?)", row
        )
        return int(cur.lastrowid or 0)

    def _held_head(self) -> Head:
        """Inside :meth:`write`: the head, held by this transaction and checked."""
        if self._head is None:
            self._head = self._checked_head()
        return self._head

    def anchor(self) -> int:
        """Anchor the runs written since the last anchor; how many runs (SQLite: every write anchors: 0)."""
        return 0
