"""One run's hash chain checked against every table (used by ``verify`` and by the schema upgrade).

For each run, events are read in ``seq`` order and each must: follow the previous one
(``seq`` contiguous, ids increasing, ``prev`` = the previous hash), hash to its stored
``hash`` (its body was not altered), agree with its columns, and have its node, edge and fact
stored exactly as the body says. Every state of the run an anchor recorded (event count, head
hash, last event id) must still be there. Then the run's status row must equal, column by
column, the status recomputed from its chain, and carry a valid signature; no node or edge may
exist without an event. The first failure of a run is its broken link. Text that is not UTF-8
is read byte for byte (``surrogateescape``): an altered byte shows as a hash that does not
match, never as an error.

Also here: the schema-2 ledger head (one chain over every event), checked before such a ledger
is upgraded and by ``log verify`` on one opened read-only.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from typing import Any

from stoprule.ledger import keys
from stoprule.ledger.events import EVENT_TYPE, GENESIS, digest, head_link, link, well_formed
from stoprule.ledger.sha import compare_digest

__all__ = ["Anchored", "Break", "Signed", "check_head_v2", "check_runs", "lenient", "shown"]

# a run's states as anchors recorded them: run -> [(events, head hash, last event id, anchor id)]
Anchored = dict[str, list[tuple[int, str, int, int]]]
# what is wrong with a run's status row signature ``(run, events, head, key, mac)``, or None
Signed = Callable[[str, Any, Any, Any, Any], "str | None"]

_UNDECODED = re.compile("[\udc80-\udcff]")


def shown(value: Any) -> Any:
    """A string read with ``surrogateescape``, printable: each byte that was not UTF-8 as ``\\xNN``."""
    if isinstance(value, str) and _UNDECODED.search(value):
        return value.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return value


@dataclass(frozen=True)
class Break:
    """What is broken: a run's first broken link (the event ``seq`` and node where it is), or,
    with ``run`` None, the ledger as a whole (its head, its file, rows that belong to no run)."""

    run: str | None
    seq: int
    node: str | None
    problem: str

    def printable(self) -> Break:
        """The same break with any byte that was not UTF-8 written as ``\\xNN`` (safe to print)."""
        return replace(self, run=shown(self.run), node=shown(self.node), problem=shown(self.problem))

    def format(self) -> str:
        if self.run is None:
            return f"ledger: {self.problem}"
        if self.seq == 0:
            return f"run {self.run!r}: {self.problem}"
        where = f"event {self.seq}" + (f" (node {self.node})" if self.node else "")
        return f"run {self.run!r}: first broken link at {where}: {self.problem}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


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


def _same(have: tuple[Any, ...], want: tuple[Any, ...]) -> bool:
    """Equal values of the same types: a value of another type (1.0 or '1' for 1) is a change too,
    though Python and SQLite compare them equal."""
    return all(h == w and type(h) is type(w) for h, w in zip(have, want, strict=True))


def _check_event(
    run: str, expect_seq: int, prev_hash: str, last_id: int, row: tuple[Any, ...]
) -> tuple[str | None, dict[str, Any] | None]:
    """What is wrong with one event and its node, edge and fact (None if nothing), and its parsed body."""
    (
        eid,
        seq,
        etype,
        enode,
        text,
        prev,
        h,
        nnode,
        nseq,
        kind,
        retryable,
        attempt,
        retry_of,
        ok,
        verdict,
        reason,
        fact,
        nevent,
        gchild,
        gparent,
        gkind,
        fdigest,
        fbody,
    ) = row
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


def _check_anchored(
    run: str, chain: list[tuple[int, str, str]], states: list[tuple[int, str, int, int]]
) -> Break | None:
    """The first state of ``run`` an anchor recorded that its chain (``(id, hash, node)`` by seq) no longer holds."""
    for events, head, last, anchor in sorted(states, key=lambda s: (s[3], s[0])):
        if type(events) is not int or events < 1:
            return Break(run, 0, None, f"anchor {anchor} records {events!r} event(s) of this run, which no writer does")
        if events > len(chain):
            return Break(
                run,
                len(chain) + 1,
                None,
                (f"anchor {anchor} recorded {events} event(s) of this run, it holds {len(chain)}: events were deleted"),
            )
        eid, h, node = chain[events - 1]
        if h != head:
            return Break(run, events, node, f"it is not the event anchor {anchor} recorded (the run was rewritten)")
        if eid != last:
            return Break(
                run,
                events,
                node,
                (f"its id {eid} is not the id {last!r} anchor {anchor} recorded (ids renumbered or reordered)"),
            )
    return None


def _check_run(
    c: sqlite3.Connection, run: str, signed: Signed | None = None, anchored: Anchored | None = None
) -> tuple[int, Break | None]:
    seq, prev, last_id = 0, GENESIS, 0
    first: dict[str, Any] | None = None
    last: dict[str, Any] | None = None
    blocked = 0
    chain: list[tuple[int, str, str]] = []
    for row in c.execute(_EVENTS, (run,)).fetchall():
        problem, body = _check_event(run, seq + 1, prev, last_id, row)
        if problem is not None:
            gap = row[1] != seq + 1
            return seq, Break(run, seq + 1, None if gap else row[3], problem)
        assert body is not None
        seq, prev, last_id, last = row[1], row[6], row[0], body
        first = first or body
        blocked += body["kind"] == "blocked_attempt"
        chain.append((row[0], row[6], row[3]))
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
    if anchored and run in anchored:
        broken = _check_anchored(run, chain, anchored[run])
        if broken is not None:
            return seq, broken
    columns = ", ".join(_STATUS_COLUMNS + (("key", "mac") if signed else ()))
    st = c.execute(f"SELECT {columns} FROM runs WHERE run = ?", (run,)).fetchone()
    if last is None or first is None:
        what = "a status row" if st is not None else "rows"
        return 0, Break(run, 1, None, f"the run has {what} but no events")
    if st is None:
        return seq, Break(run, seq, last["node"], "the run's status row is missing")
    v = last["verdict"]
    want = (seq, prev, last["node"], last["kind"], int(last["retryable"]), last["attempt"], int(v["ok"]),
            v["verdict"], v["reason"], blocked, first["at"], last["at"], last_id)  # fmt: skip
    # exact: a value of another type (text '1' for 1) is a change too, though SQLite would compare it equal
    have = st[: len(_STATUS_COLUMNS)]
    wrong = [name for name, h, w in zip(_STATUS_COLUMNS, have, want, strict=True) if not _same((h,), (w,))]
    if wrong:
        return seq, Break(
            run, seq, last["node"], f"the run's status row does not match the end of its chain ({', '.join(wrong)})"
        )
    if signed is not None:
        problem = signed(run, seq, prev, st[-2], st[-1])
        if problem is not None:
            return seq, Break(run, seq, last["node"], problem)
    return seq, None


def _check_run_safely(
    c: sqlite3.Connection, run: str, signed: Signed | None, anchored: Anchored | None
) -> tuple[int, Break | None]:
    try:
        return _check_run(c, run, signed, anchored)
    except (TypeError, ValueError, KeyError, AttributeError, IndexError) as exc:  # a value of a type no writer stores
        return 0, Break(run, 1, None, f"a row of this run holds a value no writer stores ({type(exc).__name__}: {exc})")


def check_runs(
    c: sqlite3.Connection,
    names: list[str] | None = None,
    on_progress: Callable[[int, int], None] | None = None,
    *,
    signed: Signed | None = None,
    anchored: Anchored | None = None,
) -> tuple[int, list[Break]]:
    """``(events, breaks)`` over the runs ``names`` (default: every run any table mentions);
    ``on_progress(runs done, runs)`` after each run. With ``signed``, each status row's signature
    is checked too; with ``anchored``, every state of a run an anchor recorded."""
    with lenient(c):
        if names is None:
            names = [
                r[0]
                for r in c.execute(
                    "SELECT run FROM runs UNION SELECT run FROM events UNION SELECT run FROM nodes"
                    " UNION SELECT run FROM edges ORDER BY 1"
                ).fetchall()
            ]
        total, breaks = 0, []
        for done, name in enumerate(names, 1):
            n, br = _check_run_safely(c, name, signed, anchored)
            total += n
            if br is not None:
                breaks.append(br.printable())
            if on_progress is not None:
                on_progress(done, len(names))
    return total, breaks


def check_head_v2(c: Any, ring: keys.KeyRing, keys_path: str) -> tuple[list[Break], dict[str, Any] | None]:
    """A schema-2 ledger's head: the chain over every event in id order (ids 1..N without a gap)
    against the signed head. ``(breaks, {"events", "hash", "key"})``."""
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
        more = f" and {len(missing) - 10} more" if len(missing) > 10 else ""
        shown_ids = ", ".join(str(i) for i in missing[:10]) + more
        breaks.append(
            Break(
                None,
                missing[0],
                None,
                (
                    f"event id(s) {shown_ids} are missing: events were deleted (a run removed from every table "
                    "leaves exactly this gap)"
                ),
            )
        )
    elif type(events) is not int or events != n:
        breaks.append(
            Break(
                None,
                n,
                None,
                (
                    f"the ledger head covers {events!r} events but the last event is {n}: events were deleted, "
                    "or added without the head"
                ),
            )
        )
    elif chain != head:
        breaks.append(
            Break(
                None,
                n,
                None,
                ("the events no longer chain to the ledger head: events were reordered, renumbered or replaced"),
            )
        )
    breaks += check_mac(
        kid,
        mac,
        ring,
        keys_path,
        lambda secret: keys.head_mac(secret, events, head),
        "the ledger head",
        events == 0 and head == GENESIS,
    )
    return breaks, info


def check_mac(
    kid: Any, mac: Any, ring: keys.KeyRing, keys_path: str, expect: Callable[[bytes], str], what: str, empty: bool
) -> list[Break]:
    """The finding, if any, for a signature ``(kid, mac)`` of ``what`` (``empty``: unsigned is fine)."""
    if kid is None:
        return [] if empty else [Break(None, 0, None, f"{what} is not signed")]
    key = ring.keys.get(kid) if isinstance(kid, str) else None
    if key is None or key.secret is None:
        return [
            Break(
                None,
                0,
                None,
                (
                    f"{what} is signed with key {kid!r}, which {keys_path} does not hold: its signature cannot "
                    "be checked"
                ),
            )
        ]
    given = mac.encode("utf-8", "surrogateescape") if isinstance(mac, str) else None
    if given is None or not compare_digest(given, expect(key.secret).encode()):
        return [Break(None, 0, None, f"{what}'s signature does not verify: it was rewritten without the key")]
    return []
