"""One run's hash chain checked against every table (used by ``verify`` and by the schema upgrade).

For each run, events are read in ``seq`` order and each must: follow the previous one
(``seq`` contiguous, ids increasing, ``prev`` = the previous hash), hash to its stored
``hash`` (its body was not altered), agree with its columns, and have its node, edge and fact
stored exactly as the body says. Then the run's status row must equal, column by column, the
status recomputed from its chain, and no node or edge may exist without an event. The first
failure of a run is its broken link. Text that is not UTF-8 is read byte for byte
(``surrogateescape``): an altered byte shows as a hash that does not match, never as an error.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from stoprule._util.records import Record, record
from stoprule.ledger.events import EVENT_TYPE, GENESIS, digest, link, well_formed

__all__ = ["Break", "check_runs", "lenient", "shown"]

_UNDECODED = re.compile("[\udc80-\udcff]")


def shown(value: Any) -> Any:
    """A string read with ``surrogateescape``, printable: each byte that was not UTF-8 as ``\\xNN``."""
    if isinstance(value, str) and _UNDECODED.search(value):
        return value.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return value


@record
class Break(Record):
    """What is broken: a run's first broken link (the event ``seq`` and node where it is), or,
    with ``run`` None, the ledger as a whole (its head, its file, rows that belong to no run)."""

    run: str | None
    seq: int
    node: str | None
    problem: str

    def printable(self) -> Break:
        """The same break with any byte that was not UTF-8 written as ``\\xNN`` (safe to print)."""
        return self._replace(run=shown(self.run), node=shown(self.node), problem=shown(self.problem))

    def format(self) -> str:
        if self.run is None:
            return f"ledger: {self.problem}"
        where = f"event {self.seq}" + (f" (node {self.node})" if self.node else "")
        return f"run {self.run!r}: first broken link at {where}: {self.problem}"

    def to_dict(self) -> dict[str, Any]:
        return self._asdict()


def _lenient_text(raw: bytes) -> str:
    """Text as stored; bytes that are not UTF-8 kept (as surrogates) so they hash as they are."""
    return raw.decode("utf-8", "surrogateescape")


@contextmanager
def lenient(c: sqlite3.Connection) -> Iterator[None]:
    """Read damaged text without failing: an altered byte then shows as a hash that does not match."""
    before = c.text_factory
    c.text_factory = _lenient_text
    try:
        yield
    finally:
        c.text_factory = before


_EVENTS = """
SELECT e.id, e.seq, e.type, e.node, e.body, e.prev, e.hash,
       n.node, n.seq, n.kind, n.retryable, n.attempt, n.retry_of, n.ok, n.verdict, n.reason, n.fact, n.event,
       g.child, g.parent, g.kind, f.digest, f.body
FROM events e
LEFT JOIN nodes n ON n.run = e.run AND n.node = e.node
LEFT JOIN edges g ON g.run = e.run AND g.child = e.node
LEFT JOIN facts f ON f.digest = n.fact
WHERE e.run = ? ORDER BY e.seq
"""
_STATUS_COLUMNS = ("events", "head", "tip", "tip_kind", "retryable", "attempt", "ok", "verdict", "reason", "blocked",
                   "created", "updated", "last_event")  # fmt: skip


def _int(flag: Any) -> Any:
    """A JSON boolean as SQLite stores it (1 or 0)."""
    return int(flag) if isinstance(flag, bool) else flag


def _same(have: tuple, want: tuple) -> bool:
    """Equal values of the same types: a value of another type (1.0 or '1' for 1) is a change too,
    though Python and SQLite compare them equal."""
    return all(h == w and type(h) is type(w) for h, w in zip(have, want, strict=True))


def _check_event(
    run: str, expect_seq: int, prev_hash: str, last_id: int, row: tuple
) -> tuple[str | None, dict[str, Any] | None]:
    """What is wrong with one event and its node, edge and fact (None if nothing), and its parsed body."""
    (eid, seq, etype, enode, text, prev, h, nnode, nseq, kind, retryable, attempt, retry_of, ok, verdict, reason,
     fact, nevent, gchild, gparent, gkind, fdigest, fbody) = row  # fmt: skip
    if type(seq) is not int or seq != expect_seq:
        return f"event {expect_seq} is missing (the chain jumps to event {seq})", None
    if type(eid) is not int or eid <= last_id:
        return f"its id {eid} does not come after the previous event's id {last_id} (ids renumbered or reordered)", None
    if prev != prev_hash:
        return "its prev hash is not the hash of the event before it (an event was removed, reordered or altered)", None
    if not isinstance(text, str) or not isinstance(prev, str) or link(prev, text) != h:
        return f"its content was altered (the body no longer hashes to {h})", None
    try:
        body = json.loads(text)
    except ValueError:
        return "its body is not JSON", None
    if not well_formed(body):
        return "its body is not a well-formed validation_performed event", None
    if etype != EVENT_TYPE or (body.get("type"), body.get("run"), body.get("seq"), body.get("node")) != (
        etype,
        run,
        seq,
        enode,
    ):
        return "its columns (type, run, seq, node) differ from its hashed body", None
    v = body["verdict"]
    want_node = (enode, seq, body.get("kind"), _int(body.get("retryable")), body.get("attempt"), body.get("retry_of"),
                 _int(v.get("ok")), v.get("verdict"), v.get("reason"), body.get("fact"), eid)  # fmt: skip
    if nnode is None:
        return f"node {enode} of this event is missing", body
    have_node = (nnode, nseq, kind, retryable, attempt, retry_of, ok, verdict, reason, fact, nevent)
    if not _same(have_node, want_node):
        return f"node {enode} differs from the event that recorded it", body
    parent = body.get("parent")
    want_edge = "root" if parent is None else ("retry" if body.get("retry_of") is not None else "next")
    if gchild is None:
        return f"the edge into node {enode} is missing", body
    if (gparent, gkind) != (parent, want_edge):
        return f"the edge into node {enode} differs from the event (parent {gparent!r}, kind {gkind})", body
    if fdigest is None:
        return f"fact {body.get('fact')} of node {enode} is missing", body
    if not isinstance(fbody, str) or digest(fbody) != fdigest:
        return f"the stored fact {fdigest} of node {enode} was altered", body
    return None, body


def _check_run(c: sqlite3.Connection, run: str) -> tuple[int, Break | None]:
    seq, prev, last_id = 0, GENESIS, 0
    first: dict[str, Any] | None = None
    last: dict[str, Any] | None = None
    blocked = 0
    for row in c.execute(_EVENTS, (run,)).fetchall():
        problem, body = _check_event(run, seq + 1, prev, last_id, row)
        if problem is not None:
            gap = row[1] != seq + 1
            return seq, Break(run, seq + 1, None if gap else row[3], problem)
        assert body is not None
        seq, prev, last_id, last = row[1], row[6], row[0], body
        first = first or body
        blocked += body["kind"] == "blocked_attempt"
    for table, col in (("nodes", "node"), ("edges", "child")):
        if c.execute(f"SELECT count(*) FROM {table} WHERE run = ?", (run,)).fetchone()[0] == seq:
            continue  # every event has its own row here (checked above), so there are no extra rows
        extra = c.execute(
            f"SELECT {col} FROM {table} t WHERE run = ? AND NOT EXISTS "
            f"(SELECT 1 FROM events e WHERE e.run = t.run AND e.node = t.{col}) LIMIT 1",
            (run,),
        ).fetchone()
        if extra:
            return seq, Break(run, seq + 1, extra[0], f"{table} holds {extra[0]}, which no event recorded")
    st = c.execute(f"SELECT {', '.join(_STATUS_COLUMNS)} FROM runs WHERE run = ?", (run,)).fetchone()
    if last is None or first is None:
        what = "a status row" if st is not None else "rows"
        return 0, Break(run, 1, None, f"the run has {what} but no events")
    if st is None:
        return seq, Break(run, seq, last["node"], "the run's status row is missing")
    v = last["verdict"]
    want = (seq, prev, last["node"], last["kind"], int(last["retryable"]), last["attempt"], int(v["ok"]),
            v["verdict"], v["reason"], blocked, first["at"], last["at"], last_id)  # fmt: skip
    # exact: a value of another type (text '1' for 1) is a change too, though SQLite would compare it equal
    wrong = [name for name, have, w in zip(_STATUS_COLUMNS, st, want, strict=True) if not _same((have,), (w,))]
    if wrong:
        return seq, Break(
            run, seq, last["node"], f"the run's status row does not match the end of its chain ({', '.join(wrong)})"
        )
    return seq, None


def _check_run_safely(c: sqlite3.Connection, run: str) -> tuple[int, Break | None]:
    try:
        return _check_run(c, run)
    except (TypeError, ValueError, KeyError, AttributeError, IndexError) as exc:  # a value of a type no writer stores
        return 0, Break(run, 1, None, f"a row of this run holds a value no writer stores ({type(exc).__name__}: {exc})")


def check_runs(
    c: sqlite3.Connection, names: list[str] | None = None, on_progress: Callable[[int, int], None] | None = None
) -> tuple[int, list[Break]]:
    """``(events, breaks)`` over the runs ``names`` (default: every run any table mentions);
    ``on_progress(runs done, runs)`` after each run."""
    with lenient(c):
        if names is None:
            names = [r[0] for r in c.execute(
                "SELECT run FROM runs UNION SELECT run FROM events UNION SELECT run FROM nodes"
                " UNION SELECT run FROM edges ORDER BY 1"
            ).fetchall()]  # fmt: skip
        total, breaks = 0, []
        for done, name in enumerate(names, 1):
            n, br = _check_run_safely(c, name)
            total += n
            if br is not None:
                breaks.append(br.printable())
            if on_progress is not None:
                on_progress(done, len(names))
    return total, breaks
