"""The ledger's SQLite schema: append-only tables, the triggers that keep them so, the run index.

Tables
  facts   content-addressed fact bodies (``sha256:`` of the canonical JSON)
  events  one ``validation_performed`` event per decision, hash-chained per run
  nodes   the run DAG's nodes (``step``, ``blocked_attempt``, ``checkpoint``), one per event
  edges   one incoming edge per node (``root`` for a run's first node, ``next``, ``retry``)
  runs    one row per run: tip, verdict, counters and chain head (the O(1) status lookup)

``facts``, ``events``, ``nodes`` and ``edges`` refuse UPDATE and DELETE. ``runs`` is the only
row that changes, and only forward: each update must advance it by exactly one event whose
hash becomes the head. An event must extend its run's chain (``seq`` = count + 1, ``prev`` = head).
"""

from __future__ import annotations

from .events import GENESIS

__all__ = ["APPLICATION_ID", "DDL", "SCHEMA_VERSION"]

APPLICATION_ID = 0x53545052  # "STPR": marks the file as a stoprule ledger
SCHEMA_VERSION = 1

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
) WITHOUT ROWID;

CREATE INDEX IF NOT EXISTS runs_recent ON runs (last_event);

CREATE TRIGGER IF NOT EXISTS events_extend_chain BEFORE INSERT ON events
WHEN NEW.seq IS NOT coalesce((SELECT events FROM runs WHERE run = NEW.run), 0) + 1
  OR NEW.prev IS NOT coalesce((SELECT head FROM runs WHERE run = NEW.run), '{GENESIS}')
BEGIN SELECT RAISE(ABORT, 'ledger: an event must extend its run''s hash chain'); END;

CREATE TRIGGER IF NOT EXISTS runs_insert_first BEFORE INSERT ON runs
WHEN NEW.events IS NOT 1 OR NEW.head IS NOT (SELECT hash FROM events WHERE run = NEW.run AND seq = 1)
BEGIN SELECT RAISE(ABORT, 'ledger: a run starts at its first event'); END;

CREATE TRIGGER IF NOT EXISTS runs_forward BEFORE UPDATE ON runs
WHEN NEW.run IS NOT OLD.run OR NEW.events IS NOT OLD.events + 1
  OR NEW.head IS NOT (SELECT hash FROM events WHERE run = NEW.run AND seq = NEW.events)
BEGIN SELECT RAISE(ABORT, 'ledger: a run''s status only moves forward with its chain'); END;
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

DDL = _TABLES + _TRIGGERS + f"\nPRAGMA application_id = {APPLICATION_ID};\nPRAGMA user_version = {SCHEMA_VERSION};\n"
