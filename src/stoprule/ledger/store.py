"""The ledger file: opening it safely, the append transaction, and indexed reads.

One decision is one transaction (``BEGIN IMMEDIATE`` … ``COMMIT``) that inserts the fact body,
the ``validation_performed`` event, the node and its edge, and moves the run's status row
forward. SQLite in WAL mode with ``synchronous=FULL``: a decision whose transaction committed
survives a crash of the process *and* of the machine; one that did not commit leaves nothing.

The same transaction advances the ledger head (the chain over every event, HMAC-signed with the
key file): a write transaction first checks that the head's signature verifies, so a head
rewritten by someone without the key is refused rather than re-signed. The file is created
owner-only (0600); SQLite gives its ``-wal`` and ``-shm`` files the same mode.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from contextlib import contextmanager, suppress

from stoprule._util.records import Record, record
from stoprule._util.redact import redact_obj
from stoprule.ledger import keys
from stoprule.ledger.ddl import APPLICATION_ID, SCHEMA_VERSION, STATEMENTS
from stoprule.ledger.errors import LedgerError, check_run_id
from stoprule.ledger.events import (
    EVENT_TYPE,
    GENESIS,
    canonical,
    head_link,
    link,
    validation_event,
    well_formed,
)
from stoprule.ledger.sha import compare_digest

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

    from stoprule.engine.evaluator import Verdict

__all__ = [
    "BUSY_TIMEOUT",
    "DEFAULT_PATH",
    "SYNCHRONOUS",
    "TIP",
    "Head",
    "Ledger",
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
    """The ledger head: how many events it covers (= the last event's id), the chain hash, its signature."""

    events: int
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


def _node(row: tuple, path: str = "the ledger") -> Node:
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


def _run(row: tuple) -> RunStatus:
    cols = list(row)
    cols[5] = bool(cols[5])
    cols[7] = bool(cols[7])
    return RunStatus(*cols)


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
    return LedgerError("ledger.corrupt", f"{path}: {what}; nothing was changed (run `stoprule log verify`)")


def sqlite_error(path: str, exc: sqlite3.Error | UnicodeDecodeError) -> LedgerError:
    """A SQLite error as a LedgerError that names the file and what to do."""
    if isinstance(exc, UnicodeDecodeError) or str(exc).startswith("Could not decode"):
        return corrupt(path, "it holds text that is not UTF-8 (a damaged or altered file)")
    name = getattr(exc, "sqlite_errorname", "") or ""
    text = str(exc)

    def means(names: tuple[str, ...], *words: str) -> bool:  # the error name when SQLite gives one, else its text
        return name.startswith(names) if name else any(w in text for w in words)

    if means(("SQLITE_BUSY", "SQLITE_LOCKED"), "database is locked", "database table is locked"):
        return LedgerError("ledger.busy", f"{path} is locked by another writer (waited {BUSY_TIMEOUT:g}s); try again")
    if means(("SQLITE_READONLY",), "readonly database"):
        return LedgerError("ledger.read_only", f"{path} is read-only ({text}); nothing was recorded")
    if means(("SQLITE_NOTADB", "SQLITE_CORRUPT"), "not a database", "malformed"):
        return LedgerError("ledger.corrupt", f"{path} is not a readable SQLite database ({text}); left untouched")
    if means(("SQLITE_CANTOPEN",), "unable to open"):
        return LedgerError("ledger.cannot_open", f"cannot open {path} ({text})")
    if means(("SQLITE_FULL", "SQLITE_IOERR"), "disk I/O", "database or disk is full"):
        return LedgerError("ledger.io", f"cannot write {path} ({text}); nothing was recorded")
    if "no such table" in text or "no such column" in text:
        return corrupt(path, f"its schema is damaged ({text})")
    return LedgerError("ledger.error", f"{path}: {text}")


class Ledger:
    """An open ledger file. Use :meth:`open`; appends go inside :meth:`write`."""

    def __init__(self, conn: Any, path: str) -> None:
        self._conn = conn
        self.path = path
        self.schema = SCHEMA_VERSION  # what the file holds (1: a schema-1 ledger opened read-only, not upgraded)
        self.upgraded_from: int | None = None  # set when opening upgraded the file
        self._in_tx = False
        self._head: Head | None = None  # inside write(): the head as of the last append
        self._ring: keys.KeyRing | None = None

    # ------------------------------------------------------------------ opening

    @classmethod
    def open(cls, path: str, *, create: bool = True, readonly: bool = False) -> Ledger:
        """Open (or, with ``create``, make) the ledger at ``path``; LedgerError if it cannot be used.

        Decisions the stop hook journaled beside it are folded in first (:mod:`.journal`); a reader
        that cannot write the ledger reads it without them."""
        from stoprule.ledger import journal

        if journal.pending(path):
            try:
                journal.fold(path, lambda: cls._open(path, create=True, readonly=False))
            except (LedgerError, OSError):
                if not readonly:
                    raise
        return cls._open(path, create=create, readonly=readonly)

    @classmethod
    def _open(cls, path: str, *, create: bool, readonly: bool) -> Ledger:
        full = os.path.abspath(path)
        folder = os.path.dirname(full)
        if os.path.isdir(full):
            raise LedgerError("ledger.cannot_open", f"{path} is a directory, not a ledger file")
        if not os.path.exists(full):
            if readonly or not create:
                raise LedgerError(
                    "ledger.missing",
                    f"no ledger here: {path} does not exist (nothing was created; "
                    "`stoprule eval --run RUN` records the first decision and creates it)",
                )
            if not os.path.isdir(folder):
                raise LedgerError(
                    "ledger.no_directory", f"cannot create ledger {path}: directory {folder} does not exist"
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
            raise LedgerError("ledger.cannot_open", f"cannot create ledger {path}: {exc.strerror}") from None

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
        elif app == APPLICATION_ID and version == 1:
            if readonly:
                self.schema = 1  # readable as it is; `log verify` says it has no ledger head yet
            else:
                self._upgrade()
        elif app == APPLICATION_ID and version > SCHEMA_VERSION:
            raise LedgerError(
                "ledger.too_new", f"{self.path} has ledger schema {version}; this stoprule reads {SCHEMA_VERSION}"
            )
        elif app == 0 and version == 0 and not has_tables:
            if readonly:
                raise LedgerError("ledger.missing", f"{self.path} is empty: no decisions recorded yet")
            self._create()
        else:
            raise LedgerError("ledger.not_a_ledger", f"{self.path} is an SQLite database but not a stoprule ledger")
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
                raise LedgerError("ledger.busy", f"{self.path} is locked by another process; cannot enable WAL")
            time.sleep(0.01)

    def _create(self) -> None:
        self._wal()
        c = self._conn
        c.execute("BEGIN IMMEDIATE")
        try:
            if c.execute("PRAGMA user_version").fetchone()[0] == 0:  # else another process created it meanwhile
                for statement in STATEMENTS:
                    c.execute(statement)
                c.execute("INSERT INTO head (id, events, hash) VALUES (1, 0, ?)", (GENESIS,))
            c.execute("COMMIT")
        except BaseException:
            with suppress(sqlite3.Error):
                c.execute("ROLLBACK")
            raise

    def _upgrade(self) -> None:
        """Schema 1 -> 2, in one transaction: add the ledger head over the events already there.

        Only a ledger whose every run chain verifies is upgraded (signing a damaged ledger's head
        would vouch for the damage); otherwise LedgerError ``ledger.corrupt`` naming the first break,
        and the file is left as it was.
        """
        c = self._conn
        if c.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            self._wal()
        c.execute("BEGIN IMMEDIATE")
        try:
            if c.execute("PRAGMA user_version").fetchone()[0] == 1:  # else another process upgraded it meanwhile
                from stoprule.ledger.runcheck import check_runs  # only here: not on the recording path

                _, breaks = check_runs(c)
                if breaks:
                    raise corrupt(self.path, f"cannot upgrade from ledger schema 1: {breaks[0].format()}")
                head, n = GENESIS, 0
                for event_id, h in c.execute("SELECT id, hash FROM events ORDER BY id").fetchall():
                    if event_id != n + 1:
                        raise corrupt(self.path, f"cannot upgrade from ledger schema 1: event id {n + 1} is missing")
                    head, n = head_link(head, event_id, h), event_id
                for statement in STATEMENTS:
                    c.execute(statement)
                key, mac = self._sign(n, head) if n else (None, None)
                c.execute("INSERT INTO head (id, events, hash, key, mac) VALUES (1, ?, ?, ?, ?)", (n, head, key, mac))
                self.upgraded_from = 1
            c.execute("COMMIT")
        except BaseException:
            with suppress(sqlite3.Error):
                c.execute("ROLLBACK")
            raise

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def keys_path(self) -> str:
        """Where this ledger's signing keys live: beside it, ``<ledger>.keys``."""
        return keys_path(self.path)

    @property
    def connection(self) -> Any:
        """The DB-API connection (``sqlite3``; for PostgreSQL an adapter that reads ``?`` parameters)."""
        return self._conn

    backend = "sqlite"

    # ------------------------------------------------------------------ writing

    @contextmanager
    def write(self) -> Iterator[Ledger]:
        """One write transaction (``BEGIN IMMEDIATE``): everything inside commits together or not at all."""
        if self._in_tx:
            raise RuntimeError("write transactions do not nest")
        try:
            self._begin()
        except self._errors as exc:
            raise self._error(exc) from None
        self._in_tx = True
        try:
            self._head = self._checked_head()
            yield self
            self._conn.execute("COMMIT")
        except BaseException as exc:
            with suppress(*self._errors):  # the connection may be gone; the transaction is void either way
                self._conn.execute("ROLLBACK")
            if isinstance(exc, self._errors):
                raise self._error(exc) from None
            raise
        finally:
            self._in_tx = False
            self._head = None

    # the database's errors, and how they read as a LedgerError (the PostgreSQL backend overrides these)
    _errors: tuple[type[BaseException], ...] = _DB_ERRORS

    def _error(self, exc: BaseException) -> LedgerError:
        assert isinstance(exc, _DB_ERRORS)
        return sqlite_error(self.path, exc)

    def _begin(self) -> None:
        """Start a write transaction holding the ledger's write lock."""
        self._conn.execute("BEGIN IMMEDIATE")

    def _insert_fact(self, fact: str, body: str) -> None:
        self._conn.execute("INSERT OR IGNORE INTO facts (digest, body) VALUES (?, ?)", (fact, body))

    def _insert_event(self, row: tuple[str, int, str, str, str, str, str]) -> int:
        """Insert ``(run, seq, type, node, body, prev, hash)``; the new event's id (the next after the head's)."""
        cur = self._conn.execute(
            "INSERT INTO events (run, seq, type, node, body, prev, hash) VALUES (?, ?, ?, ?, ?, ?, ?)", row
        )
        return int(cur.lastrowid or 0)

    # ------------------------------------------------------------------ the ledger head

    def head(self) -> Head | None:
        """The ledger head as stored (None for a schema-1 ledger opened read-only)."""
        if self.schema < 2:
            return None
        rows = self._read("SELECT events, hash, key, mac FROM head WHERE id = 1")
        if not rows:
            raise corrupt(self.path, "the ledger head is missing")
        return Head(*rows[0])

    def _checked_head(self) -> Head:
        """The head, once its signature verifies with the key file (read under the write lock).

        A head that does not verify is not signed again: that would vouch for whatever changed it.
        """
        head = self.head()
        assert head is not None  # a writable ledger has schema 2 (opening upgrades it)
        self._ring = keys.load(self.keys_path)
        if head.key is None:
            if head.events != 0 or head.hash != GENESIS:
                raise corrupt(self.path, "the ledger head is not signed")
            return head
        key = self._ring.keys.get(head.key)
        if key is None or key.secret is None:
            raise corrupt(
                self.path,
                f"the ledger head is signed with key {head.key!r}, which {self.keys_path} does not hold "
                "(the key file is part of the ledger: restore it), so nothing can be appended",
            )
        if not isinstance(head.mac, str) or not compare_digest(
            head.mac.encode(), keys.head_mac(key.secret, head.events, head.hash).encode()
        ):
            raise corrupt(self.path, "the ledger head's signature does not verify (the head was altered)")
        return head

    def _sign(self, events: int, head: str) -> tuple[str, str]:
        """``(key id, mac)`` for a head, with the signing key (the key file is made if there is none)."""
        if self._ring is None or self._ring.active is None:
            self._ring = keys.ensure(self.keys_path)
        key = self._ring.signing_key()
        assert key.secret is not None
        return key.id, keys.head_mac(key.secret, events, head)

    def resign(self, ring: keys.KeyRing) -> None:
        """Sign the head again with ``ring``'s active key (after a rotation); inside :meth:`write`."""
        if not self._in_tx or self._head is None:
            raise RuntimeError("resign must run inside Ledger.write()")
        self._ring = ring
        key, mac = self._sign(self._head.events, self._head.hash)
        self._conn.execute("UPDATE head SET key = ?, mac = ? WHERE id = 1", (key, mac))
        self._head = self._head._replace(key=key, mac=mac)

    @property
    def head_key(self) -> str | None:
        """Inside :meth:`write`: the key the head is signed with."""
        return self._head.key if self._head is not None else None

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
        at: str | None = None,
    ) -> Node:
        """Append one decision (fact, event, node, edge, run status); call inside :meth:`write`.

        ``parent`` defaults to the run's tip; a retry's parent is the node it retries. ``at``:
        when it was decided (default: now; a journaled decision's own time, see :mod:`.journal`).
        """
        if not self._in_tx or self._head is None:
            raise RuntimeError("append must run inside Ledger.write()")
        c = self._conn
        row = c.execute("SELECT events, head, tip, blocked FROM runs WHERE run = ?", (run,)).fetchone()
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
        at = at or _now()
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
        )
        body = redact_obj(body)  # a verdict's message may quote a fact's secret
        return self._store(body, fact_body, row)

    def append_recorded(self, body: dict[str, Any], fact_body: str) -> Node:
        """Append an event exactly as another ledger recorded it (``log import``); inside :meth:`write`.

        The body must extend the run here: its ``seq`` the run's next, its ``prev`` the run's head.
        """
        if not self._in_tx or self._head is None:
            raise RuntimeError("append_recorded must run inside Ledger.write()")
        run = body["run"]
        row = self._conn.execute("SELECT events, head, tip, blocked FROM runs WHERE run = ?", (run,)).fetchone()
        if body["seq"] != (row[0] if row else 0) + 1:
            raise LedgerError("ledger.import", f"run {run!r}: event {body['seq']} does not follow the run's "
                                               f"{row[0] if row else 0} event(s) in {self.path}")  # fmt: skip
        return self._store(body, fact_body, row)

    def _store(self, body: dict[str, Any], fact_body: str, row: tuple | None) -> Node:
        """Insert the fact, the event, its node and edge; advance the ledger head and the run's status."""
        assert self._head is not None
        c = self._conn
        run, seq, node, parent, kind = body["run"], body["seq"], body["node"], body["parent"], body["kind"]
        retryable, attempt, retry_of = body["retryable"], body["attempt"], body["retry_of"]
        fact, at = body["fact"], body["at"]
        v = body["verdict"]
        _, head, _, blocked = row if row else (0, GENESIS, None, 0)
        edge = "root" if parent is None else ("retry" if retry_of is not None else "next")
        text = canonical(body)
        h = link(head, text)
        self._insert_fact(fact, fact_body)
        event_id = self._insert_event((run, seq, EVENT_TYPE, node, text, head, h))
        c.execute(
            "INSERT INTO nodes (run, node, seq, kind, retryable, attempt, retry_of, ok, verdict, reason, fact, event)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (run, node, seq, kind, retryable, attempt, retry_of, v["ok"], v["verdict"], v["reason"], fact, event_id),
        )
        c.execute("INSERT INTO edges (run, child, parent, kind) VALUES (?, ?, ?, ?)", (run, node, parent, edge))
        if event_id != self._head.events + 1:
            raise corrupt(self.path, f"event id {event_id} does not follow the head's {self._head.events} events")
        head = head_link(self._head.hash, event_id, h)
        key, mac = self._sign(event_id, head)
        c.execute("UPDATE head SET events = ?, hash = ?, key = ?, mac = ? WHERE id = 1", (event_id, head, key, mac))
        self._head = Head(event_id, head, key, mac)
        status = (seq, h, node, kind, retryable, attempt, v["ok"], v["verdict"], v["reason"],
                  blocked + (kind == "blocked_attempt"), at, event_id)  # fmt: skip
        if row is None:
            c.execute(
                "INSERT INTO runs (events, head, tip, tip_kind, retryable, attempt, ok, verdict, reason, blocked,"
                " updated, last_event, created, run) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (*status, at, run),
            )
        else:
            c.execute(
                "UPDATE runs SET events = ?, head = ?, tip = ?, tip_kind = ?, retryable = ?, attempt = ?, ok = ?,"
                " verdict = ?, reason = ?, blocked = ?, updated = ?, last_event = ? WHERE run = ?",
                (*status, run),
            )
        return Node(run, node, seq, parent, edge, kind, retryable, attempt, retry_of, v["ok"], v["verdict"],
                    v["reason"], fact, h, body)  # fmt: skip

    def unknown_node(self, run: str, node: str, *, exists: bool | None = None) -> LedgerError:
        """The error for a node id the run does not have."""
        if exists is None:
            exists = self.status(run) is not None
        if not exists:
            return LedgerError(
                "ledger.unknown_run", f"run {run!r} has no decisions in {self.path}, so no node {node!r}"
            )
        return LedgerError("ledger.unknown_node", f"run {run!r} has no node {node!r}")

    # ------------------------------------------------------------------ reading

    def _read(self, sql: str, args: tuple = ()) -> list[tuple]:
        try:
            return self._conn.execute(sql, args).fetchall()
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
            raise LedgerError("ledger.unknown_run", f"no run {run!r} in {self.path}")
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
