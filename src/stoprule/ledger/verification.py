"""``log verify``: recompute each run's hash chain, the ledger chain of anchors and its signed head,
and check every table against them.

For each run, events are read in ``seq`` order and each must: follow the previous one
(``seq`` contiguous, ids increasing, ``prev`` = the previous hash), hash to its stored
``hash`` (its body was not altered), agree with its columns, and have its node, edge and fact
stored exactly as the body says. Then the run's status row must equal, column by column, the
status recomputed from its chain, and its signature (HMAC with the key file) must verify; no
node or edge may exist without an event. The first failure of a run is its broken link.

For the whole ledger (``verify`` without a run): anchors must run 1..N, each linked to the one
before and hashing to its stored hash; the last one's hash must be the stored head, which must
cover exactly N anchors and carry a valid HMAC. Every run state an anchor recorded (event count,
head hash, last event id) must still be in the ledger: a run deleted from every table, events
deleted from a run's end, renumbered or reordered event ids, or a head rewritten without the key
are found here. Runs written since their last anchor (on PostgreSQL, within the anchor interval)
are counted in the report. Facts that no decision refers to, a schema other than the one
stoprule creates (a guard trigger removed, a table altered, a trigger added) and damage SQLite's
own integrity check sees are findings too. A file SQLite cannot read at all is a
``ledger.corrupt`` error.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from stoprule import codes
from stoprule.ledger import keys
from stoprule.ledger.ddl import SCHEMA_VERSION, STATEMENTS
from stoprule.ledger.errors import LedgerError
from stoprule.ledger.events import GENESIS, link
from stoprule.ledger.protocols import LedgerBackend
from stoprule.ledger.runcheck import Anchored, Break, check_head_v2, check_mac, check_runs, lenient
from stoprule.ledger.store import corrupt, sqlite_error

__all__ = ["Break", "Report", "check_runs", "verify"]


def _expected_schema() -> dict[str, tuple[str, str]]:
    """``{name: (type, sql)}`` as SQLite stores our DDL in ``sqlite_master`` (made in memory)."""
    c = sqlite3.connect(":memory:")
    try:
        for statement in STATEMENTS:
            c.execute(statement)
        return {
            n: (t, sql)
            for t, n, sql in c.execute("SELECT type, name, sql FROM sqlite_master")
            if not n.startswith("sqlite_autoindex_")
        }
    finally:
        c.close()


_SCHEMA: dict[str, tuple[str, str]] = {}


@dataclass(frozen=True)
class Report:
    runs: int
    events: int
    breaks: list[Break]
    head: dict[str, Any] | None = None  # the verified ledger head (whole-ledger verify)
    unanchored: int = 0  # runs written since their last anchor (whole-ledger verify)

    @property
    def ok(self) -> bool:
        return not self.breaks

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "runs": self.runs,
            "events": self.events,
            "breaks": [b.to_dict() for b in self.breaks],
            "head": self.head,
            "unanchored": self.unanchored,
        }


def _signed(ring: keys.KeyRing, keys_path: str) -> Any:
    """The status-row signature check for ``check_runs``."""

    def check(run: str, events: Any, head: Any, kid: Any, mac: Any) -> str | None:
        found = check_mac(
            kid,
            mac,
            ring,
            keys_path,
            lambda secret: keys.run_mac(secret, run, events, head),
            "the run's status row",
            False,
        )
        return found[0].problem if found else None

    return check


def _anchors(c: Any) -> tuple[list[Break], Anchored, int, str, int]:
    """The ledger chain of anchors: ``(breaks, every run state recorded, anchors, last hash, the
    first anchor that does not chain (0: none))``."""
    breaks: list[Break] = []
    states: Anchored = {}
    n, prev = 0, GENESIS
    for aid, text, aprev, h in c.execute("SELECT id, body, prev, hash FROM anchors ORDER BY id"):
        if type(aid) is not int or aid != n + 1:
            what = (
                f"anchor(s) {n + 1}..{aid - 1} are missing"
                if type(aid) is int and aid > n + 1
                else (f"anchor id {aid!r} does not follow anchor {n}")
            )
            return [Break(None, n + 1, None, f"{what}: the ledger chain was cut")], states, n, prev, n + 1
        if aprev != prev or not isinstance(text, str) or link(prev, text) != h:
            return (
                [
                    Break(
                        None,
                        aid,
                        None,
                        (
                            f"anchor {aid} was altered, removed or reordered (it no longer chains to the anchor "
                            "before it)"
                        ),
                    )
                ],
                states,
                n,
                prev,
                aid,
            )
        try:
            body = json.loads(text)
            assert body["anchor"] == aid
            for run, events, head, last in body["runs"]:
                states.setdefault(run, []).append((events, head, last, aid))
        except (ValueError, KeyError, TypeError, AssertionError):
            return [Break(None, aid, None, f"anchor {aid}'s body is not a well-formed anchor")], states, aid, h, aid
        n, prev = aid, h
    return breaks, states, n, prev, 0


def _check_head(ledger: LedgerBackend, c: Any, anchors: int, last: str) -> tuple[list[Break], dict[str, Any] | None]:
    """The stored head against the anchors: it must cover them all, end at the last one, and be signed."""
    rows = c.execute("SELECT anchors, hash, key, mac FROM head").fetchall()
    if len(rows) == 1 and not c.execute("SELECT 1 FROM head WHERE id = 1").fetchone():
        return [Break(None, 0, None, "the ledger head's row id is not 1 (writers would not find it)")], None
    if len(rows) != 1:
        return [Break(None, 0, None, f"the ledger head is missing (the head table holds {len(rows)} rows)")], None
    count, head, kid, mac = rows[0]
    info = {"anchors": count, "hash": head, "key": kid}
    breaks: list[Break] = []
    if type(count) is not int or count != anchors:
        if type(count) is int and count > anchors:
            what = f"anchors {anchors + 1}..{count} were deleted"
        else:
            what = "anchors were added without the head, or the head was replaced"
        breaks.append(
            Break(
                None, anchors, None, f"the ledger head covers {count!r} anchor(s), the ledger holds {anchors}: {what}"
            )
        )
    elif head != last:
        breaks.append(Break(None, anchors, None, "the anchors no longer chain to the ledger head: they were replaced"))
    try:
        ring = keys.load(ledger.keys_path)
    except LedgerError as exc:
        breaks.append(Break(None, 0, None, f"the ledger head's signature cannot be checked: {exc.message}"))
        return breaks, info
    breaks += check_mac(
        kid,
        mac,
        ring,
        ledger.keys_path,
        lambda secret: keys.head_mac(secret, count, head),
        "the ledger head",
        count == 0 and head == GENESIS,
    )
    return breaks, info


def _whole(ledger: LedgerBackend, c: Any, on_progress: Callable[[int, int], None] | None) -> Report:
    """Every run, the anchors and the head (the storage check is the caller's)."""
    names = _names(c)
    if ledger.schema < SCHEMA_VERSION:
        total, breaks = check_runs(c, names, on_progress)
        if ledger.schema == 1:
            breaks.append(
                Break(
                    None,
                    0,
                    None,
                    (
                        "this is a schema-1 ledger: it has no signed ledger head, so a run deleted from every table "
                        "could not be detected; `stoprule log upgrade` adds one (after checking every run)"
                    ),
                )
            )
            return Report(len(names), total, [b.printable() for b in breaks])
        try:  # schema 2: its one chain over every event, as it was written (the first write upgrades it)
            head_breaks, head = check_head_v2(c, keys.load(ledger.keys_path), ledger.keys_path)
        except LedgerError as exc:
            head_breaks = [Break(None, 0, None, f"the ledger head's signature cannot be checked: {exc.message}")]
            head = None
        return Report(len(names), total, [b.printable() for b in breaks + head_breaks], head)
    ring = _ring(ledger)
    anchor_breaks, states, count, last, cut = _anchors(c)
    signed = _signed(ring, ledger.keys_path) if ring is not None else None
    total, breaks = check_runs(c, names, on_progress, signed=signed, anchored=states)
    present = set(names)
    for run in sorted(set(states) - present):
        events, _, _, aid = max(states[run], key=lambda s: s[3])
        breaks.append(
            Break(
                run,
                0,
                None,
                (f"the run is gone: anchor {aid} recorded {events} event(s) of it (a run removed from every table)"),
            ).printable()
        )
    head_breaks, head = _check_head(ledger, c, count, last) if not cut else ([], None)
    anchored = {run: max(s[0] for s in st) for run, st in states.items()}
    unanchored = sum(1 for run, events in c.execute("SELECT run, events FROM runs") if anchored.get(run) != events)
    breaks += anchor_breaks + head_breaks
    if head is not None:
        head["events"] = total
    return Report(len(names), total, [b.printable() for b in breaks], head, unanchored)


def _ring(ledger: LedgerBackend) -> keys.KeyRing | None:
    try:
        return keys.load(ledger.keys_path)
    except LedgerError:
        return None


def _check_file(c: sqlite3.Connection, schema: int) -> list[Break]:
    """Rows that belong to no decision, a schema that is not the one stoprule creates (guards
    removed, a table altered, a trigger added), and damage SQLite itself can see."""
    breaks: list[Break] = []
    orphan = c.execute("SELECT digest FROM facts EXCEPT SELECT fact FROM nodes LIMIT 1").fetchone()
    if orphan:
        breaks.append(Break(None, 0, None, f"facts holds {orphan[0]}, which no decision refers to"))
    if schema < SCHEMA_VERSION:
        return breaks  # an older schema: `log upgrade` first (its runs and head are checked above)
    if not _SCHEMA:
        _SCHEMA.update(_expected_schema())
    want = _SCHEMA
    have = {
        n: (t, sql)
        for t, n, sql in c.execute("SELECT type, name, sql FROM sqlite_master")
        if not (isinstance(n, str) and n.startswith("sqlite_autoindex_"))
    }
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
            report = _whole(ledger, c, on_progress)
            extra = _check_file(c, ledger.schema)
    except (sqlite3.Error, UnicodeDecodeError) as exc:
        raise sqlite_error(ledger.path, exc) from None
    except RecursionError:  # a body nested beyond what json can read
        raise corrupt(ledger.path, "an event body is nested too deeply to read") from None
    return _with(report, extra)


def _with(report: Report, extra: list[Break]) -> Report:
    """The report with the storage findings; its head only when nothing at all is broken."""
    breaks = report.breaks + [b.printable() for b in extra]
    return replace(report, breaks=breaks, head=report.head if not breaks else None)


def _names(c: Any) -> list[str]:
    return [
        r[0]
        for r in c.execute(
            "SELECT run FROM runs UNION SELECT run FROM events UNION SELECT run FROM nodes"
            " UNION SELECT run FROM edges ORDER BY 1"
        ).fetchall()
    ]


def _one_run(ledger: LedgerBackend, c: Any, run: str) -> Report:
    if not c.execute(
        "SELECT 1 FROM runs WHERE run = ? UNION SELECT 1 FROM events WHERE run = ?", (run, run)
    ).fetchone():
        raise LedgerError(codes.LEDGER_UNKNOWN_RUN, f"no run {run!r} in {ledger.path}")
    signed = None
    if ledger.schema >= SCHEMA_VERSION:
        ring = _ring(ledger)
        signed = _signed(ring, ledger.keys_path) if ring is not None else None
    total, breaks = check_runs(c, [run], signed=signed)
    return Report(1, total, breaks)


def _verify_other(ledger: Any, run: str | None) -> Report:
    """The same checks on a database server (PostgreSQL): in one read-only snapshot; the storage
    check is the backend's (its guards), in place of SQLite's schema and integrity check."""
    try:
        with ledger.snapshot() as c:
            if run is not None:
                return _one_run(ledger, c, run)
            report = _whole(ledger, c, None)
            extra = ledger.check_storage()
    except ledger._errors as exc:
        raise ledger._error(exc) from None
    except RecursionError:
        raise corrupt(ledger.path, "an event body is nested too deeply to read") from None
    return _with(report, extra)
