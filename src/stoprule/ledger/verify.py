"""``log verify``: recompute each run's hash chain and check every table against it.

For each run, events are read in ``seq`` order and each must: follow the previous one
(``seq`` contiguous, ``prev`` = the previous hash), hash to its stored ``hash`` (its body
was not altered), agree with its columns, and have its node, edge and fact stored exactly
as the body says. Then the run's status row must point at the last event, and no node or
edge may exist without an event. The first failure of a run is its broken link.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any, NamedTuple

from .errors import LedgerError
from .events import EVENT_TYPE, GENESIS, digest, link
from .store import Ledger, sqlite_error

__all__ = ["Break", "Report", "verify"]


class Break(NamedTuple):
    """The first broken link of a run: the event (``seq``) and node where it is, and what is wrong."""

    run: str
    seq: int
    node: str | None
    problem: str

    def format(self) -> str:
        where = f"event {self.seq}" + (f" (node {self.node})" if self.node else "")
        return f"run {self.run!r}: first broken link at {where}: {self.problem}"

    def to_dict(self) -> dict[str, Any]:
        return self._asdict()


class Report(NamedTuple):
    runs: int
    events: int
    breaks: list[Break]

    @property
    def ok(self) -> bool:
        return not self.breaks

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "runs": self.runs, "events": self.events, "breaks": [b.to_dict() for b in self.breaks]}


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


def _check_event(run: str, expect_seq: int, prev_hash: str, row: tuple) -> tuple[str | None, dict[str, Any] | None]:
    """What is wrong with one event and its node, edge and fact (None if nothing), and its parsed body."""
    (eid, seq, etype, enode, text, prev, h, nnode, nseq, kind, retryable, attempt, retry_of, ok, verdict, reason,
     fact, nevent, gchild, gparent, gkind, fdigest, fbody) = row  # fmt: skip
    if seq != expect_seq:
        return f"event {expect_seq} is missing (the chain jumps to event {seq})", None
    if prev != prev_hash:
        return "its prev hash is not the hash of the event before it (an event was removed, reordered or altered)", None
    if link(prev, text) != h:
        return f"its content was altered (the body no longer hashes to {h})", None
    try:
        body = json.loads(text)
    except ValueError:
        return "its body is not JSON", None
    if etype != EVENT_TYPE or (body.get("type"), body.get("run"), body.get("seq"), body.get("node")) != (
        etype,
        run,
        seq,
        enode,
    ):
        return "its columns (type, run, seq, node) differ from its hashed body", None
    v = body.get("verdict") or {}
    want_node = (enode, seq, body.get("kind"), body.get("retryable"), body.get("attempt"), body.get("retry_of"),
                 v.get("ok"), v.get("verdict"), v.get("reason"), body.get("fact"), eid)  # fmt: skip
    if nnode is None:
        return f"node {enode} of this event is missing", body
    have_node = (nnode, nseq, kind, bool(retryable), attempt, retry_of, bool(ok), verdict, reason, fact, nevent)
    if have_node != want_node:
        return f"node {enode} differs from the event that recorded it", body
    parent = body.get("parent")
    want_edge = "root" if parent is None else ("retry" if body.get("retry_of") is not None else "next")
    if gchild is None:
        return f"the edge into node {enode} is missing", body
    if (gparent, gkind) != (parent, want_edge):
        return f"the edge into node {enode} differs from the event (parent {gparent!r}, kind {gkind})", body
    if fdigest is None:
        return f"fact {body.get('fact')} of node {enode} is missing", body
    if digest(fbody) != fdigest:
        return f"the stored fact {fdigest} of node {enode} was altered", body
    return None, body


def _check_run(c: sqlite3.Connection, run: str) -> tuple[int, Break | None]:
    seq, prev, last = 0, GENESIS, None
    blocked = 0
    for row in c.execute(_EVENTS, (run,)):
        problem, body = _check_event(run, seq + 1, prev, row)
        if problem is not None:
            gap = row[1] != seq + 1
            return seq, Break(run, seq + 1, None if gap else row[3], problem)
        assert body is not None
        seq, prev, last = row[1], row[6], body
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
    st = c.execute(
        "SELECT events, head, tip, tip_kind, retryable, attempt, verdict, reason, blocked FROM runs WHERE run = ?",
        (run,),
    ).fetchone()
    if last is None:
        return 0, Break(run, 1, None, "the run has a status row but no events")
    want = (seq, prev, last["node"], last["kind"], last["retryable"], last["attempt"], last["verdict"]["verdict"],
            last["verdict"]["reason"], blocked)  # fmt: skip
    if st is None:
        return seq, Break(run, seq, last["node"], "the run's status row is missing")
    have = (st[0], st[1], st[2], st[3], bool(st[4]), *st[5:])
    if have != want:
        return seq, Break(run, seq, last["node"], "the run's status row does not match the end of its chain")
    return seq, None


def verify(ledger: Ledger, run: str | None = None) -> Report:
    """Check one run (LedgerError if unknown) or every run; each broken run is named once."""
    c = ledger.connection
    try:
        if run is not None:
            if not c.execute("SELECT 1 FROM runs WHERE run = ? UNION SELECT 1 FROM events WHERE run = ?",
                             (run, run)).fetchone():  # fmt: skip
                raise LedgerError("ledger.unknown_run", f"no run {run!r} in {ledger.path}")
            names = [run]
        else:
            names = [r[0] for r in c.execute("SELECT run FROM runs UNION SELECT run FROM events ORDER BY 1")]
        breaks, total = [], 0
        for name in names:
            n, br = _check_run(c, name)
            total += n
            if br is not None:
                breaks.append(br)
    except sqlite3.Error as exc:
        raise sqlite_error(ledger.path, exc) from None
    return Report(len(names), total, breaks)
