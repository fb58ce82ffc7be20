"""Tampering with a ledger file: every change is a `log verify` finding or a clean refusal.

Each case alters a copy of one ledger the way someone with write access to the file would:
SQL on every table and column that matters (with the append-only triggers dropped for the edit
and put back afterwards, so the guards' absence does not give the edit away), renumbered and
reordered ids, a run removed from every table, a forged head, flipped bytes, truncation and a
damaged schema. Each must come out of ``verify`` (the library) and ``stoprule log verify`` (a
real process) as a finding naming what broke (exit 1) or a ``LedgerError`` (exit 2): never a
traceback, never "ok".
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from clirunner import invoke
from ledger_facts import CONTINUITY, ESCAPE, FIXED, OK, REVIEW
from stoprule import load_policy
from stoprule.ledger import Ledger, LedgerError, Recorder, verify
from stoprule.ledger.ddl import STATEMENTS
from stoprule.ledger.events import GENESIS, canonical, link
from torture import SCALE

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory, default_pack: Path) -> Path:
    """Runs r (a retry chain, a branch, a terminal block), s (one block), t (last appended: two steps)."""
    path = tmp_path_factory.mktemp("tamper") / "ledger.db"
    evaluator = load_policy(default_pack, cache=False)
    with Ledger.open(str(path)) as led:
        rec = Recorder(led, evaluator)
        rec.record("r", OK)
        tok = rec.record("r", CONTINUITY).token
        rec.retry("r", tok, FIXED)
        rec.record("r", OK, parent="n1", checkpoint=True)
        rec.record("r", REVIEW)
        rec.record("s", ESCAPE)
        rec.record("t", {**OK, "task_id": "t1"})
        rec.record("t", {**OK, "task_id": "t2"})
        led.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    with Ledger.open(str(path), readonly=True) as led:
        assert verify(led).ok
    return path


def copy(base: Path, dest: Path) -> Path:
    dest.mkdir(exist_ok=True)
    shutil.copy(base, dest / "ledger.db")
    shutil.copy(str(base) + ".keys", dest / "ledger.db.keys")
    return dest / "ledger.db"


def sql(*statements: str) -> Callable[[sqlite3.Connection], None]:
    def run(c: sqlite3.Connection) -> None:
        for s in statements:
            c.execute(s)

    return run


def rehash_event(run: str, seq: int, old: str, new: str) -> Callable[[sqlite3.Connection], None]:
    """Alter an event's body and recompute its own hash (the next link then no longer fits)."""

    def run_(c: sqlite3.Connection) -> None:
        body, prev = c.execute("SELECT body, prev FROM events WHERE run = ? AND seq = ?", (run, seq)).fetchone()
        body = body.replace(old, new, 1)
        c.execute("UPDATE events SET body = ?, hash = ? WHERE run = ? AND seq = ?", (body, link(prev, body), run, seq))

    return run_


def swap_ids(a: int, b: int) -> Callable[[sqlite3.Connection], None]:
    """Swap two events' ids and every reference to them: only the append order changes."""
    return sql(
        f"UPDATE events SET id = -1 WHERE id = {a}",
        f"UPDATE events SET id = {a} WHERE id = {b}",
        f"UPDATE events SET id = {b} WHERE id = -1",
        f"UPDATE nodes SET event = -1 WHERE event = {a}",
        f"UPDATE nodes SET event = {a} WHERE event = {b}",
        f"UPDATE nodes SET event = {b} WHERE event = -1",
        f"UPDATE runs SET last_event = CASE last_event WHEN {a} THEN {b} WHEN {b} THEN {a} ELSE last_event END",
    )


def drop_run(run: str, *, rewrite_head: bool = False) -> Callable[[sqlite3.Connection], None]:
    """Remove a run from every table (and, optionally, from the anchors, recomputing the unkeyed part
    of the ledger chain and head)."""

    def run_(c: sqlite3.Connection) -> None:
        for table in ("events", "nodes", "edges", "runs"):
            c.execute(f"DELETE FROM {table} WHERE run = ?", (run,))
        c.execute("DELETE FROM facts WHERE digest NOT IN (SELECT fact FROM nodes)")
        if rewrite_head:
            anchors = c.execute("SELECT body FROM anchors ORDER BY id").fetchall()
            c.execute("DELETE FROM anchors")
            prev, n = GENESIS, 0
            for (text,) in anchors:
                body = json.loads(text)
                body["runs"] = [r for r in body["runs"] if r[0] != run]
                if body["runs"]:
                    n += 1
                    body["anchor"] = n
                    new = canonical(body)
                    c.execute("INSERT INTO anchors VALUES (?, ?, ?, ?)", (n, new, prev, link(prev, new)))
                    prev = link(prev, new)
            c.execute("UPDATE head SET anchors = ?, hash = ?", (n, prev))

    return run_


def _without_the_key(path: str, *, anchor: bool) -> Ledger:
    """The ledger opened as by someone without the key file: its checks skipped, its signatures forged."""
    led = Ledger.open(path)
    led._checked_head = led.head  # type: ignore[method-assign]  # skip the signature checks ...
    led._check_run = lambda run, row: None  # type: ignore[method-assign]
    led._sign = lambda anchors, head: ("k1", "forged")  # type: ignore[method-assign]  # ... and cannot sign
    led._sign_run = lambda run, events, head: ("k1", "forged")  # type: ignore[method-assign]
    led.anchor_every_write = anchor
    return led


def append_unsigned(c: sqlite3.Connection) -> None:
    """A whole, consistent decision appended (and anchored) by someone without the key: all but the
    signatures fit."""
    path = c.execute("PRAGMA database_list").fetchone()[2]
    c.commit()
    with _without_the_key(path, anchor=True) as led:
        Recorder(led, load_policy(REPO / "policies", cache=False)).record("t", OK)


def append_unanchored(c: sqlite3.Connection) -> None:
    """A consistent decision appended to a run by someone without the key, leaving the anchors alone."""
    path = c.execute("PRAGMA database_list").fetchone()[2]
    c.commit()
    with _without_the_key(path, anchor=False) as led:
        Recorder(led, load_policy(REPO / "policies", cache=False)).record("r", OK)


def schema_bytes(c: sqlite3.Connection) -> None:
    """Invalid UTF-8 in sqlite_master (a damaged schema): SQLite's own messages then carry it."""
    c.execute("PRAGMA writable_schema = ON")
    c.execute("UPDATE sqlite_master SET sql = CAST(x'435245415445205441424c4520ff' AS TEXT) || sql WHERE name = 'runs'")
    c.execute("PRAGMA writable_schema = OFF")


# name: (tamper, what the finding or error says). A finding's text is matched in `BROKEN: ...` lines;
# "error:<code>" means a LedgerError with that code (exit 2).
CASES: dict[str, tuple[Callable[[sqlite3.Connection], None], str]] = {
    # events
    "event body altered": (sql("UPDATE events SET body = replace(body, 'user_review', 'pass') WHERE run = 'r' "
                               "AND seq = 5"),
                           "run 'r': first broken link at event 5 (node n5): its content was altered"),
    "event rehashed": (rehash_event("r", 2, '"at":"', '"at":"1'), "event 3 (node n3): its prev hash"),
    "event deleted": (sql("DELETE FROM events WHERE run = 'r' AND seq = 2"), "event 2 is missing"),
    "event inserted": (sql("INSERT INTO events (run, seq, type, node, body, prev, hash) "
                           "VALUES ('s', 2, 'validation_performed', 'n2', '{}', 'x', 'y')"), "run 's'"),
    "event type column": (sql("UPDATE events SET type = 'other' WHERE run = 's'"), "columns (type, run, seq, node)"),
    "event node column": (sql("UPDATE events SET node = 'n9' WHERE run = 'r' AND seq = 4"),
                          "columns (type, run, seq, node)"),
    "event seqs swapped": (sql("UPDATE events SET seq = 99 WHERE run = 'r' AND seq = 1",
                               "UPDATE events SET seq = 1 WHERE run = 'r' AND seq = 2",
                               "UPDATE events SET seq = 2 WHERE run = 'r' AND seq = 99"), "run 'r': first broken link"),
    "event ids reordered in a run": (swap_ids(1, 2), "ids renumbered or reordered"),
    "event ids reordered across runs": (swap_ids(6, 7), "run 's': first broken link at event 1 (node n1): its id 7 "
                                                        "is not the id 6 anchor 6 recorded"),
    "event ids renumbered": (sql("UPDATE events SET id = id + 100", "UPDATE nodes SET event = event + 100",
                                 "UPDATE runs SET last_event = last_event + 100"),
                             "run 'r': first broken link at event 1 (node n1): its id 101 is not the id 1"),
    "event appended without the key": (append_unsigned, "ledger: the ledger head's signature does not verify"),
    "event appended without the key, not anchored": (append_unanchored,
                                                      "run 'r': first broken link at event 6 (node n6): the run's "
                                                      "status row's signature does not verify"),
    # nodes
    "node kind": (sql("UPDATE nodes SET kind = 'step', retryable = 0 WHERE run = 'r' AND node = 'n5'"),
                  "node n5 differs"),
    "node retryable": (sql("UPDATE nodes SET retryable = 0 WHERE run = 's'"), "node n1 differs"),
    "node attempt": (sql("UPDATE nodes SET attempt = 1 WHERE run = 'r' AND node = 'n3'"), "node n3 differs"),
    "node ok": (sql("UPDATE nodes SET ok = 1 WHERE run = 'r' AND node = 'n5'"), "node n5 differs"),
    "node verdict": (sql("UPDATE nodes SET verdict = 'pass' WHERE run = 's'"), "node n1 differs"),
    "node reason": (sql("UPDATE nodes SET reason = 'ok' WHERE run = 's'"), "node n1 differs"),
    "node retry_of": (sql("UPDATE nodes SET retry_of = NULL WHERE run = 'r' AND node = 'n3'"), "node n3 differs"),
    "node fact repointed": (sql("UPDATE nodes SET fact = (SELECT fact FROM nodes WHERE run = 'r' AND node = 'n1') "
                                "WHERE run = 'r' AND node = 'n5'"), "node n5 differs"),
    "node deleted": (sql("DELETE FROM nodes WHERE run = 'r' AND node = 'n2'"), "node n2 of this event is missing"),
    "node inserted": (sql("INSERT INTO nodes SELECT run, 'n99', 99, kind, retryable, attempt, retry_of, ok, verdict,"
                          " reason, fact, 999 FROM nodes WHERE run = 'r' AND node = 'n1'"), "nodes holds n99"),
    # edges
    "edge re-parented": (sql("UPDATE edges SET parent = 'n2' WHERE run = 'r' AND child = 'n4'"),
                         "the edge into node n4 differs"),
    "edge kind": (sql("UPDATE edges SET kind = 'next' WHERE run = 'r' AND child = 'n3'"),
                  "the edge into node n3 differs"),
    "edge deleted": (sql("DELETE FROM edges WHERE run = 't' AND child = 'n2'"), "the edge into node n2 is missing"),
    "edge inserted": (sql("INSERT INTO edges VALUES ('t', 'n7', 'n2', 'next')"), "edges holds n7"),
    # facts
    "fact altered": (sql("UPDATE facts SET body = '{\"status\":\"implemented\",\"task_id\":\"tX\"}' "
                         "WHERE body LIKE '%\"t2\"%'"), "the stored fact"),
    "fact deleted": (sql("DELETE FROM facts WHERE body LIKE '%\"t1\"%'"), "is missing"),
    "fact inserted": (sql("INSERT INTO facts VALUES ('sha256:00', '{}')"), "facts holds sha256:00"),
    # the run status row, column by column
    **{f"status {col}": (sql(f"UPDATE runs SET {col} = {val} WHERE run = 'r'"),
                         f"status row does not match the end of its chain ({col})")
       for col, val in (("ok", "1 - ok"), ("created", "'2020-01-01T00:00:00.000Z'"),
                        ("updated", "'2020-01-01T00:00:00.000Z'"), ("last_event", "1"), ("tip", "'n4'"),
                        ("tip_kind", "'step'"), ("retryable", "1"), ("attempt", "2"), ("verdict", "'pass'"),
                        ("reason", "'ok'"), ("blocked", "0"), ("events", "4"))},
    "status head": (sql("UPDATE runs SET head = (SELECT hash FROM events WHERE run = 'r' AND seq = 4) WHERE run = 'r'"),
                    "(head)"),
    "status row deleted": (sql("DELETE FROM runs WHERE run = 's'"), "status row is missing"),
    "status row inserted": (sql("INSERT INTO runs SELECT 'ghost', events, head, tip, tip_kind, retryable, attempt, ok,"
                                " verdict, reason, blocked, created, updated, last_event, key, mac FROM runs"
                                " WHERE run = 's'"),
                            "run 'ghost': first broken link at event 1: the run has a status row but no events"),
    # whole runs
    "status row signature": (sql("UPDATE runs SET mac = 'AAAA' || substr(mac, 5) WHERE run = 't'"),
                             "run 't': first broken link at event 2 (node n2): the run's status row's signature"),
    "status row signed by an unknown key": (sql("UPDATE runs SET key = 'k9' WHERE run = 's'"), "signed with key 'k9'"),
    "status row re-signed by a tamperer": (sql("UPDATE runs SET mac = NULL, key = NULL WHERE run = 's'"),
                                           "the run's status row is not signed"),
    "run dropped everywhere (middle)": (drop_run("s"), "run 's': the run is gone: anchor 6 recorded 1 event(s)"),
    "run dropped everywhere (last)": (drop_run("t"), "run 't': the run is gone: anchor 8 recorded 2 event(s)"),
    "run dropped, anchors and head rewritten": (drop_run("t", rewrite_head=True), "signature does not verify"),
    "run's last events dropped": (sql("DELETE FROM events WHERE run = 't' AND seq = 2",
                                      "DELETE FROM nodes WHERE run = 't' AND seq = 2",
                                      "DELETE FROM edges WHERE run = 't' AND child = 'n2'"),
                                  "run 't': first broken link"),
    # the anchors
    "anchor body altered": (sql("UPDATE anchors SET body = replace(body, '\"r\"', '\"R\"') WHERE id = 3"),
                            "ledger: anchor 3 was altered"),
    "anchor deleted (middle)": (sql("DELETE FROM anchors WHERE id = 4"), "ledger: anchor(s) 4..4 are missing"),
    "anchor deleted (last)": (sql("DELETE FROM anchors WHERE id = 8"), "ledger: the ledger head covers 8 anchor(s), "
                                                                       "the ledger holds 7"),
    # the head
    "head deleted": (sql("DELETE FROM head"), "ledger: the ledger head is missing"),
    "head signature altered": (sql("UPDATE head SET mac = 'AAAA' || substr(mac, 5)"), "signature does not verify"),
    "head signed by an unknown key": (sql("UPDATE head SET key = 'k9'"), "signed with key 'k9'"),
    "head rolled forward": (sql("UPDATE head SET anchors = anchors + 1"), "the ledger head covers 9 anchor(s)"),
    # the file
    "guards dropped": (lambda c: None, "ledger: the append-only guards were removed"),
    "trigger added": (sql("CREATE TRIGGER sneaky AFTER INSERT ON events BEGIN SELECT 1; END"),
                      "ledger: the schema holds sneaky, which stoprule does not create"),
    "table altered": (sql("ALTER TABLE runs ADD COLUMN note TEXT"), "ledger: the schema of runs was altered"),
    "downgraded to schema 1": (sql("DROP TABLE head", "PRAGMA user_version = 1"), "schema-1 ledger"),
    "schema from the future": (sql("PRAGMA user_version = 9"), "error:ledger.too_new"),
    "not a ledger": (sql("PRAGMA application_id = 7"), "error:ledger.not_a_ledger"),
    "schema text not UTF-8": (schema_bytes, "error:ledger.corrupt"),
}  # fmt: skip

# the guards stay dropped in these (in the second the schema is unreadable anyway)
KEEP_GUARDS_DROPPED = {"guards dropped", "schema text not UTF-8"}


def tamper(path: Path, name: str) -> None:
    change, _ = CASES[name]
    c = sqlite3.connect(path, isolation_level=None)
    c.execute("PRAGMA foreign_keys = OFF")
    c.execute("PRAGMA synchronous = OFF")  # a test copy: no fsync
    for (trigger,) in c.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall():
        c.execute(f"DROP TRIGGER {trigger}")
    change(c)
    if c.in_transaction:
        c.execute("COMMIT")
    if name not in KEEP_GUARDS_DROPPED:  # what a careful tamperer does: put the guards back
        tables = {r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        for statement in STATEMENTS:
            if statement.startswith("CREATE TRIGGER") and ("head" in tables or "head" not in statement):
                c.execute(statement)
    c.close()


def outcome(path: Path) -> tuple[str, list[str]]:
    """``("ok" | "broken" | "error:<code>", finding or error lines)`` through the library."""
    try:
        with Ledger.open(str(path), readonly=True) as led:
            report = verify(led)
    except LedgerError as exc:
        return f"error:{exc.code}", [str(exc)]
    return ("ok" if report.ok else "broken"), [b.format() for b in report.breaks]


def test_there_are_at_least_30_cases() -> None:
    assert len(CASES) >= 30


@pytest.mark.parametrize("name", list(CASES))
def test_every_tampering_is_found_by_the_library(base: Path, tmp_path: Path, name: str) -> None:
    path = copy(base, tmp_path / "case")
    tamper(path, name)
    got, lines = outcome(path)
    want = CASES[name][1]
    if want.startswith("error:"):
        assert got == want, (got, lines)
    else:
        assert got == "broken", lines
        assert any(want in line for line in lines), lines


def _cli(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "STOPRULE_POLICY"}
    proc = invoke(["log", "verify", *args, "--ledger", str(path)], env=env)
    (proc.stdout + proc.stderr).encode("utf-8")  # strict: what is not UTF-8 could not be printed
    return proc


@pytest.mark.integration
def test_every_tampering_is_found_by_the_cli(base: Path, tmp_path: Path) -> None:
    for i, name in enumerate(CASES):
        path = copy(base, tmp_path / f"c{i}")
        tamper(path, name)
        proc = _cli(path)
        want = CASES[name][1]
        assert "Traceback" not in proc.stderr + proc.stdout, (name, proc.stderr)
        if want.startswith("error:"):
            assert proc.returncode == 2 and f"stoprule: {want[6:]}:" in proc.stderr, (name, proc.stderr)
        else:
            assert proc.returncode == 1, (name, proc.stdout, proc.stderr)
            assert f"BROKEN: {want}" in proc.stdout or any(
                want in ln for ln in proc.stdout.splitlines() if ln.startswith("BROKEN: ")
            ), (name, proc.stdout)


def test_an_untouched_copy_verifies_and_names_its_signed_head(base: Path, tmp_path: Path) -> None:
    proc = _cli(copy(base, tmp_path / "c"))
    assert (
        proc.returncode == 0
        and "ok: 3 run(s), 8 event(s); every hash chain verifies; ledger head sha256:" in (proc.stdout)
        and proc.stdout.rstrip().endswith("over 8 event(s), signed by k1")
    )
    data = json.loads(_cli(copy(base, tmp_path / "d"), "--format", "json").stdout)
    assert data["ok"] and data["head"]["events"] == 8 and data["head"]["key"] == "k1"


def test_a_missing_key_file_is_a_finding_not_a_pass(base: Path, tmp_path: Path) -> None:
    path = copy(base, tmp_path / "c")
    os.unlink(str(path) + ".keys")
    got, lines = outcome(path)
    assert got == "broken" and any("signature cannot be checked" in ln or "does not hold" in ln for ln in lines)


def test_a_forged_head_is_not_signed_again_by_the_next_write(base: Path, tmp_path: Path, evaluator) -> None:
    path = copy(base, tmp_path / "c")
    tamper(path, "run dropped, anchors and head rewritten")
    before = path.read_bytes()
    with pytest.raises(LedgerError, match="signature does not verify") as exc, Ledger.open(str(path)) as led:
        Recorder(led, evaluator).record("t", OK)
    assert exc.value.code == "ledger.corrupt"
    with Ledger.open(str(path), readonly=True) as led:
        assert not verify(led).ok  # still found: the write did not launder it
    c = sqlite3.connect(path)
    try:
        assert c.execute("SELECT count(*) FROM events").fetchone()[0] == 6
    finally:
        c.close()
    del before


# ---------------------------------------------------------------------- bytes


def _content(path: Path) -> list | None:
    """Every row of every table (None if SQLite cannot read them all)."""
    try:
        c = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        c.text_factory = bytes
        try:
            return [
                c.execute(f"SELECT * FROM {t} ORDER BY 1, 2").fetchall()
                for t in ("facts", "events", "nodes", "edges", "runs", "head")
            ]
        finally:
            c.close()
    except (sqlite3.Error, UnicodeDecodeError):  # a damaged schema: SQLite's messages are not UTF-8 either
        return None


def _flip(base: Path, dest: Path, offset: int) -> Path:
    path = copy(base, dest)
    data = bytearray(path.read_bytes())
    data[offset] ^= 0xFF
    path.write_bytes(bytes(data))
    return path


def _check_flip(base: Path, path: Path, offset: int) -> str:
    """A flipped byte is found, refused, or changed no row at all (free space, padding)."""
    got, lines = outcome(path)
    if got == "ok":
        assert _content(path) == _content(base), f"offset {offset}: rows changed but verify passed"
    return got


def _offsets(base: Path, step: int) -> list[int]:
    return list(range(0, base.stat().st_size, step))


@pytest.mark.integration
def test_flipped_bytes_through_the_library(base: Path, tmp_path: Path) -> None:
    size = base.stat().st_size
    # the header, the schema page, and a spread over every page
    offsets = sorted({*range(0, 100, 7), *range(100, 4096, 211), *range(4096, size, 397)})
    seen = {}
    for off in offsets:
        seen[off] = _check_flip(base, _flip(base, tmp_path / "f", off), off)
    assert {"broken"} <= set(seen.values()) and any(v.startswith("error:") for v in seen.values()), seen


def test_flipped_bytes_through_the_cli(base: Path, tmp_path: Path) -> None:
    size = base.stat().st_size
    offsets = [18, 60, 300, 2000, size // 3, size // 2, size - 3000, size - 200]
    paths = [_flip(base, tmp_path / f"f{i}", off) for i, off in enumerate(offsets)]
    with ThreadPoolExecutor(4) as pool:
        procs = list(pool.map(_cli, paths))
    for off, path, proc in zip(offsets, paths, procs, strict=True):
        assert "Traceback" not in proc.stdout + proc.stderr, (off, proc.stderr)
        assert proc.returncode in (0, 1, 2), (off, proc.returncode)
        if proc.returncode == 0:
            assert _content(path) == _content(base), off


@pytest.mark.parametrize("fraction", [0.0, 0.001, 0.1, 0.25, 0.5, 0.75, 0.99])
def test_truncation_is_refused_or_found(base: Path, tmp_path: Path, fraction: float) -> None:
    path = copy(base, tmp_path / "c")
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * fraction)])
    got, lines = outcome(path)
    assert got != "ok" or _content(path) == _content(base), (got, lines)
    proc = _cli(path)
    assert "Traceback" not in proc.stderr and proc.returncode in (1, 2), proc.stderr


@pytest.mark.torture
def test_every_flipped_byte(base: Path, tmp_path: Path) -> None:
    """Every third byte of the file flipped, one at a time (about 20,000 files at full scale),
    through the library."""
    tally: dict[str, int] = {}
    for off in _offsets(base, round(3 / SCALE)):
        got = _check_flip(base, _flip(base, tmp_path / "f", off), off)
        tally[got] = tally.get(got, 0) + 1
    assert tally.get("broken", 0) > 100 * SCALE, tally


@pytest.mark.torture
def test_many_flipped_bytes_through_the_cli(base: Path, tmp_path: Path) -> None:
    offsets = _offsets(base, round(97 / SCALE))
    paths = [_flip(base, tmp_path / f"f{i}", off) for i, off in enumerate(offsets)]
    with ThreadPoolExecutor(4) as pool:
        procs = list(pool.map(_cli, paths))
    for off, path, proc in zip(offsets, paths, procs, strict=True):
        assert "Traceback" not in proc.stdout + proc.stderr, (off, proc.stderr)
        if proc.returncode == 0:
            assert _content(path) == _content(base), off
