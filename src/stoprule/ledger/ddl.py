"""The ledger's SQLite schema: append-only tables, the triggers that keep them so, the run index.

Tables
  facts    content-addressed fact bodies (``sha256:`` of the canonical JSON)
  events   one ``validation_performed`` event per decision, hash-chained per run
  nodes    the run DAG's nodes (``step``, ``blocked_attempt``, ``checkpoint``), one per event
  edges    one incoming edge per node (``root`` for a run's first node, ``next``, ``retry``)
  runs     one row per run: tip, verdict, counters and chain head, HMAC-signed (the O(1) status lookup)
  anchors  the ledger chain: each anchor names the heads of the runs written since the one before
  head     one row: the last anchor, HMAC-signed

``facts``, ``events``, ``nodes``, ``edges`` and ``anchors`` refuse UPDATE and DELETE. ``runs`` and
``head`` are the only rows that change, and only forward: a run's update must advance it by exactly
one event whose hash becomes its head (or sign the same state again after a key change); the head
advances by one anchor at a time (or is signed again in place). An event must extend its run's
chain (``seq`` = count + 1, ``prev`` = head), an anchor the ledger chain.

Schema 3 chains each run on its own (writers of different runs never wait on each other) and
anchors run heads in the ledger chain; schema 2 chained every event of every run in one
ledger-wide chain, and schema 1 had no ledger chain. Both are upgraded in place on the first
write (see ``store.Ledger._upgrade``): ``runs`` gains its signature columns by ``ALTER TABLE``,
which is why the table's text below ends the way ``ALTER TABLE ... ADD COLUMN`` leaves it (an
upgraded ledger's schema then reads exactly as a new one's).

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

from stoprule.ledger.events import GENESIS

__all__ = ["APPLICATION_ID", "DDL", "LEGACY_HEAD", "SCHEMA_VERSION", "STATEMENTS", "UPGRADE"]

APPLICATION_ID = 0x53545052  # "STPR": marks the file as a stoprule ledger
SCHEMA_VERSION = 3

_TABLES = f"""
CREATE TABLE IF NOT EXISTS facts (
    digest TEXT PRIMARY KEY,
    body   TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS events (
    id   INTEGER PRIMARY KEY,
    run  TEXT NOT NULL,
    seq  INTEGER NOT NULL CHECK (seq >= 1),
    type TEXT NOT NULL,
    node TEXT NOT NULL,
    body TEXT NOT NULL,
    prev TEXT NOT NULL,
    hash TEXT NOT NULL,
    UNIQUE (run, seq),
    UNIQUE (run, node)
);

CREATE TABLE IF NOT EXISTS nodes (
    run       TEXT NOT NULL,
    node      TEXT NOT NULL,
    seq       INTEGER NOT NULL,
    kind      TEXT NOT NULL CHECK (kind IN ('step', 'blocked_attempt', 'checkpoint')),
    retryable INTEGER NOT NULL CHECK (retryable IN (0, 1) AND (retryable = 0 OR kind = 'blocked_attempt')),
    attempt   INTEGER NOT NULL CHECK (attempt >= 1),
    retry_of  TEXT,
    ok        INTEGER NOT NULL CHECK (ok IN (0, 1)),
    verdict   TEXT NOT NULL,
    reason    TEXT NOT NULL,
    fact      TEXT NOT NULL REFERENCES facts (digest),
    event     INTEGER NOT NULL UNIQUE REFERENCES events (id),
    PRIMARY KEY (run, node),
    UNIQUE (run, seq),
    FOREIGN KEY (run, retry_of) REFERENCES nodes (run, node)
) WITHOUT ROWID;

-- a blocked attempt is retried at most once: a second retry of the same node cannot be stored
CREATE UNIQUE INDEX IF NOT EXISTS nodes_retry ON nodes (run, retry_of) WHERE retry_of IS NOT NULL;

CREATE TABLE IF NOT EXISTS edges (
    run    TEXT NOT NULL,
    child  TEXT NOT NULL,
    parent TEXT,
    kind   TEXT NOT NULL CHECK (kind IN ('root', 'next', 'retry') AND ((kind = 'root') = (parent IS NULL))),
    PRIMARY KEY (run, child),
    FOREIGN KEY (run, child) REFERENCES nodes (run, node),
    FOREIGN KEY (run, parent) REFERENCES nodes (run, node)
) WITHOUT ROWID;

CREATE INDEX IF NOT EXISTS edges_parent ON edges (run, parent);

CREATE TABLE IF NOT EXISTS runs (
    run        TEXT PRIMARY KEY,
    events     INTEGER NOT NULL,
    head       TEXT NOT NULL,
    tip        TEXT NOT NULL,
    tip_kind   TEXT NOT NULL,
    retryable  INTEGER NOT NULL,
    attempt    INTEGER NOT NULL,
    ok         INTEGER NOT NULL,
    verdict    TEXT NOT NULL,
    reason     TEXT NOT NULL,
    blocked    INTEGER NOT NULL,
    created    TEXT NOT NULL,
    updated    TEXT NOT NULL,
    last_event INTEGER NOT NULL
, key TEXT, mac TEXT) WITHOUT ROWID;

CREATE INDEX IF NOT EXISTS runs_recent ON runs (last_event);

CREATE TRIGGER IF NOT EXISTS events_extend_chain BEFORE INSERT ON events
WHEN NEW.seq IS NOT coalesce((SELECT events FROM runs WHERE run = NEW.run), 0) + 1
  OR NEW.prev IS NOT coalesce((SELECT head FROM runs WHERE run = NEW.run), '{GENESIS}')
BEGIN SELECT RAISE(ABORT, 'ledger: an event must extend its run''s hash chain'); END;

CREATE TRIGGER IF NOT EXISTS runs_insert_first BEFORE INSERT ON runs
WHEN NEW.events IS NOT 1 OR NEW.head IS NOT (SELECT hash FROM events WHERE run = NEW.run AND seq = 1)
BEGIN SELECT RAISE(ABORT, 'ledger: a run starts at its first event'); END;

"""

_APPEND_ONLY = ("facts", "events", "nodes", "edges")

_TRIGGERS = (
    "".join(
        f"""
CREATE TRIGGER IF NOT EXISTS {table}_no_{op} BEFORE {op.upper()} ON {table}
BEGIN SELECT RAISE(ABORT, 'ledger is append-only: {table} cannot be {op}d'); END;
"""
        for table in _APPEND_ONLY
        for op in ("update", "delete")
    )
    + """
CREATE TRIGGER IF NOT EXISTS runs_no_delete BEFORE DELETE ON runs
BEGIN SELECT RAISE(ABORT, 'ledger is append-only: runs cannot be deleted'); END;
"""
)

_APPEND_ONLY_3 = ("anchors",)

# schema 3: a run's status row carries an HMAC of its chain head (``keys.run_mac``; a writer
# checks it before extending the run, and only the signature may change in place), and the
# ledger chain runs over anchors: anchor ``i`` names the runs written since anchor ``i - 1``
# with their event count, head hash and last event id
# (``events.anchor_body``); ``head`` holds the number of anchors, the last one's hash and its
# HMAC (``keys.head_mac``). Unsigned only while there is no anchor.
_SCHEMA_3 = f"""
CREATE TRIGGER IF NOT EXISTS runs_forward BEFORE UPDATE ON runs
WHEN NEW.run IS NOT OLD.run OR NOT (
    (NEW.events IS OLD.events + 1
     AND NEW.head IS (SELECT hash FROM events WHERE run = NEW.run AND seq = NEW.events))
    OR ((NEW.events, NEW.head, NEW.tip, NEW.tip_kind, NEW.retryable, NEW.attempt, NEW.ok, NEW.verdict, NEW.reason,
         NEW.blocked, NEW.created, NEW.updated, NEW.last_event)
        IS (OLD.events, OLD.head, OLD.tip, OLD.tip_kind, OLD.retryable, OLD.attempt, OLD.ok, OLD.verdict, OLD.reason,
            OLD.blocked, OLD.created, OLD.updated, OLD.last_event)))
BEGIN SELECT RAISE(ABORT, 'ledger: a run''s status only moves forward with its chain'); END;

CREATE TABLE IF NOT EXISTS anchors (
    id   INTEGER PRIMARY KEY,
    body TEXT NOT NULL,
    prev TEXT NOT NULL,
    hash TEXT NOT NULL
);

CREATE TRIGGER IF NOT EXISTS anchors_extend_chain BEFORE INSERT ON anchors
WHEN NEW.id IS NOT coalesce((SELECT max(id) FROM anchors), 0) + 1
  OR NEW.prev IS NOT coalesce((SELECT hash FROM anchors WHERE id = NEW.id - 1), '{GENESIS}')
BEGIN SELECT RAISE(ABORT, 'ledger: an anchor must extend the ledger chain'); END;

CREATE TABLE IF NOT EXISTS head (
    id      INTEGER PRIMARY KEY CHECK (id = 1),
    anchors INTEGER NOT NULL CHECK (anchors >= 0),
    hash    TEXT NOT NULL,
    key     TEXT,
    mac     TEXT,
    CHECK ((key IS NULL) = (mac IS NULL) AND (key IS NOT NULL OR anchors = 0))
);

CREATE TRIGGER IF NOT EXISTS head_insert BEFORE INSERT ON head
WHEN NEW.anchors IS NOT coalesce((SELECT max(id) FROM anchors), 0)
  OR NEW.hash IS NOT coalesce((SELECT hash FROM anchors WHERE id = NEW.anchors), '{GENESIS}')
BEGIN SELECT RAISE(ABORT, 'ledger: the ledger head must cover every anchor'); END;

CREATE TRIGGER IF NOT EXISTS head_forward BEFORE UPDATE ON head
WHEN NEW.id IS NOT OLD.id
  OR NEW.anchors IS NOT coalesce((SELECT max(id) FROM anchors), 0)
  OR NEW.hash IS NOT coalesce((SELECT hash FROM anchors WHERE id = NEW.anchors), '{GENESIS}')
  OR NOT (NEW.anchors = OLD.anchors + 1 OR (NEW.anchors = OLD.anchors AND NEW.hash IS OLD.hash))
BEGIN SELECT RAISE(ABORT, 'ledger: the ledger head only moves forward, one anchor at a time'); END;

CREATE TRIGGER IF NOT EXISTS head_no_delete BEFORE DELETE ON head
BEGIN SELECT RAISE(ABORT, 'ledger is append-only: head cannot be deleted'); END;
""" + "".join(
    f"""
CREATE TRIGGER IF NOT EXISTS {table}_no_{op} BEFORE {op.upper()} ON {table}
BEGIN SELECT RAISE(ABORT, 'ledger is append-only: {table} cannot be {op}d'); END;
"""
    for table in _APPEND_ONLY_3
    for op in ("update", "delete")
)

# what schema 2 had that schema 3 replaces (dropped by the upgrade; the head table is made anew)
LEGACY_HEAD = ("head_insert", "head_forward", "head_no_delete", "events_after_head", "runs_forward")


def _split(script: str) -> list[str]:
    """The statements of a DDL script (a trigger's body holds ``;`` too: it ends at ``END;``)."""
    out, cur = [], []
    for line in script.strip().splitlines():
        cur.append(line)
        text = "\n".join(cur).strip()
        if text.endswith(";") and (not text.upper().startswith("CREATE TRIGGER") or text.endswith("END;")):
            out.append(text)
            cur = []
    assert not "\n".join(cur).strip(), "unterminated DDL statement"
    return out


# every statement, in order, for a new ledger (each is idempotent)
STATEMENTS = [
    *_split(_TABLES + _TRIGGERS + _SCHEMA_3),
    f"PRAGMA application_id = {APPLICATION_ID}",
    f"PRAGMA user_version = {SCHEMA_VERSION}",
]
# the upgrade of a schema-1 or schema-2 ledger whose ``LEGACY_HEAD`` objects were dropped
UPGRADE = [
    "ALTER TABLE runs ADD COLUMN key TEXT",
    "ALTER TABLE runs ADD COLUMN mac TEXT",
    *_split(_SCHEMA_3),
    f"PRAGMA user_version = {SCHEMA_VERSION}",
]
DDL = ";\n".join(s.rstrip(";") for s in STATEMENTS) + ";\n"
