"""The ledger on PostgreSQL (psycopg 3): the same tables, guards, chains and signed head as the
SQLite ledger, for many writers on many hosts.

``PgLedger`` is :class:`stoprule.ledger.store.Ledger` with another connection underneath: every
read, the append and the recorder are the same code. What differs:

- **The write lock** is the ledger head's row: a write transaction starts with
  ``SELECT ... FROM head WHERE id = 1 FOR UPDATE`` (READ COMMITTED), so writers on any number of
  hosts append one transaction after another, as SQLite's ``BEGIN IMMEDIATE`` makes them. The
  next event id is the head's count + 1 (never a sequence: ids run 1..N without gaps).
- **The guards** are PL/pgSQL triggers with the SQLite triggers' rules, plus ``TRUNCATE``
  refused; :data:`GRANTS` gives the service's role INSERT and SELECT only on the event tables.
- **The key file** is not beside a file: ``$STOPRULE_LEDGER_KEYS``, else ``ledger.keys`` in the
  nearest ``.stoprule/``. Every server writing to the ledger needs the same file.
- **Errors**: a lost connection or a server shutting down is ``ledger.unavailable``; a lock not
  had within :data:`LOCK_TIMEOUT_MS` is ``ledger.busy``. Nothing is half-written: a decision is
  one transaction.
"""

from __future__ import annotations

import os
import re
from contextlib import contextmanager

from stoprule.ledger.errors import LedgerError
from stoprule.ledger.events import GENESIS
from stoprule.ledger.runcheck import Break
from stoprule.ledger.store import Head, Ledger, corrupt

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

__all__ = ["DDL", "GRANTS", "LOCK_TIMEOUT_MS", "PgLedger", "display_url", "is_url"]

SCHEMES = ("postgresql://", "postgres://")
LOCK_TIMEOUT_MS = 10_000  # a writer waits this long for the ledger head's lock (SQLite: BUSY_TIMEOUT)
MARKER = "stoprule_ledger"  # a one-row table: the schema version

_TABLES = """
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
CREATE TABLE runs (
    run TEXT PRIMARY KEY, events INTEGER NOT NULL, head TEXT NOT NULL, tip TEXT NOT NULL, tip_kind TEXT NOT NULL,
    retryable INTEGER NOT NULL, attempt INTEGER NOT NULL, ok INTEGER NOT NULL, verdict TEXT NOT NULL,
    reason TEXT NOT NULL, blocked INTEGER NOT NULL, created TEXT NOT NULL, updated TEXT NOT NULL,
    last_event BIGINT NOT NULL);
CREATE INDEX runs_recent ON runs (last_event);
CREATE TABLE head (
    id INTEGER PRIMARY KEY CHECK (id = 1), events BIGINT NOT NULL CHECK (events >= 0), hash TEXT NOT NULL,
    key TEXT, mac TEXT, CHECK ((key IS NULL) = (mac IS NULL) AND (key IS NOT NULL OR events = 0)));
"""

_GUARDS = f"""
CREATE FUNCTION stoprule_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'ledger is append-only: % cannot be %', TG_TABLE_NAME, lower(TG_OP) || 'd'; END $$;

CREATE FUNCTION stoprule_event_extends() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE n INTEGER; h TEXT;
BEGIN
  SELECT events, head INTO n, h FROM runs WHERE run = NEW.run;
  IF NEW.seq IS DISTINCT FROM coalesce(n, 0) + 1 OR NEW.prev IS DISTINCT FROM coalesce(h, '{GENESIS}') THEN
    RAISE EXCEPTION 'ledger: an event must extend its run''s hash chain';
  END IF;
  IF NEW.id <= (SELECT events FROM head WHERE id = 1) THEN
    RAISE EXCEPTION 'ledger: an event must come after every event the ledger head covers';
  END IF;
  RETURN NEW;
END $$;

CREATE FUNCTION stoprule_run_forward() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    IF NEW.events IS DISTINCT FROM 1
       OR NEW.head IS DISTINCT FROM (SELECT hash FROM events WHERE run = NEW.run AND seq = 1) THEN
      RAISE EXCEPTION 'ledger: a run starts at its first event';
    END IF;
  ELSIF NEW.run IS DISTINCT FROM OLD.run OR NEW.events IS DISTINCT FROM OLD.events + 1
     OR NEW.head IS DISTINCT FROM (SELECT hash FROM events WHERE run = NEW.run AND seq = NEW.events) THEN
    RAISE EXCEPTION 'ledger: a run''s status only moves forward with its chain';
  END IF;
  RETURN NEW;
END $$;

CREATE FUNCTION stoprule_head_forward() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE last BIGINT := coalesce((SELECT max(id) FROM events), 0);
BEGIN
  IF TG_OP = 'INSERT' THEN
    IF NEW.events IS DISTINCT FROM last OR (NEW.events = 0 AND NEW.hash IS DISTINCT FROM '{GENESIS}') THEN
      RAISE EXCEPTION 'ledger: the ledger head must cover every event';
    END IF;
  ELSIF NEW.id IS DISTINCT FROM OLD.id OR NEW.events IS DISTINCT FROM last
     OR NOT (NEW.events = OLD.events + 1 OR (NEW.events = OLD.events AND NEW.hash = OLD.hash)) THEN
    RAISE EXCEPTION 'ledger: the ledger head only moves forward, one event at a time';
  END IF;
  RETURN NEW;
END $$;

CREATE TRIGGER events_extend_chain BEFORE INSERT ON events FOR EACH ROW EXECUTE FUNCTION stoprule_event_extends();
CREATE TRIGGER runs_forward BEFORE INSERT OR UPDATE ON runs FOR EACH ROW EXECUTE FUNCTION stoprule_run_forward();
CREATE TRIGGER head_forward BEFORE INSERT OR UPDATE ON head FOR EACH ROW EXECUTE FUNCTION stoprule_head_forward();
""" + "".join(
    f"""
CREATE TRIGGER {t}_no_change BEFORE {ops} ON {t} FOR EACH ROW EXECUTE FUNCTION stoprule_refuse();
CREATE TRIGGER {t}_no_truncate BEFORE TRUNCATE ON {t} FOR EACH STATEMENT EXECUTE FUNCTION stoprule_refuse();
"""
    for t, ops in (("facts", "UPDATE OR DELETE"), ("events", "UPDATE OR DELETE"), ("nodes", "UPDATE OR DELETE"),
                   ("edges", "UPDATE OR DELETE"), ("runs", "DELETE"), ("head", "DELETE"))
)  # fmt: skip

DDL = _TABLES + _GUARDS
TRIGGERS = tuple(sorted(re.findall(r"CREATE TRIGGER (\w+)", _GUARDS)))

# what the service's role may do (run by the ledger's owner; docs/serve.md): no UPDATE, DELETE or
# TRUNCATE on the event tables at all, and the triggers refuse them for the owner too
GRANTS = """
REVOKE ALL ON stoprule_ledger, facts, events, nodes, edges, runs, head FROM {role};
GRANT SELECT ON stoprule_ledger TO {role};
GRANT SELECT, INSERT ON facts, events, nodes, edges TO {role};
GRANT SELECT, INSERT, UPDATE ON runs, head TO {role};
"""


def is_url(target: str | None) -> bool:
    return bool(target) and str(target).startswith(SCHEMES)


def display_url(url: str) -> str:
    """The URL without its password (for messages)."""
    return re.sub(r"^(postgres(?:ql)?://[^:/@]*):[^@]*@", r"\1:***@", url)


def _param(value: Any) -> Any:
    return int(value) if isinstance(value, bool) else value  # flags are INTEGER 0/1, as in SQLite


class _Conn:
    """The psycopg connection with the ``sqlite3`` calls the shared code makes: ``?`` parameters,
    ``execute(...).fetchone()``, a ``text_factory`` attribute (PostgreSQL keeps only valid UTF-8)."""

    text_factory: Any = str

    def __init__(self, conn: Any) -> None:
        self.raw = conn

    def execute(self, sql: str, args: tuple | list = ()) -> Any:
        if args:
            sql = sql.replace("%", "%%").replace("?", "%s")
            return self.raw.execute(sql, [_param(a) for a in args])
        return self.raw.execute(sql)

    def close(self) -> None:
        self.raw.close()


def default_keys_path(env: Any = None) -> str:
    env = os.environ if env is None else env
    if env.get("STOPRULE_LEDGER_KEYS"):
        return str(env["STOPRULE_LEDGER_KEYS"])
    from stoprule.project import find_project

    project = find_project()
    return os.path.join(project or ".stoprule", "ledger.keys")


class PgLedger(Ledger):
    """A ledger in a PostgreSQL database (the tables in the connection's ``search_path`` schema)."""

    backend = "postgresql"

    def __init__(self, conn: Any, path: str, keys_file: str) -> None:
        import psycopg

        super().__init__(_Conn(conn), path)
        self._keys_file = keys_file
        self._errors = (psycopg.Error,)

    @property
    def keys_path(self) -> str:
        return self._keys_file

    @classmethod
    def open(
        cls, path: str, *, create: bool = True, readonly: bool = False, keys_file: str | None = None
    ) -> PgLedger:
        import psycopg

        shown = display_url(path)
        try:
            conn = psycopg.connect(path, autocommit=True, connect_timeout=10)
        except psycopg.Error as exc:
            raise LedgerError("ledger.unavailable", f"cannot connect to {shown}: {_first_line(exc)}") from None
        ledger = cls(conn, shown, keys_file or default_keys_path())
        try:
            conn.execute(f"SET lock_timeout = {LOCK_TIMEOUT_MS}")
            ledger._prepare_pg(create and not readonly)
        except BaseException as exc:
            conn.close()
            if isinstance(exc, psycopg.Error):
                raise ledger._error(exc) from None
            raise
        return ledger

    def _prepare_pg(self, create: bool) -> None:
        c = self._conn
        version = self._version()
        if version is None:
            if not create:
                raise LedgerError(
                    "ledger.missing",
                    f"no ledger here: {self.path} holds no stoprule ledger (nothing was created; "
                    "`stoprule eval --run RUN --ledger URL` records the first decision and creates it)",
                )
            c.execute("BEGIN")
            try:
                c.execute("SELECT pg_advisory_xact_lock(1398034514)")  # 'STPR': one creator at a time
                if self._version() is None:
                    c.raw.execute(DDL)
                    c.execute("INSERT INTO stoprule_ledger (version) VALUES (2)")
                    c.execute("INSERT INTO head (id, events, hash) VALUES (1, 0, ?)", (GENESIS,))
                c.execute("COMMIT")
            except BaseException:
                c.execute("ROLLBACK")
                raise
        elif version != 2:
            raise LedgerError("ledger.too_new", f"{self.path} has ledger schema {version}; this stoprule reads 2")

    def _version(self) -> int | None:
        # pg_tables by a query, not to_regclass: a table another creator just committed is seen at once
        row = self._conn.execute(
            "SELECT EXISTS (SELECT 1 FROM pg_tables WHERE tablename = ? AND schemaname = current_schema())", (MARKER,)
        ).fetchone()
        if not row[0]:
            return None
        got = self._conn.execute(f"SELECT version FROM {MARKER}").fetchone()
        return int(got[0]) if got else None

    # ------------------------------------------------------------------ what differs from SQLite

    def _error(self, exc: BaseException) -> LedgerError:
        import psycopg

        text = _first_line(exc)
        state = getattr(exc, "sqlstate", None) or ""
        if (isinstance(exc, psycopg.OperationalError) and not state) or state.startswith(("08", "57")):
            return LedgerError("ledger.unavailable", f"{self.path} is not reachable ({text}); nothing was recorded")
        if state in ("55P03", "40001", "40P01"):
            return LedgerError("ledger.busy", f"{self.path} is locked by another writer ({text}); try again")
        if state == "42501":
            return LedgerError("ledger.read_only", f"{self.path}: not allowed ({text}); nothing was recorded")
        if state.startswith("42"):
            return corrupt(self.path, f"its schema is damaged ({text})")
        return LedgerError("ledger.error", f"{self.path}: {text}")

    def _begin(self) -> None:
        self._conn.execute("BEGIN")
        self._conn.execute("SELECT id FROM head WHERE id = 1 FOR UPDATE")  # the ledger's write lock

    def _insert_fact(self, fact: str, body: str) -> None:
        self._conn.execute("INSERT INTO facts (digest, body) VALUES (?, ?) ON CONFLICT DO NOTHING", (fact, body))

    def _insert_event(self, row: tuple[str, int, str, str, str, str, str]) -> int:
        assert self._head is not None
        event_id = self._head.events + 1
        self._conn.execute(
            "INSERT INTO events (id, run, seq, type, node, body, prev, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (event_id, *row),
        )
        return event_id

    def head(self) -> Head | None:
        rows = self._read("SELECT events, hash, key, mac FROM head WHERE id = 1")
        if not rows:
            raise corrupt(self.path, "the ledger head is missing")
        return Head(*rows[0])

    def runs(self, limit: int | None = None) -> list:
        from stoprule.ledger.store import _RUN_SQL, _run

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
        have = {name: enabled for name, enabled in c.execute(
            "SELECT t.tgname, t.tgenabled FROM pg_trigger t JOIN pg_class r ON r.oid = t.tgrelid"
            " WHERE NOT t.tgisinternal AND r.relname IN ('facts','events','nodes','edges','runs','head')"
            " AND pg_table_is_visible(r.oid)"
        ).fetchall()}  # fmt: skip
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


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def grant_sql(role: str) -> str:
    """The GRANT statements for the service's role (an identifier, quoted)."""
    quoted = '"' + role.replace('"', '""') + '"'
    return GRANTS.format(role=quoted)
