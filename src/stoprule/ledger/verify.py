"""``log verify``: recompute each run's hash chain, the ledger chain and its signed head, and
check every table against them.

For each run, events are read in ``seq`` order and each must: follow the previous one
(``seq`` contiguous, ids increasing, ``prev`` = the previous hash), hash to its stored
``hash`` (its body was not altered), agree with its columns, and have its node, edge and fact
stored exactly as the body says. Then the run's status row must equal, column by column, the
status recomputed from its chain, and no node or edge may exist without an event. The first
failure of a run is its broken link.

For the whole ledger (``verify`` without a run): event ids must run 1..N without a gap, the
ledger chain over them (``events.head_link``) must end at the stored head, which must cover
exactly N events and carry a valid HMAC from the key file: a run deleted from every table,
renumbered or reordered events, or a head rewritten without the key are found here. Facts
that no decision refers to, a schema other than the one stoprule creates (a guard trigger
removed, a table altered, a trigger added) and damage SQLite's own integrity check sees are
findings too. A file SQLite cannot read at all is a ``ledger.corrupt`` error.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

from stoprule._util.records import record
from stoprule.ledger import keys
from stoprule.ledger.ddl import STATEMENTS
from stoprule.ledger.errors import LedgerError
from stoprule.ledger.events import GENESIS, head_link
from stoprule.ledger.protocols import LedgerBackend
from stoprule.ledger.runcheck import Break, check_runs, lenient
from stoprule.ledger.sha import compare_digest
from stoprule.ledger.store import corrupt, sqlite_error

__all__ = ["Break", "Report", "check_runs", "verify"]


def _expected_schema() -> dict[str, tuple[str, str]]:
    """``{name: (type, sql)}`` as SQLite stores our DDL in ``sqlite_master`` (from ``CREATE``, without
    ``IF NOT EXISTS`` and the final ``;``)."""
    out = {}
    for statement in STATEMENTS:
        text = "\n".join(ln for ln in statement.splitlines() if not ln.startswith("--")).rstrip(";")
        if not text.startswith("CREATE"):
            continue
        text = text.replace(" IF NOT EXISTS", "", 1)
        words = text.split()
        kind = "index" if "INDEX" in words[1:3] else words[1].lower()
        out[words[3] if words[1] == "UNIQUE" else words[2]] = (kind, text)
    return out


_SCHEMA = _expected_schema()
_SCHEMA_2_ONLY = ("head", "head_insert", "head_forward", "head_no_delete", "events_after_head")


@record
class Report:
    runs: int
    events: int
    breaks: list[Break]
    head: dict[str, Any] | None = None  # the verified ledger head (whole-ledger verify of a schema-2 ledger)

    @property
    def ok(self) -> bool:
        return not self.breaks

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "runs": self.runs, "events": self.events, "breaks": [b.to_dict() for b in self.breaks],
                "head": self.head}  # fmt: skip


def _ranges(ids: list[int]) -> str:
    shown = ", ".join(str(i) for i in ids[:10])
    return shown + (f" and {len(ids) - 10} more" if len(ids) > 10 else "")


def _check_head(ledger: LedgerBackend, c: Any) -> tuple[list[Break], dict[str, Any] | None]:
    """The ledger chain over every event in id order against the signed head."""
    if ledger.schema < 2:
        return [Break(None, 0, None, (
            "this is a schema-1 ledger: it has no signed ledger head, so a run deleted from every table "
            "could not be detected; `stoprule log upgrade` adds one (after checking every run)"
        ))], None  # fmt: skip
    rows = c.execute("SELECT events, hash, key, mac FROM head").fetchall()
    if len(rows) == 1 and not c.execute("SELECT 1 FROM head WHERE id = 1").fetchone():
        return [Break(None, 0, None, "the ledger head's row id is not 1 (writers would not find it)")], None
    if len(rows) != 1:
        return [Break(None, 0, None, f"the ledger head is missing (the head table holds {len(rows)} rows)")], None
    events, head, kid, mac = rows[0]
    chain, n = GENESIS, 0
    missing: list[int] = []
    for eid, h in c.execute("SELECT id, hash FROM events ORDER BY id"):
        if type(eid) is not int or not isinstance(h, str):
            return [Break(None, 0, None, f"event id {eid!r} holds a value no writer stores")], None
        if eid > n + 1 and len(missing) <= 10:
            missing.extend(range(n + 1, min(eid, n + 12)))
        chain, n = head_link(chain, eid, h), eid
    info = {"events": events, "hash": head, "key": kid}
    breaks: list[Break] = []
    if missing:
        breaks.append(Break(None, missing[0], None, (
            f"event id(s) {_ranges(missing)} are missing: events were deleted (a run removed from every table "
            "leaves exactly this gap)"
        )))  # fmt: skip
    elif type(events) is not int or events != n:
        if type(events) is int and events > n:
            breaks.append(Break(None, n + 1, None, (
                f"the ledger head covers {events} events but the last event is {n}: events {n + 1}..{events} "
                "were deleted"
            )))  # fmt: skip
        else:
            breaks.append(Break(None, n, None, (
                f"the ledger head covers {events!r} events but the ledger holds events up to {n}: events were "
                "added without the head, or the head was replaced"
            )))  # fmt: skip
    elif chain != head:
        breaks.append(Break(None, n, None, (
            "the events no longer chain to the ledger head: events were reordered, renumbered or replaced"
        )))  # fmt: skip
    if kid is None:
        if events != 0 or head != GENESIS:
            breaks.append(Break(None, 0, None, "the ledger head is not signed"))
        return breaks, info
    try:
        ring = keys.load(ledger.keys_path)
    except LedgerError as exc:
        breaks.append(Break(None, 0, None, f"the ledger head's signature cannot be checked: {exc.message}"))
        return breaks, info
    key = ring.keys.get(kid) if isinstance(kid, str) else None
    if key is None or key.secret is None:
        breaks.append(Break(None, 0, None, (
            f"the ledger head is signed with key {kid!r}, which {ledger.keys_path} does not hold: "
            "its signature cannot be checked"
        )))  # fmt: skip
    elif not isinstance(mac, str) or not compare_digest(
        mac.encode("utf-8", "surrogateescape"), keys.head_mac(key.secret, events, head).encode()
    ):
        breaks.append(Break(None, 0, None, (
            "the ledger head's signature does not verify: the head was rewritten without the key"
        )))  # fmt: skip
    return breaks, info


def _check_file(c: sqlite3.Connection, schema: int) -> list[Break]:
    """Rows that belong to no decision, a schema that is not the one stoprule creates (guards
    removed, a table altered, a trigger added), and damage SQLite itself can see."""
    breaks: list[Break] = []
    orphan = c.execute("SELECT digest FROM facts EXCEPT SELECT fact FROM nodes LIMIT 1").fetchone()
    if orphan:
        breaks.append(Break(None, 0, None, f"facts holds {orphan[0]}, which no decision refers to"))
    want = {n: v for n, v in _SCHEMA.items() if schema >= 2 or n not in _SCHEMA_2_ONLY}
    have = {n: (t, sql) for t, n, sql in c.execute("SELECT type, name, sql FROM sqlite_master")
            if not (isinstance(n, str) and n.startswith("sqlite_autoindex_"))}  # fmt: skip
    gone = [n for n, (t, _) in want.items() if t == "trigger" and n not in have]
    if gone:
        breaks.append(Break(None, 0, None, f"the append-only guards were removed (trigger(s) {', '.join(gone)})"))
    missing = [n for n, (t, _) in want.items() if t != "trigger" and n not in have]
    if missing:
        breaks.append(Break(None, 0, None, f"the schema lost {', '.join(missing)}"))
    altered = [n for n in want if n in have and have[n] != want[n]]
    if altered:
        breaks.append(Break(None, 0, None, f"the schema of {', '.join(map(str, altered))} was altered"))
    extra = sorted(str(n) for n in have if n not in want)
    if extra:
        breaks.append(Break(None, 0, None, f"the schema holds {', '.join(extra)}, which stoprule does not create"))
    problems = [r[0] for r in c.execute("PRAGMA integrity_check(5)")]
    if problems != ["ok"]:
        breaks.append(Break(None, 0, None, "SQLite's integrity check fails: " + "; ".join(map(str, problems))))
    return breaks


def verify(
    ledger: LedgerBackend, run: str | None = None, on_progress: Callable[[int, int], None] | None = None
) -> Report:
    """Check one run (LedgerError if unknown), or every run and the ledger as a whole
    (``on_progress(runs done, runs)`` after each run).

    Each broken run is named once; ledger-wide findings have ``run`` None. A file SQLite
    cannot read is LedgerError ``ledger.corrupt``, never an exception from below.
    """
    if ledger.backend != "sqlite":
        return _verify_other(ledger, run)
    c = ledger.connection
    try:
        with lenient(c):
            if run is not None:
                return _one_run(ledger, c, run)
            names = _names(c)
            total, breaks = check_runs(c, names, on_progress)
            head_breaks, head = _check_head(ledger, c)
            breaks += head_breaks + _check_file(c, ledger.schema)
    except (sqlite3.Error, UnicodeDecodeError) as exc:
        raise sqlite_error(ledger.path, exc) from None
    except RecursionError:  # a body nested beyond what json can read
        raise corrupt(ledger.path, "an event body is nested too deeply to read") from None
    return Report(len(names), total, [b.printable() for b in breaks], head if not breaks else None)


def _names(c: Any) -> list[str]:
    return [r[0] for r in c.execute(
        "SELECT run FROM runs UNION SELECT run FROM events UNION SELECT run FROM nodes"
        " UNION SELECT run FROM edges ORDER BY 1"
    ).fetchall()]  # fmt: skip


def _one_run(ledger: LedgerBackend, c: Any, run: str) -> Report:
    if not c.execute("SELECT 1 FROM runs WHERE run = ? UNION SELECT 1 FROM events WHERE run = ?",
                     (run, run)).fetchone():  # fmt: skip
        raise LedgerError("ledger.unknown_run", f"no run {run!r} in {ledger.path}")
    total, breaks = check_runs(c, [run])
    return Report(1, total, breaks)


def _verify_other(ledger: Any, run: str | None) -> Report:
    """The same checks on a database server (PostgreSQL): in one read-only snapshot; the storage
    check is the backend's (its guards), in place of SQLite's schema and integrity check."""
    try:
        with ledger.snapshot() as c:
            if run is not None:
                return _one_run(ledger, c, run)
            names = _names(c)
            total, breaks = check_runs(c, names)
            head_breaks, head = _check_head(ledger, c)
            breaks += head_breaks + ledger.check_storage()
    except ledger._errors as exc:
        raise ledger._error(exc) from None
    except RecursionError:
        raise corrupt(ledger.path, "an event body is nested too deeply to read") from None
    return Report(len(names), total, [b.printable() for b in breaks], head if not breaks else None)
