"""The ledger on PostgreSQL (psycopg 3): the same tables, guards, chains and signatures as the
SQLite ledger, for many writers on many hosts.

``PgLedger`` is :class:`stoprule.ledger.store.Ledger` with another connection underneath: every
read, the append and the recorder are the same code. What differs:

- **Locks are per run**: a writer holds its run (a transaction-scoped advisory lock on the run's
  id) from reading its status row to the commit, so writers of one run append one after another
  while writers of different runs never wait on each other. Event ids come from a sequence: they
  increase with each run's ``seq``, but are not gapless (a rolled-back append uses one up).
- **Anchoring is periodic**: each append queues its run in ``pending``; :meth:`PgLedger.anchor`
  (every ``anchor_interval`` seconds, after a write or from the server's own timer) takes the
  queued runs and appends one anchor naming their heads, under the ledger head's row lock (taken
  with ``SKIP LOCKED``: a second anchorer does not wait, it leaves the work to the first).
- **The guards** are PL/pgSQL triggers with the SQLite triggers' rules, plus ``TRUNCATE``
  refused; :data:`GRANTS` gives the service's role INSERT and SELECT only on the event tables.
- **The schema** is made (or upgraded) only by a role that owns it: ``stoprule serve migrate``
  (or the first ``stoprule eval --run`` as that role); the service opens it without DDL.
- **The key file** is not beside a file: ``$STOPRULE_LEDGER_KEYS``, else ``ledger.keys`` in the
  nearest ``.stoprule/``. Every server writing to the ledger needs the same file.
- **Errors**: a lost connection, a statement past its time limit or a server shutting down is
  ``ledger.unavailable``; a lock not had within the time limit is ``ledger.busy``. Nothing is
  half-written: a decision is one transaction.
"""

from __future__ import annotations

import json
import os
import re
import time
from contextlib import contextmanager, suppress

from stoprule import codes
from stoprule.ledger import keys
from stoprule.ledger.errors import LedgerError
from stoprule.ledger.events import GENESIS
from stoprule.ledger.runcheck import Break, check_head_v2, check_runs
from stoprule.ledger.sha import sha256_hex
from stoprule.ledger.store import _RUN_SQL, RUN_COLUMNS, Head, LedgerCore, _run, corrupt
from stoprule.project import find_project

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

__all__ = [
    "DDL",
    "GRANTS",
    "LOCK_TIMEOUT_MS",
    "SCHEMA",
    "PgLedger",
    "connect",
    "display_url",
    "grant_sql",
    "is_url",
    "migrate",
    "pg_error",
]

SCHEMES = ("postgresql://", "postgres://")
LOCK_TIMEOUT_MS = 10_000  # a writer waits this long for its run's lock (SQLite: BUSY_TIMEOUT), unless told otherwise
ANCHOR_INTERVAL = 1.0  # seconds between anchors (a run written and deleted within it is not anchored)
MARKER = "stoprule_ledger"  # a one-row table: the schema version
SCHEMA = 3
_IN_TX, _FAILED = 2, 3  # libpq's transaction status: in a transaction block, in a failed one
_LOCK_SPACE = "stoprule-run/1\n"  # what a run's advisory lock key is hashed from (with the run id)

_RUNS = """
CREATE TABLE runs (
    run TEXT PRIMARY KEY, events INTEGER NOT NULL, head TEXT NOT NULL, tip TEXT NOT NULL, tip_kind TEXT NOT NULL,
    retryable INTEGER NOT NULL, attempt INTEGER NOT NULL, ok INTEGER NOT NULL, verdict TEXT NOT NULL,
    reason TEXT NOT NULL, blocked INTEGER NOT NULL, created TEXT NOT NULL, updated TEXT NOT NULL,
    last_event BIGINT NOT NULL, key TEXT, mac TEXT);
CREATE INDEX runs_recent ON runs (last_event);
"""

_TABLES = (
    """
CREATE TABLE stoprule_ledger (version INTEGER NOT NULL);
CREATE TABLE facts (digest TEXT PRIMARY KEY, body TEXT NOT NULL);
CREATE TABLE events (
    id BIGINT PRIMARY KEY, run TEXT NOT NULL, seq INTEGER NOT NULL CHECK (seq >= 1), type TEXT NOT NULL,
    node TEXT NOT NULL, body TEXT NOT NULL, prev TEXT NOT NULL, hash TEXT NOT NULL,
    UNIQUE (run, seq), UNIQUE (run, node));
CREATE TABLE nodes (
    run TEXT NOT NULL, node TEXT NOT NULL, seq INTEGER NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('step', 'blocked_attempt', 'checkpoint')),
    retryable INTEGER NOT NULL CHECK (retryable IN (0, 1) AND (retryable = 0 OR kind = 'blocked_attempt')),
    attempt INTEGER NOT NULL CHECK (attempt >= 1), retry_of TEXT,
    ok INTEGER NOT NULL CHECK (ok IN (0, 1)), verdict TEXT NOT NULL, reason TEXT NOT NULL,
    fact TEXT NOT NULL REFERENCES facts (digest), event BIGINT NOT NULL UNIQUE REFERENCES events (id),
    PRIMARY KEY (run, node), UNIQUE (run, seq), FOREIGN KEY (run, retry_of) REFERENCES nodes (run, node));
CREATE UNIQUE INDEX nodes_retry ON nodes (run, retry_of) WHERE retry_of IS NOT NULL;
CREATE TABLE edges (
    run TEXT NOT NULL, child TEXT NOT NULL, parent TEXT,
    kind TEXT NOT NULL CHECK (kind IN ('root', 'next', 'retry') AND ((kind = 'root') = (parent IS NULL))),
    PRIMARY KEY (run, child), FOREIGN KEY (run, child) REFERENCES nodes (run, node),
    FOREIGN KEY (run, parent) REFERENCES nodes (run, node));
CREATE INDEX edges_parent ON edges (run, parent);
"""
    + _RUNS
)

# schema 3: event ids from a sequence, the anchors, the queue of runs to anchor, the head over anchors
_SCHEMA_3 = """
CREATE SEQUENCE event_ids OWNED BY events.id;
SELECT setval('event_ids', coalesce((SELECT max(id) FROM events), 0) + 1, false);
CREATE TABLE anchors (id BIGINT PRIMARY KEY, body TEXT NOT NULL, prev TEXT NOT NULL, hash TEXT NOT NULL);
CREATE TABLE pending (run TEXT PRIMARY KEY);
CREATE TABLE head (
    id INTEGER PRIMARY KEY CHECK (id = 1), anchors BIGINT NOT NULL CHECK (anchors >= 0), hash TEXT NOT NULL,
    key TEXT, mac TEXT, CHECK ((key IS NULL) = (mac IS NULL) AND (key IS NOT NULL OR anchors = 0)));
"""

_STATUS = "events, head, tip, tip_kind, retryable, attempt, ok, verdict, reason, blocked, created, updated, last_event"
_SAME = " AND ".join(f"NEW.{c} IS NOT DISTINCT FROM OLD.{c}" for c in _STATUS.split(", "))

_FUNCTIONS = f"""
CREATE OR REPLACE FUNCTION stoprule_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'ledger is append-only: % cannot be %', TG_TABLE_NAME, lower(TG_OP) || 'd'; END $$;

CREATE OR REPLACE FUNCTION stoprule_event_extends() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE n INTEGER; h TEXT;
BEGIN
  SELECT events, head INTO n, h FROM runs WHERE run = NEW.run;
  IF NEW.seq IS DISTINCT FROM coalesce(n, 0) + 1 OR NEW.prev IS DISTINCT FROM coalesce(h, '{GENESIS}') THEN
    RAISE EXCEPTION 'ledger: an event must extend its run''s hash chain';
  END IF;
  RETURN NEW;
END $$;

CREATE OR REPLACE FUNCTION stoprule_run_forward() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    IF NEW.events IS DISTINCT FROM 1
       OR NEW.head IS DISTINCT FROM (SELECT hash FROM events WHERE run = NEW.run AND seq = 1) THEN
      RAISE EXCEPTION 'ledger: a run starts at its first event';
    END IF;
  ELSIF NEW.run IS DISTINCT FROM OLD.run OR NOT (
        (NEW.events IS NOT DISTINCT FROM OLD.events + 1
         AND NEW.head IS NOT DISTINCT FROM (SELECT hash FROM events WHERE run = NEW.run AND seq = NEW.events))
        OR ({_SAME})) THEN
    RAISE EXCEPTION 'ledger: a run''s status only moves forward with its chain';
  END IF;
  RETURN NEW;
END $$;

CREATE OR REPLACE FUNCTION stoprule_anchor_extends() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.id IS DISTINCT FROM coalesce((SELECT max(id) FROM anchors), 0) + 1
     OR NEW.prev IS DISTINCT FROM coalesce((SELECT hash FROM anchors WHERE id = NEW.id - 1), '{GENESIS}') THEN
    RAISE EXCEPTION 'ledger: an anchor must extend the ledger chain';
  END IF;
  RETURN NEW;
END $$;

CREATE OR REPLACE FUNCTION stoprule_head_forward() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE last BIGINT := coalesce((SELECT max(id) FROM anchors), 0);
BEGIN
  IF NEW.anchors IS DISTINCT FROM last
     OR NEW.hash IS DISTINCT FROM coalesce((SELECT hash FROM anchors WHERE id = last), '{GENESIS}') THEN
    RAISE EXCEPTION 'ledger: the ledger head must cover every anchor';
  END IF;
  IF TG_OP = 'UPDATE' AND (NEW.id IS DISTINCT FROM OLD.id
     OR NOT (NEW.anchors = OLD.anchors + 1 OR (NEW.anchors = OLD.anchors AND NEW.hash = OLD.hash))) THEN
    RAISE EXCEPTION 'ledger: the ledger head only moves forward, one anchor at a time';
  END IF;
  RETURN NEW;
END $$;
"""

# (trigger, table, when, function)
_TRIGGER_SPECS = [
    ("events_extend_chain", "events", "BEFORE INSERT", "FOR EACH ROW", "stoprule_event_extends"),
    ("runs_forward", "runs", "BEFORE INSERT OR UPDATE", "FOR EACH ROW", "stoprule_run_forward"),
    ("anchors_extend_chain", "anchors", "BEFORE INSERT", "FOR EACH ROW", "stoprule_anchor_extends"),
    ("head_forward", "head", "BEFORE INSERT OR UPDATE", "FOR EACH ROW", "stoprule_head_forward"),
] + [
    spec
    for t, ops in (
        ("facts", "UPDATE OR DELETE"),
        ("events", "UPDATE OR DELETE"),
        ("nodes", "UPDATE OR DELETE"),
        ("edges", "UPDATE OR DELETE"),
        ("anchors", "UPDATE OR DELETE"),
        ("runs", "DELETE"),
        ("head", "DELETE"),
    )
    for spec in (
        (f"{t}_no_change", t, f"BEFORE {ops}", "FOR EACH ROW", "stoprule_refuse"),
        (f"{t}_no_truncate", t, "BEFORE TRUNCATE", "FOR EACH STATEMENT", "stoprule_refuse"),
    )
]
_TRIGGERS = "".join(
    f"CREATE TRIGGER {n} {when} ON {t} {each} EXECUTE FUNCTION {fn}();\n" for n, t, when, each, fn in _TRIGGER_SPECS
)
TRIGGERS = tuple(sorted(n for n, *_ in _TRIGGER_SPECS))

DDL = _TABLES + _SCHEMA_3 + _FUNCTIONS + _TRIGGERS

# schema 2 -> 3 (after every run and the schema-2 head were checked): the run signatures, the sequence,
# the anchors; the guards made again (each trigger dropped first: CREATE OR REPLACE TRIGGER needs PostgreSQL 14)
_UPGRADE = (
    "ALTER TABLE runs ADD COLUMN key TEXT, ADD COLUMN mac TEXT;\n"
    "DROP TABLE head CASCADE;\n"
    "DROP FUNCTION IF EXISTS stoprule_head_forward() CASCADE;\n"
    + _SCHEMA_3
    + _FUNCTIONS
    + "".join(f"DROP TRIGGER IF EXISTS {n} ON {t};\n" for n, t, *_ in _TRIGGER_SPECS)
    + _TRIGGERS
)

# what the service's role may do (run by the ledger's owner; docs/serve.md): no UPDATE, DELETE or
# TRUNCATE on the event tables at all, and the triggers refuse them for the owner too
GRANTS = """
REVOKE ALL ON stoprule_ledger, facts, events, nodes, edges, runs, anchors, pending, head FROM {role};
GRANT SELECT ON stoprule_ledger TO {role};
GRANT SELECT, INSERT ON facts, events, nodes, edges, anchors TO {role};
GRANT SELECT, INSERT, UPDATE ON runs, head TO {role};
GRANT SELECT, INSERT, UPDATE, DELETE ON pending TO {role};
GRANT USAGE ON SEQUENCE event_ids TO {role};
"""


def _rows_sql(columns: str) -> str:
    """``SELECT`` of the rows of a JSON array of arrays (the one parameter), each column cast to its type."""
    cast = (f"(r->>{i})::{t} AS c{i}" if t != "text" else f"r->>{i} AS c{i}" for i, t in enumerate(columns.split()))
    return f"SELECT {', '.join(cast)} FROM json_array_elements(%s::json) AS r"


# an append's rows, every one waiting at once: one statement per table, the rows as one JSON text
# (its size changes nothing in the statement: psycopg and the server plan it once)
_RUN_TYPES = "int text text text int int int text text int text bigint text text"  # RUN_COLUMNS'
_FLUSH = {
    "facts": "INSERT INTO facts (digest, body) " + _rows_sql("text text") + " ON CONFLICT DO NOTHING",
    "events": "INSERT INTO events (id, run, seq, type, node, body, prev, hash) "
    + _rows_sql("bigint text int text text text text text"),
    "nodes": "INSERT INTO nodes (run, node, seq, kind, retryable, attempt, retry_of, ok, verdict, reason, fact, event) "
    + _rows_sql("text text int text int int text int text text text bigint"),
    "edges": "INSERT INTO edges (run, child, parent, kind) " + _rows_sql("text text text text"),
    "new_runs": f"INSERT INTO runs ({', '.join(RUN_COLUMNS)}, created, run) " + _rows_sql(_RUN_TYPES + " text text"),
    "moved_runs": f"UPDATE runs SET {', '.join(f'{c} = v.c{i}' for i, c in enumerate(RUN_COLUMNS))} FROM ("
    + _rows_sql(_RUN_TYPES + " text")
    + f") AS v WHERE runs.run = v.c{len(RUN_COLUMNS)}",
    "pending": "INSERT INTO pending (run) " + _rows_sql("text") + " ON CONFLICT DO NOTHING",
}


class _Out:
    """An open write transaction's rows not sent yet, by table (dicts: each key once, in order)."""

    __slots__ = ("edges", "events", "facts", "moved_runs", "new_runs", "nodes", "pending")

    def __init__(self) -> None:
        self.facts: dict[str, str] = {}
        self.events: list[tuple[Any, ...]] = []
        self.nodes: list[tuple[Any, ...]] = []
        self.edges: list[tuple[Any, ...]] = []
        self.new_runs: list[tuple[Any, ...]] = []
        self.moved_runs: list[tuple[Any, ...]] = []
        self.pending: dict[str, None] = {}


def _lock_key(run: str) -> int:
    """The run's advisory lock key: 64 bits of a hash of its id, as a signed bigint."""
    key = int(sha256_hex((_LOCK_SPACE + run).encode("utf-8", "surrogateescape"))[:16], 16)
    return key - (1 << 64) if key >= 1 << 63 else key


def is_url(target: str | None) -> bool:
    return bool(target) and str(target).startswith(SCHEMES)


def display_url(url: str) -> str:
    """The URL without its password (for messages)."""
    return re.sub(r"^(postgres(?:ql)?://[^:/@]*):[^@]*@", r"\1:***@", url)


def _param(value: Any) -> Any:
    return int(value) if isinstance(value, bool) else value  # flags are INTEGER 0/1, as in SQLite


_CONVERTED: dict[str, str] = {}  # SQL with ``?`` parameters -> with psycopg's ``%s``


class _Conn:
    """The psycopg connection with the ``sqlite3`` calls the shared code makes: ``?`` parameters,
    ``execute(...).fetchone()``, a ``text_factory`` attribute (PostgreSQL keeps only valid UTF-8)."""

    text_factory: Any = str

    def __init__(self, conn: Any) -> None:
        self.raw = conn
        self.commits = 0  # COMMITs sent: a failure with none sent since a point left nothing behind

    def execute(self, sql: str, args: tuple[Any, ...] | list[Any] = ()) -> Any:
        if sql == "COMMIT":
            self.commits += 1
        if args:
            converted = _CONVERTED.get(sql)
            if converted is None:
                if len(_CONVERTED) >= 1024:
                    _CONVERTED.clear()
                converted = _CONVERTED[sql] = sql.replace("%", "%%").replace("?", "%s")
            return self.raw.execute(converted, [_param(a) for a in args])
        return self.raw.execute(sql)

    def close(self) -> None:
        self.raw.close()


def default_keys_path(env: Any = None) -> str:
    env = os.environ if env is None else env
    if env.get("STOPRULE_LEDGER_KEYS"):
        return str(env["STOPRULE_LEDGER_KEYS"])

    project = find_project()
    return os.path.join(project or ".stoprule", "ledger.keys")


def connect(url: str, timeout_ms: int | None) -> Any:
    """A connection (autocommit: transactions are explicit); with ``timeout_ms``, every wait on the
    database is bounded: connecting, a statement, a lock, an idle transaction, an unanswered socket."""
    import psycopg

    if timeout_ms is None:
        return psycopg.connect(url, autocommit=True, connect_timeout=10)
    seconds = max(2, -(-timeout_ms // 1000))  # libpq counts whole seconds, at least 2
    options = (
        f"-c statement_timeout={timeout_ms} -c lock_timeout={timeout_ms} "
        f"-c idle_in_transaction_session_timeout={max(timeout_ms * 2, 5000)}"
    )
    return psycopg.connect(
        url,
        autocommit=True,
        connect_timeout=seconds,
        options=options,
        keepalives=1,
        keepalives_idle=max(1, seconds // 2),
        keepalives_interval=1,
        keepalives_count=3,
        tcp_user_timeout=timeout_ms,
    )


class PgLedger(LedgerCore):
    """A ledger in a PostgreSQL database (the tables in the connection's ``search_path`` schema)."""

    backend = "postgresql"
    anchor_every_write = False

    def __init__(self, conn: Any, path: str, keys_file: str) -> None:
        import psycopg

        super().__init__(_Conn(conn), path)
        self._keys_file = keys_file
        self._errors = (psycopg.Error,)
        self._locked: set[str] = set()
        self._out = _Out()
        self.anchor_interval = ANCHOR_INTERVAL
        self.auto_anchor = True  # anchor after a write when due (the server anchors on its own timer instead)
        self._anchored_at = -1e9
        self.anchor_error: LedgerError | None = None  # why the last anchoring failed (None: it did not)

    @property
    def keys_path(self) -> str:
        return self._keys_file

    @property
    def commits(self) -> int:
        """COMMITs sent on this connection so far."""
        return int(self._conn.commits)

    @classmethod
    def open(
        cls,
        path: str,
        *,
        create: bool = True,
        readonly: bool = False,
        keys_file: str | None = None,
        label: str | None = None,
        timeout_ms: int | None = None,
    ) -> PgLedger:
        """Open the ledger at URL ``path`` (``label``: how messages name it, default the URL without its
        password). With ``create`` a missing schema is made and an older one upgraded (the role must
        own the database's tables: ``stoprule serve migrate``); ``timeout_ms`` bounds every wait."""
        import psycopg

        shown = label or display_url(path)
        try:
            conn = connect(path, timeout_ms)
        except psycopg.Error as exc:
            text = f": {_first_line(exc)}" if label is None else ""
            raise LedgerError(codes.LEDGER_UNAVAILABLE, f"cannot connect to {shown}{text}") from None
        ledger = cls(conn, shown, keys_file or default_keys_path())
        try:
            if timeout_ms is None:
                conn.execute(f"SET lock_timeout = {LOCK_TIMEOUT_MS}")
            ledger._prepare_pg(create and not readonly, readonly)
        except BaseException as exc:
            conn.close()
            if isinstance(exc, psycopg.Error):
                raise ledger._error(exc) from None
            raise
        return ledger

    def _prepare_pg(self, create: bool, readonly: bool) -> None:
        version = self._version()
        if version is None:
            if not create:
                raise LedgerError(
                    codes.LEDGER_MISSING,
                    f"no ledger here: {self.path} holds no stoprule ledger (nothing was created; "
                    "`stoprule serve migrate --ledger URL` makes it, as the database's owner)",
                )
            self._migrate()
        elif version in (1, 2) and readonly:
            self.schema = version
        elif version == 2:
            if not create:
                raise LedgerError(
                    codes.LEDGER_OLD_SCHEMA,
                    f"{self.path} has ledger schema 2; run `stoprule serve migrate --ledger URL` as the database's "
                    f"owner to bring it to schema {SCHEMA}",
                )
            self._migrate()
        elif version != SCHEMA:
            raise LedgerError(
                codes.LEDGER_TOO_NEW, f"{self.path} has ledger schema {version}; this stoprule reads {SCHEMA}"
            )

    def _version(self) -> int | None:
        # pg_tables by a query, not to_regclass: a table another creator just committed is seen at once
        row = self._conn.execute(
            "SELECT EXISTS (SELECT 1 FROM pg_tables WHERE tablename = ? AND schemaname = current_schema())", (MARKER,)
        ).fetchone()
        if not row[0]:
            return None
        got = self._conn.execute(f"SELECT version FROM {MARKER}").fetchone()
        return int(got[0]) if got else None

    def _migrate(self) -> None:
        """Make the schema, or upgrade schema 2 (every run and the head checked first), in one transaction."""
        c = self._conn
        c.execute("BEGIN")
        try:
            c.execute("SELECT pg_advisory_xact_lock(1398034514)")  # 'STPR': one creator at a time
            version = self._version()
            if version is None:
                c.raw.execute(DDL)
                c.execute("INSERT INTO stoprule_ledger (version) VALUES (?)", (SCHEMA,))
                c.execute("INSERT INTO head (id, anchors, hash) VALUES (1, 0, ?)", (GENESIS,))
            elif version == 2:
                c.execute("LOCK TABLE events, runs, head IN EXCLUSIVE MODE")  # writers of schema 2 wait

                _, breaks = check_runs(c)
                if not breaks:
                    breaks = check_head_v2(c, keys.load(self.keys_path), self.keys_path)[0]
                if breaks:
                    raise corrupt(self.path, f"cannot upgrade from ledger schema 2: {breaks[0].format()}")
                c.raw.execute(_UPGRADE)
                c.execute("UPDATE stoprule_ledger SET version = ?", (SCHEMA,))
                self._sign_all_runs()
                self.upgraded_from = 2
            c.execute("COMMIT")
        except BaseException:
            c.execute("ROLLBACK")
            raise

    # ------------------------------------------------------------------ the storage primitives, on PostgreSQL

    def _error(self, exc: BaseException) -> LedgerError:
        return pg_error(exc, self.path)

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        """In pipeline mode: statements go out without waiting for each other's answers (a decision is
        two round trips: the run's row, then everything else and the COMMIT), answered at the end."""
        import psycopg

        raw = self._conn.raw
        if not psycopg.Pipeline.is_supported():  # a libpq before 14
            with super()._transaction():
                yield
            return
        try:
            with raw.pipeline(), super()._transaction():
                yield
        except psycopg.Error as exc:  # answered at the pipeline's end: the COMMIT's, say
            raise self._error(exc) from None
        finally:
            if raw.info.transaction_status in (_IN_TX, _FAILED):
                with suppress(psycopg.Error):  # the connection may be gone: the transaction is void either way
                    raw.execute("ROLLBACK")

    def _begin(self) -> None:
        self._locked.clear()
        self._out = _Out()
        self._conn.execute("BEGIN")

    def _lock_run(self, run: str) -> None:
        self._lock_runs([run])

    def _lock_runs(self, runs: list[str]) -> None:
        """One statement takes every run's advisory lock, in the order given (a function scan keeps it)."""
        fresh = [r for r in dict.fromkeys(runs) if r not in self._locked]
        if not fresh:
            return
        self._conn.raw.execute(
            "SELECT pg_advisory_xact_lock(k) FROM unnest(%s::bigint[]) AS k", [[_lock_key(r) for r in fresh]]
        )
        self._locked.update(fresh)

    def _run_rows(self, runs: list[str], ids: int) -> tuple[dict[str, tuple[Any, ...] | None], list[int]]:
        raw = self._conn.raw
        rows = (
            raw.execute("SELECT run, events, head, tip, blocked, key, mac FROM runs WHERE run = ANY(%s)", [runs])
            if runs
            else None
        )
        taken = raw.execute("SELECT nextval('event_ids') FROM generate_series(1, %s)", [ids]) if ids else None
        found: dict[str, tuple[Any, ...] | None] = dict.fromkeys(runs)
        for run, *row in rows.fetchall() if rows is not None else ():  # (in a pipeline: one round trip for both)
            found[run] = tuple(row)
        return found, [int(i) for (i,) in reversed(taken.fetchall())] if taken is not None else []

    def _event_id(self) -> int | None:
        if not self._ids:
            self._ids = [int(self._conn.execute("SELECT nextval('event_ids')").fetchone()[0])]
        return self._ids.pop()

    # An append's rows wait in ``_out`` and go out table by table, one statement each for every append
    # waiting (``_flush``): before the transaction reads, before a run it appended to is extended again
    # (the guards check each event against its run's row as the database holds it), and before COMMIT.

    def _note_pending(self, run: str) -> None:
        self._out.pending[run] = None

    def _insert_fact(self, fact: str, body: str) -> None:
        self._out.facts[fact] = body

    def _insert_event(self, row: tuple[str, int, str, str, str, str, str], event_id: int | None) -> int:
        assert event_id is not None
        self._out.events.append((event_id, *row))
        return event_id

    def _insert_rest(self, node: tuple[Any, ...], edge: tuple[Any, ...], status: tuple[Any, ...], *, new: bool) -> None:
        self._out.nodes.append(node)
        self._out.edges.append(edge)
        (self._out.new_runs if new else self._out.moved_runs).append(status)

    def _flush(self) -> None:
        out = self._out
        if not (out.events or out.pending):
            return
        self._out = _Out()
        run = self._conn.raw.execute
        for table, rows in (
            ("facts", list(out.facts.items())),
            ("events", out.events),
            ("nodes", out.nodes),
            ("edges", out.edges),
            ("new_runs", out.new_runs),
            ("moved_runs", out.moved_runs),
            ("pending", [(r,) for r in out.pending]),
        ):
            if rows:
                run(_FLUSH[table], [json.dumps([[_param(v) for v in row] for row in rows])])

    def _held_head(self) -> Head:
        if self._head is None:
            self._conn.execute("SELECT id FROM head WHERE id = 1 FOR UPDATE")  # one anchorer at a time
            self._head = self._checked_head()
        return self._head

    def _written(self) -> None:
        if self.auto_anchor and time.monotonic() - self._anchored_at >= self.anchor_interval:
            with suppress(LedgerError):  # the decisions are committed: verify reports runs not anchored yet
                self.anchor()

    def anchor(self) -> int:
        """Append one anchor naming the runs queued since the last one (up to 10,000); how many runs.
        0 when none were queued or another process holds the head (it anchors them)."""
        self._anchored_at = time.monotonic()
        c = self._conn
        try:
            c.execute("BEGIN")
            try:
                row = c.execute("SELECT id FROM head WHERE id = 1 FOR UPDATE SKIP LOCKED").fetchone()
                runs = (
                    [
                        r
                        for (r,) in c.execute(
                            "DELETE FROM pending WHERE run IN (SELECT run FROM pending ORDER BY run LIMIT 10000"
                            " FOR UPDATE SKIP LOCKED) RETURNING run"
                        ).fetchall()
                    ]
                    if row
                    else []
                )
                if not runs:
                    c.execute("ROLLBACK")
                    return 0
                head = self._checked_head()
                entries = []
                rows = c.raw.execute(
                    "SELECT run, events, head, last_event, key, mac FROM runs WHERE run = ANY(%s)", [runs]
                ).fetchall()
                for run, events, h, last, kid, mac in rows:
                    try:
                        self._check_run(run, (events, h, None, None, kid, mac))
                    except LedgerError:
                        continue  # never vouch for a row changed without the key: verify names it
                    entries.append((run, events, h, last))
                if entries:
                    self._anchor(head, entries)
                c.execute("COMMIT")
            except BaseException:
                c.execute("ROLLBACK")
                raise
            finally:
                self._head = None
        except self._errors as exc:
            self.anchor_error = self._error(exc)
            raise self.anchor_error from None
        except LedgerError as exc:
            self.anchor_error = exc
            raise
        self.anchor_error = None
        return len(entries)

    def runs(self, limit: int | None = None) -> list[Any]:
        sql = _RUN_SQL + " ORDER BY last_event DESC" + (f" LIMIT {int(limit)}" if limit else "")
        return [_run(r) for r in self._read(sql)]

    @contextmanager
    def snapshot(self) -> Iterator[_Conn]:
        """One consistent view for ``log verify`` (REPEATABLE READ, read-only)."""
        self._conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        try:
            yield self._conn
        finally:
            self._conn.execute("ROLLBACK")

    def check_storage(self) -> list[Break]:
        """Facts no decision refers to, and the append-only guards: every trigger there and enabled."""
        c = self._conn
        breaks: list[Break] = []
        orphan = c.execute("SELECT digest FROM facts EXCEPT SELECT fact FROM nodes LIMIT 1").fetchone()
        if orphan:
            breaks.append(Break(None, 0, None, f"facts holds {orphan[0]}, which no decision refers to"))
        if self.schema < SCHEMA:
            return breaks
        have = {
            name: enabled
            for name, enabled in c.execute(
                "SELECT t.tgname, t.tgenabled FROM pg_trigger t JOIN pg_class r ON r.oid = t.tgrelid"
                " WHERE NOT t.tgisinternal AND r.relname IN"
                " ('facts','events','nodes','edges','runs','anchors','pending','head') AND pg_table_is_visible(r.oid)"
            ).fetchall()
        }
        gone = [t for t in TRIGGERS if t not in have]
        if gone:
            breaks.append(Break(None, 0, None, f"the append-only guards were removed (trigger(s) {', '.join(gone)})"))
        off = [t for t in TRIGGERS if have.get(t, "O") != "O"]
        if off:
            breaks.append(Break(None, 0, None, f"the append-only guards were disabled (trigger(s) {', '.join(off)})"))
        extra = sorted(n for n in have if n not in TRIGGERS)
        if extra:
            what = f"the schema holds trigger(s) {', '.join(extra)}, which stoprule does not create"
            breaks.append(Break(None, 0, None, what))
        return breaks


def pg_error(exc: BaseException, where: str) -> LedgerError:
    """A psycopg error as a LedgerError about ``where`` (the database as messages name it)."""
    import psycopg

    text = _first_line(exc)
    state = getattr(exc, "sqlstate", None) or ""
    if (isinstance(exc, psycopg.OperationalError) and not state) or state.startswith(("08", "57", "25P03")):
        return LedgerError(codes.LEDGER_UNAVAILABLE, f"{where} is not reachable ({text}); nothing was recorded")
    if state in ("55P03", "40001", "40P01"):
        return LedgerError(codes.LEDGER_BUSY, f"{where} is locked by another writer ({text}); try again")
    if state == "42501":
        return LedgerError(codes.LEDGER_READ_ONLY, f"{where}: not allowed ({text}); nothing was recorded")
    if state.startswith("42"):
        return corrupt(where, f"its schema is damaged ({text})")
    return LedgerError(codes.LEDGER_ERROR, f"{where}: {text}")


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def grant_sql(role: str) -> str:
    """The GRANT statements for the service's role (an identifier, quoted)."""
    quoted = '"' + role.replace('"', '""') + '"'
    return GRANTS.format(role=quoted)


def migrate(url: str, *, keys_file: str | None = None) -> tuple[int | None, int]:
    """Make the ledger's schema in the database at ``url``, or bring an older one to the current
    schema (as the role that owns it); ``(the schema found, or None for none, the schema now)``."""
    import psycopg

    try:
        conn = connect(url, None)
    except psycopg.Error as exc:
        message = f"cannot connect to {display_url(url)}: {_first_line(exc)}"
        raise LedgerError(codes.LEDGER_UNAVAILABLE, message) from None
    ledger = PgLedger(conn, display_url(url), keys_file or default_keys_path())
    try:
        found = ledger._version()
        ledger._prepare_pg(True, False)
    except psycopg.Error as exc:
        raise ledger._error(exc) from None
    finally:
        conn.close()
    return found, SCHEMA
