"""The ledger as a library: the append transaction, node kinds, append-only triggers, the hash
chain and its verification, the status lookup, truncation, and opening bad files."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from ledger_facts import CONTINUITY, ESCAPE, FAILED, OK, REVIEW
from stoprule import Evaluator, load_policy
from stoprule.engine.evaluator import Match, Verdict
from stoprule.ledger import Ledger, LedgerError, Recorder, verify
from stoprule.ledger.ddl import APPLICATION_ID
from stoprule.ledger.events import (
    GENESIS,
    MAX_MATCHED,
    canonical,
    digest,
    link,
    truncate_matched,
    validation_event,
)
from stoprule.ledger.store import BUSY_TIMEOUT, SYNCHRONOUS


@pytest.fixture
def ledger(tmp_path: Path):
    with Ledger.open(str(tmp_path / "ledger.db")) as led:
        yield led


@pytest.fixture
def rec(ledger: Ledger, evaluator: Evaluator) -> Recorder:
    return Recorder(ledger, evaluator)


def rows(ledger: Ledger, sql: str, *args: object) -> list[tuple]:
    return ledger.connection.execute(sql, args).fetchall()


def drop_triggers(ledger: Ledger) -> None:
    """What a tamperer with write access does first: no triggers, no foreign keys."""
    ledger.connection.execute("PRAGMA foreign_keys = OFF")
    for (name,) in rows(ledger, "SELECT name FROM sqlite_master WHERE type = 'trigger'"):
        ledger.connection.execute(f"DROP TRIGGER {name}")


# ---------------------------------------------------------------------- recording


def test_one_decision_appends_event_node_edge_and_status(rec: Recorder, ledger: Ledger, evaluator) -> None:
    out = rec.record("r1", CONTINUITY)
    v = evaluator.evaluate(CONTINUITY)
    assert (out.node.node, out.node.kind, out.node.retryable, out.node.attempt) == ("n1", "blocked_attempt", True, 1)
    (event,) = rows(ledger, "SELECT run, seq, type, node, body, prev, hash FROM events")
    body = json.loads(event[4])
    assert event[:4] == ("r1", 1, "validation_performed", "n1")
    assert body["policy"] == evaluator.digest == v.policy
    assert body["fact"] == digest(canonical(CONTINUITY))
    assert body["verdict"]["verdict"] == "continuity_failure" and body["verdict"]["ok"] is False
    assert body["matched"] == [m.to_dict() for m in v.matched]
    assert (body["matched_total"], body["matched_cut"]) == (len(v.matched), 0)
    assert event[5] == GENESIS and event[6] == link(GENESIS, event[4])
    assert rows(ledger, "SELECT run, child, parent, kind FROM edges") == [("r1", "n1", None, "root")]
    assert rows(ledger, "SELECT body FROM facts") == [(canonical(CONTINUITY),)]
    st = ledger.status("r1")
    assert (st.tip, st.tip_kind, st.retryable, st.decisions, st.blocked, st.head) == (
        "n1",
        "blocked_attempt",
        True,
        1,
        1,
        event[6],
    )


@pytest.mark.parametrize(
    ("fact", "checkpoint", "kind", "retryable"),
    [
        (OK, False, "step", False),
        (OK, True, "checkpoint", False),
        (CONTINUITY, False, "blocked_attempt", True),
        (ESCAPE, False, "blocked_attempt", True),
        (REVIEW, False, "blocked_attempt", False),
        (FAILED, False, "blocked_attempt", False),
        (REVIEW, True, "blocked_attempt", False),  # a block is recorded as a block, even when asked for a checkpoint
    ],
)
def test_node_kind_follows_the_verdict(rec: Recorder, fact, checkpoint, kind, retryable) -> None:
    out = rec.record("r", fact, checkpoint=checkpoint)
    assert (out.node.kind, out.node.retryable) == (kind, retryable)
    assert (out.token is not None) == retryable  # only retryable blocks mint a token
    env = out.envelope()
    assert (env["run"], env["node"], env["kind"]) == ("r", "n1", kind)
    assert ("retry_token" in env) == retryable


def test_retryable_comes_from_the_policy_not_the_code(tmp_path: Path, default_pack: Path) -> None:
    pack = tmp_path / "pack"
    shutil.copytree(default_pack, pack)
    vocab = pack / "vocabulary.yaml"
    text = vocab.read_text()
    assert "  failed:\n    ok: false\n    stop: allow\n" in text
    vocab.write_text(
        text.replace(
            "  failed:\n    ok: false\n    stop: allow\n",
            "  failed:\n    ok: false\n    stop: allow\n    retryable: true\n",
        )
    )
    with Ledger.open(str(tmp_path / "l.db")) as led:
        out = Recorder(led, load_policy(pack, cache=False)).record("r", FAILED)
    assert (out.node.kind, out.node.retryable, out.token is not None) == ("blocked_attempt", True, True)


def test_parent_defaults_to_the_tip_and_can_branch(rec: Recorder, ledger: Ledger) -> None:
    rec.record("r", OK)
    rec.record("r", OK)
    branch = rec.record("r", CONTINUITY, parent="n1")
    after = rec.record("r", OK)
    assert (branch.node.parent, branch.node.edge) == ("n1", "next")
    assert after.node.parent == "n3"  # the tip is the last appended node
    assert rows(ledger, "SELECT child, parent, kind FROM edges ORDER BY child") == [
        ("n1", None, "root"),
        ("n2", "n1", "next"),
        ("n3", "n1", "next"),
        ("n4", "n3", "next"),
    ]
    with pytest.raises(LedgerError, match="no node 'n9'") as exc:
        rec.record("r", OK, parent="n9")
    assert exc.value.code == "ledger.unknown_node"
    with pytest.raises(LedgerError, match="run 'other' has no decisions"):
        rec.record("other", OK, parent="n1")
    assert ledger.status("r").decisions == 4 and ledger.status("other") is None


def test_a_stop_after_a_retryable_block_is_its_retry(rec: Recorder, ledger: Ledger) -> None:
    """The stop hook's recording: blocked, kept working, stopped again = the block's retry chain;
    a terminal block or a passing stop is followed by a plain next step."""
    steps = [
        (CONTINUITY, "n1", None, "root", 1),
        (ESCAPE, "n2", "n1", "retry", 2),
        (OK, "n3", "n2", "retry", 3),
        (CONTINUITY, "n4", "n3", "next", 1),
        (REVIEW, "n5", "n4", "retry", 2),
        (OK, "n6", "n5", "next", 1),
    ]
    for fact, node, parent, edge, attempt in steps:
        out = rec.record_stop("s", fact)
        assert (out.node.node, out.node.parent, out.node.edge, out.node.attempt) == (node, parent, edge, attempt)
        assert out.node.retry_of == (parent if edge == "retry" else None)
    assert verify(ledger).ok
    assert ledger.status("s").blocked == 4


def test_runs_are_independent_chains(rec: Recorder, ledger: Ledger) -> None:
    for run in ("a", "b", "a"):
        rec.record(run, OK)
    assert [(s.run, s.decisions) for s in ledger.runs()] == [("a", 2), ("b", 1)]
    assert rows(ledger, "SELECT run, seq, node FROM events ORDER BY id") == [
        ("a", 1, "n1"),
        ("b", 1, "n1"),
        ("a", 2, "n2"),
    ]
    assert verify(ledger).ok


def test_batch_groups_keep_order_and_bad_facts_record_nothing(rec: Recorder, ledger: Ledger) -> None:
    from stoprule.diagnostics import FactError

    facts = [OK, {"status": "nonsense"}, CONTINUITY, OK, FactError("fact.not_json", "x"), REVIEW, OK]
    results = list(rec.record_many("r", facts, group=2))
    assert [type(r).__name__ for r in results] == [
        "Outcome",
        "FactError",
        "Outcome",
        "Outcome",
        "FactError",
        "Outcome",
        "Outcome",
    ]
    assert [r.node.node for r in results if not isinstance(r, FactError)] == ["n1", "n2", "n3", "n4", "n5"]
    assert ledger.status("r").decisions == 5 and verify(ledger).ok


def test_same_fact_twice_without_a_token_is_two_decisions(rec: Recorder, ledger: Ledger) -> None:
    rec.record("r", OK)
    rec.record("r", dict(reversed(list(OK.items()))))
    assert ledger.status("r").decisions == 2
    assert rows(ledger, "SELECT count(*) FROM facts") == [(1,)]  # fact bodies are stored once, by digest


# ---------------------------------------------------------------------- truncation


def _verdict(n: int) -> Verdict:
    matched = tuple(Match(f"rule.{i:03d}", "v", f"reason{i}") for i in range(n))
    return Verdict(False, "v", "reason0", "rule.000", "block", "m", False, None, None, matched, "sha256:p")


def test_matched_rules_are_truncated_deterministically_with_a_count() -> None:
    v = _verdict(MAX_MATCHED + 18)
    kept, cut = truncate_matched(v.matched)
    assert cut == 18 and len(kept) == MAX_MATCHED
    assert kept[0] == {"rule": "rule.000", "verdict": "v", "reason": "reason0"}  # the winner stays first
    assert [k["rule"] for k in kept] == [f"rule.{i:03d}" for i in range(MAX_MATCHED)]  # ranking order, a prefix
    args = dict(
        run="r",
        seq=1,
        node="n1",
        parent=None,
        kind="blocked_attempt",
        retryable=True,
        attempt=1,
        retry_of=None,
        fact="sha256:f",
        verdict=v,
        at="t",
    )
    one, two = validation_event(**args), validation_event(**args)
    assert canonical(one) == canonical(two)
    assert (one["matched_total"], one["matched_cut"], len(one["matched"])) == (MAX_MATCHED + 18, 18, MAX_MATCHED)
    assert truncate_matched(_verdict(3).matched) == ([m.to_dict() for m in _verdict(3).matched], 0)


# ---------------------------------------------------------------------- append-only


@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE events SET body = '{}'",
        "UPDATE events SET hash = 'x'",
        "DELETE FROM events",
        "UPDATE nodes SET kind = 'step'",
        "UPDATE nodes SET retryable = 0",
        "DELETE FROM nodes",
        "UPDATE edges SET parent = NULL",
        "DELETE FROM edges",
        "UPDATE facts SET body = '{}'",
        "DELETE FROM facts",
        "DELETE FROM runs",
        "UPDATE runs SET verdict = 'pass'",
        "UPDATE runs SET events = events - 1",
        "INSERT INTO events (run, seq, type, node, body, prev, hash) VALUES ('r', 9, 't', 'n9', '{}', 'x', 'y')",
        "INSERT INTO events (run, seq, type, node, body, prev, hash)"
        f" VALUES ('r', 3, 't', 'n3', '{{}}', '{GENESIS}', 'y')",
    ],
)
def test_direct_sql_cannot_rewrite_the_ledger(rec: Recorder, ledger: Ledger, sql: str) -> None:
    rec.record("r", OK)
    rec.record("r", CONTINUITY)
    before = (
        rows(ledger, "SELECT * FROM events"),
        rows(ledger, "SELECT * FROM nodes"),
        rows(ledger, "SELECT * FROM runs"),
    )
    with pytest.raises(sqlite3.IntegrityError, match="append-only|hash chain|moves forward"):
        ledger.connection.execute(sql)
    after = (
        rows(ledger, "SELECT * FROM events"),
        rows(ledger, "SELECT * FROM nodes"),
        rows(ledger, "SELECT * FROM runs"),
    )
    assert before == after
    assert verify(ledger).ok


# ---------------------------------------------------------------------- hash chain


def _tamper_body(led: Ledger) -> None:
    (body,) = rows(led, "SELECT body FROM events WHERE run = 'r' AND seq = 3")[0]
    led.connection.execute(
        "UPDATE events SET body = ? WHERE run = 'r' AND seq = 3", (body.replace("continuity_failure", "pass", 1),)
    )


def _tamper_rehash(led: Ledger) -> None:
    """Alter event 3 and recompute its own hash: event 4's prev no longer matches."""
    body, prev = rows(led, "SELECT body, prev FROM events WHERE run = 'r' AND seq = 3")[0]
    new = body.replace('"at":"', '"at":"1', 1)
    led.connection.execute("UPDATE events SET body = ?, hash = ? WHERE run = 'r' AND seq = 3", (new, link(prev, new)))


TAMPERS = {
    "body altered": (_tamper_body, 3, "content was altered"),
    "event rehashed": (_tamper_rehash, 4, "prev hash"),
    "event deleted": (lambda led: led.connection.execute("DELETE FROM events WHERE run = 'r' AND seq = 2"), 2,
                      "event 2 is missing"),
    "node kind changed": (lambda led: led.connection.execute("UPDATE nodes SET kind = 'step', retryable = 0 "
                                                             "WHERE node = 'n3'"), 3, "node n3 differs"),
    "node deleted": (lambda led: led.connection.execute("DELETE FROM nodes WHERE node = 'n2'"), 2, "node n2"),
    "edge re-parented": (lambda led: led.connection.execute("UPDATE edges SET parent = 'n1' WHERE child = 'n4'"),
                         4, "edge into node n4 differs"),
    "edge deleted": (lambda led: led.connection.execute("DELETE FROM edges WHERE child = 'n2'"), 2,
                     "edge into node n2"),
    "fact altered": (lambda led: led.connection.execute("UPDATE facts SET body = '{}' WHERE body LIKE '%taskState%'"),
                     3, "fact"),
    "status rewound": (lambda led: led.connection.execute("UPDATE runs SET verdict = 'pass', ok = 1"), 5,
                       "status row does not match"),
    "last event deleted": (lambda led: led.connection.execute("DELETE FROM events WHERE seq = 5"), 5,
                           "nodes holds n5, which no event recorded"),
}  # fmt: skip


@pytest.mark.parametrize("name", list(TAMPERS))
def test_verify_names_the_first_broken_link(rec: Recorder, ledger: Ledger, name: str) -> None:
    tamper, seq, problem = TAMPERS[name]
    for fact in (OK, OK, CONTINUITY, OK, REVIEW):
        rec.record("r", fact)
    rec.record("other", OK)
    assert verify(ledger).ok
    drop_triggers(ledger)
    tamper(ledger)
    report = verify(ledger)
    assert not report.ok
    (br,) = [b for b in report.breaks if b.run is not None]  # and, ledger-wide: the guards were removed
    assert (br.run, br.seq) == ("r", seq), br
    assert problem in br.problem, br.problem
    assert "first broken link at event" in br.format()
    assert verify(ledger, "other").ok  # the other run's chain is intact
    with pytest.raises(LedgerError, match="no run 'nope'"):
        verify(ledger, "nope")


# ---------------------------------------------------------------------- status


def test_status_is_one_indexed_lookup(rec: Recorder, ledger: Ledger) -> None:
    rec.record("r", OK)
    out = rec.record("r", CONTINUITY)
    rec.retry("r", out.token, CONTINUITY)
    st = ledger.status("r")
    assert (st.tip, st.tip_kind, st.retryable, st.verdict, st.decisions, st.blocked, st.attempt) == (
        "n3",
        "blocked_attempt",
        True,
        "continuity_failure",
        3,
        2,
        2,
    )
    from stoprule.ledger.store import _RUN_SQL

    plan = rows(ledger, "EXPLAIN QUERY PLAN " + _RUN_SQL + " WHERE run = ?", "r")
    details = [p[-1] for p in plan]
    assert details == ["SEARCH runs USING PRIMARY KEY (run=?)"], details  # no scan, no other table


def test_connection_settings(ledger: Ledger) -> None:
    c = ledger.connection
    assert c.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert c.execute("PRAGMA busy_timeout").fetchone()[0] == int(BUSY_TIMEOUT * 1000)
    assert c.execute("PRAGMA synchronous").fetchone()[0] == {"FULL": 2, "NORMAL": 1}[SYNCHRONOUS]
    assert c.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert c.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID


# ---------------------------------------------------------------------- opening bad files


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def test_open_refuses_what_is_not_a_usable_ledger(tmp_path: Path) -> None:
    with pytest.raises(LedgerError, match="does not exist") as exc:
        Ledger.open(str(tmp_path / "missing" / "l.db"))
    assert exc.value.code == "ledger.no_directory"
    assert not (tmp_path / "missing").exists()

    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not sqlite at all" * 200)
    digest_before = _sha(junk)
    with pytest.raises(LedgerError, match="not a readable SQLite database") as exc:
        Ledger.open(str(junk))
    assert exc.value.code == "ledger.corrupt" and _sha(junk) == digest_before

    other = tmp_path / "other.db"
    c = sqlite3.connect(other)
    c.execute("CREATE TABLE t (x)")
    c.commit()
    c.close()
    with pytest.raises(LedgerError, match="not a stoprule ledger"):
        Ledger.open(str(other))

    newer = tmp_path / "newer.db"
    Ledger.open(str(newer)).close()
    c = sqlite3.connect(newer)
    c.execute("PRAGMA user_version = 99")
    c.close()
    with pytest.raises(LedgerError, match="schema 99"):
        Ledger.open(str(newer))

    with pytest.raises(LedgerError, match="no ledger here"):
        Ledger.open(str(tmp_path / "absent.db"), readonly=True)
    assert not (tmp_path / "absent.db").exists()
    with pytest.raises(LedgerError, match="is a directory"):
        Ledger.open(str(tmp_path))


def test_open_sees_a_ledger_another_writer_creates_meanwhile(tmp_path: Path, monkeypatch, evaluator) -> None:
    """Two processes race to create a ledger: the loser's first look may fall before the winner's
    creation and its second after. It must take the file as a ledger, never as "not a ledger"."""
    path = tmp_path / "l.db"
    connect = Ledger._connect

    class FirstLookThenCreated:  # the other process creates the ledger right after this one's first read
        def __init__(self, conn: sqlite3.Connection) -> None:
            self._conn, self._looked = conn, False

        def __getattr__(self, name: str):
            return getattr(self._conn, name)

        def execute(self, sql: str, *args):
            cur = self._conn.execute(sql, *args)
            if self._looked:
                return cur
            self._looked = True
            rows = iter(cur.fetchall())  # the read is over (no lock held) before the other writer starts
            monkeypatch.setattr(Ledger, "_connect", staticmethod(connect))
            with Ledger.open(str(path)) as other:
                Recorder(other, evaluator).record("r", OK)
            return type("Rows", (), {"fetchone": lambda _self: next(rows, None)})()

    monkeypatch.setattr(Ledger, "_connect", staticmethod(lambda *a: FirstLookThenCreated(connect(*a))))
    with Ledger.open(str(path)) as led:
        Recorder(led, evaluator).record("r", REVIEW)
    with Ledger.open(str(path), readonly=True) as led:
        assert led.status("r").decisions == 2
        assert verify(led).ok


def test_truncated_ledger_is_refused_and_left_alone(tmp_path: Path, evaluator) -> None:
    path = tmp_path / "l.db"
    with Ledger.open(str(path)) as led:
        rec = Recorder(led, evaluator)
        for _ in range(200):
            rec.record("r", CONTINUITY)
        led.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 3])
    cut = _sha(path)
    with pytest.raises(LedgerError) as exc, Ledger.open(str(path)) as led:
        led.nodes("r")
        verify(led)
    assert exc.value.code in ("ledger.corrupt", "ledger.error")
    assert _sha(path) == cut


def test_path_with_uri_characters(tmp_path: Path, evaluator) -> None:
    odd = tmp_path / "a dir?#%20" / "led ger#1?.db"
    odd.parent.mkdir()
    with Ledger.open(str(odd)) as led:
        Recorder(led, evaluator).record("r", OK)
    assert odd.exists() and [p.name for p in odd.parent.iterdir() if p.name.endswith(".db")] == [odd.name]
    with Ledger.open(str(odd), readonly=True) as led:
        assert led.status("r").decisions == 1


def test_lower_layers_never_import_the_ledger() -> None:
    import ast

    src = Path(__file__).resolve().parents[2] / "src" / "stoprule"
    for path in sorted(src.glob("*.py")):  # the evaluator, compiler, engine ... (not cli/, not ledger/)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                assert "ledger" not in (node.module or ""), f"{path.name} imports {node.module}"
            elif isinstance(node, ast.Import):
                assert not any("ledger" in a.name for a in node.names), path.name
