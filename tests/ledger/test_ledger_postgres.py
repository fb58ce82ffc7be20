"""The ledger on PostgreSQL: the same commands, guarantees and chains as on SQLite, and many writers.

Marked ``postgres``: a throwaway cluster on loopback (tests/pgcluster.py); `pytest -m postgres`.
"""

from __future__ import annotations

import io
import json
import multiprocessing
import os
from pathlib import Path

import psycopg
import pytest

from ledger_facts import CONTINUITY, ESCAPE, FAILED, FIXED, OK, REVIEW
from stoprule.cli.main import run as cli
from stoprule.ledger.postgres import PgLedger, grant_sql

pytestmark = pytest.mark.postgres
REPO = Path(__file__).resolve().parents[2]
PACK = str(REPO / "policies")


@pytest.fixture(autouse=True)
def _keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STOPRULE_LEDGER_KEYS", str(tmp_path / "pg.keys"))
    monkeypatch.delenv("STOPRULE_LEDGER", raising=False)


def _cli(*argv: str, stdin: bytes = b"") -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli(list(argv), io.BytesIO(stdin), out, err)
    return code, out.getvalue(), err.getvalue()


def _record(ledger: str, run: str, *facts: dict) -> list[dict]:
    data = "\n".join(json.dumps(f) for f in facts).encode()
    code, out, err = _cli(
        "eval", "--policy", PACK, "--run", run, "--ledger", ledger, "--format", "json", "-", stdin=data
    )
    assert code in (0, 1, 2) and out, err
    return [json.loads(x) for x in out.splitlines()]


def _story(ledger: str) -> None:
    """Every kind of node: steps, retryable and terminal blocks, a retry, a replay, a checkpoint."""
    _record(ledger, "r1", OK, ESCAPE)
    (blocked,) = _record(ledger, "r1", CONTINUITY)
    fixed = FIXED
    for _ in range(2):  # the second is an idempotent replay: nothing appended
        code, out, err = _cli(
            "eval",
            "--policy",
            PACK,
            "--run",
            "r1",
            "--retry",
            blocked["retry_token"],
            "--ledger",
            ledger,
            "-",
            stdin=json.dumps(fixed).encode(),
        )
        assert code == 0, err
    _record(ledger, "r2", REVIEW, FAILED, {"status": "bogus"}, OK)
    code, _, err = _cli(
        "eval", "--policy", PACK, "--run", "r3", "--checkpoint", "--ledger", ledger, "-", stdin=json.dumps(OK).encode()
    )
    assert code == 0, err


_READS = [
    ("log", "status", "r1", "--format", "json"),
    ("log", "status", "r2"),
    ("log", "show", "r1", "--format", "json"),
    ("log", "show", "r1"),
    ("log", "show", "r1", "--format", "mermaid"),
    ("log", "runs", "--format", "json"),
    ("log", "runs"),
    ("log", "export"),
    ("log", "export", "--run", "r2", "--facts-only"),
    ("log", "verify", "--format", "json"),
    ("log", "verify", "r1"),
]


def _without_anchors(result: tuple[int, str, str]) -> tuple[int, dict, str]:
    code, out, err = result
    report = json.loads(out)
    assert report["head"]["events"] == report["events"] and report["head"]["key"] == "k1"
    del report["head"]
    return code, report, err


def test_sqlite_to_postgres_and_back_round_trips_exactly_and_reads_the_same(tmp_path: Path, pg_url: str) -> None:
    lite = str(tmp_path / "a.db")
    _story(lite)
    code, exported, err = _cli("log", "export", "--ledger", lite)
    assert code == 0, err
    os.environ["STOPRULE_LEDGER_KEYS"] = lite + ".keys"  # the same keys: the signed head matches too
    code, out, err = _cli("log", "import", "--ledger", pg_url, stdin=exported.encode())
    assert code == 0 and "of 3 run(s)" in out, err
    for argv in _READS:
        a, b = _cli(*argv, "--ledger", lite), _cli(*argv, "--ledger", pg_url)
        if argv[:2] == ("log", "verify") and "json" in argv:  # each ledger anchors the runs on its own
            a, b = (_without_anchors(x) for x in (a, b))
        assert a == b, argv
    code, again, _ = _cli("log", "export", "--ledger", pg_url)
    back = str(tmp_path / "b.db")
    assert _cli("log", "import", "--ledger", back, stdin=again.encode())[0] == 0
    assert again == exported == _cli("log", "export", "--ledger", back)[1]
    assert _cli("log", "verify", "--ledger", back)[0] == 0


def test_the_commands_work_on_postgres_as_recorded(pg_url: str) -> None:
    _story(pg_url)
    code, out, err = _cli("log", "verify", "--ledger", pg_url)
    assert code == 0 and out.startswith("ok: 3 run(s), 8 event(s)"), err + out
    st = json.loads(_cli("log", "status", "r1", "--format", "json", "--ledger", pg_url)[1])
    assert (st["decisions"], st["tip"], st["blocked"]) == (4, "n4", 2)
    code, _, err = _cli(
        "eval",
        "--policy",
        PACK,
        "--run",
        "r1",
        "--retry",
        "srt1.k1.x.y",
        "--ledger",
        pg_url,
        "-",
        stdin=json.dumps(OK).encode(),
    )
    assert code == 2 and "token." in err


def test_reading_a_database_without_a_ledger_creates_nothing(pg_url: str) -> None:
    code, _, err = _cli("log", "runs", "--ledger", pg_url)
    assert code == 2 and "no ledger here" in err
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT to_regclass('events')").fetchone() == (None,)


def test_an_unreachable_database_is_a_clear_error() -> None:
    code, _, err = _cli("log", "runs", "--ledger", "postgresql://nobody:secret@127.0.0.1:1/none")
    assert code == 2 and "ledger.unavailable" in err and "secret" not in err


@pytest.mark.parametrize("table", ["facts", "events", "nodes", "edges"])
@pytest.mark.parametrize("op", ["UPDATE {t} SET run = run", "DELETE FROM {t}", "TRUNCATE {t} CASCADE"])
def test_event_tables_refuse_change_even_for_the_owner(pg_url: str, table: str, op: str) -> None:
    _record(pg_url, "r", OK, CONTINUITY)
    if table == "facts":
        op = op.replace("run = run", "body = body")
    with psycopg.connect(pg_url, autocommit=True) as conn, pytest.raises(psycopg.errors.RaiseException):
        conn.execute(op.format(t=table))
    assert _cli("log", "verify", "--ledger", pg_url)[0] == 0


@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE events SET body = body",
        "DELETE FROM nodes",
        "TRUNCATE facts CASCADE",
        "DELETE FROM runs",
        "DELETE FROM head",
        "DROP TRIGGER events_no_change ON events",
    ],
)
def test_the_services_role_may_only_insert(pg_url: str, sql: str) -> None:
    _record(pg_url, "r", OK)
    role = "svc_" + pg_url.rsplit("/", 1)[1]  # roles are cluster-wide: one per test database
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN")
        conn.execute(grant_sql(role))
    svc = pg_url.replace("postgres@", f"{role}@")
    _record(svc, "r", OK)  # the service appends
    with psycopg.connect(svc, autocommit=True) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):
        conn.execute(sql)


def test_verify_names_a_change_made_with_the_guards_switched_off(pg_url: str) -> None:
    _record(pg_url, "r", OK, OK, OK)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("ALTER TABLE events DISABLE TRIGGER events_no_change")
        conn.execute("UPDATE events SET body = replace(body, '\"pass\"', '\"PASS\"') WHERE seq = 2")
    code, out, _ = _cli("log", "verify", "--ledger", pg_url)
    assert code == 1
    assert (
        "run 'r': first broken link at event 2" in out and "guards were disabled (trigger(s) events_no_change)" in out
    )


def _writer(url: str, keys: str, run: str, n: int, barrier) -> None:  # noqa: ANN001
    os.environ["STOPRULE_LEDGER_KEYS"] = keys
    from stoprule.engine.packs import load_policy
    from stoprule.ledger.recorder import Recorder

    ledger = PgLedger.open(url)
    recorder = Recorder(ledger, load_policy(PACK))
    barrier.wait()
    for i in range(n):
        recorder.record(run, {**OK, "writer": os.getpid(), "i": i})
    ledger.close()


def test_many_writers_append_to_one_run_with_nothing_lost_or_reordered(pg_url: str, tmp_path: Path) -> None:
    _record(pg_url, "shared", OK)  # the ledger and its key file exist before the writers start
    ctx = multiprocessing.get_context("spawn")
    writers, per = 6, 40
    barrier = ctx.Barrier(writers)
    procs = [
        ctx.Process(target=_writer, args=(pg_url, os.environ["STOPRULE_LEDGER_KEYS"], "shared", per, barrier))
        for _ in range(writers)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    with PgLedger.open(pg_url) as led:
        nodes = led.nodes("shared")
        assert [n.seq for n in nodes] == list(range(1, writers * per + 2))
        seen = [(json.loads(f)["writer"], json.loads(f)["i"]) for n, f in led.records("shared") if n.seq > 1]
        assert len(set(seen)) == writers * per  # none lost, none twice
        for pid in {w for w, _ in seen}:  # each writer's own order kept
            assert [i for w, i in seen if w == pid] == list(range(per))
    assert _cli("log", "verify", "--ledger", pg_url)[0] == 0


def test_writers_racing_to_create_the_ledger_agree_on_one(pg_url: str) -> None:
    from concurrent.futures import ThreadPoolExecutor

    def open_close(_: int) -> None:
        PgLedger.open(pg_url).close()

    with ThreadPoolExecutor(6) as pool:
        list(pool.map(open_close, range(6)))  # none fails: one creates, the others find it
    assert _cli("log", "verify", "--ledger", pg_url)[1].startswith("ok: 0 run(s)")


def test_keys_rotate_and_list_on_postgres(pg_url: str) -> None:
    _record(pg_url, "r", CONTINUITY)
    code, out, err = _cli("keys", "rotate", "--ledger", pg_url)
    assert code == 0 and "k2 now signs" in out, err
    listed = json.loads(_cli("keys", "list", "--ledger", pg_url, "--format", "json")[1])
    assert listed["active"] == "k2" and listed["path"] == os.environ["STOPRULE_LEDGER_KEYS"]
    assert _cli("log", "verify", "--ledger", pg_url)[1].endswith("signed by k2\n")


# ---------------------------------------------------------------------- runs chained on their own, anchored

FIXTURES = REPO / "tests" / "fixtures" / "ledger"


def _pg_ledger(url: str, **kw) -> PgLedger:  # noqa: ANN003
    return PgLedger.open(url, **kw)


def _record_into(led: PgLedger, run: str, *facts: dict) -> None:
    from stoprule.engine.packs import load_policy
    from stoprule.ledger.recorder import Recorder

    rec = Recorder(led, load_policy(PACK))
    for f in facts:
        rec.record(run, f)


def test_a_held_run_blocks_only_its_own_writers(pg_url: str) -> None:
    """A writer holding run a (its transaction open) stops neither the writers of run b nor anchoring;
    a writer of run a gives up when its time limit is spent (``ledger.busy``), having written nothing."""
    from stoprule.engine.packs import load_policy
    from stoprule.ledger.errors import LedgerError
    from stoprule.ledger.recorder import prepare

    _record(pg_url, "a", OK)
    _record(pg_url, "b", OK)
    evaluator = load_policy(PACK)
    (p,) = prepare(evaluator, [OK])
    holder, other = _pg_ledger(pg_url), _pg_ledger(pg_url, timeout_ms=800)
    try:
        with holder.write():
            holder.append("a", p.verdict, p.digest, p.body, kind=p.kind, retryable=False)
            _record_into(other, "b", OK, OK)  # not waiting on a
            assert other.anchor() >= 1  # nor is anchoring
            with pytest.raises(LedgerError) as exc:
                _record_into(other, "a", OK)
            assert exc.value.code in ("ledger.busy", "ledger.unavailable")
        assert holder.status("a").decisions == 2 and holder.status("b").decisions == 3
    finally:
        holder.close()
        other.close()
    assert _cli("log", "verify", "--ledger", pg_url)[0] == 0


def test_a_run_removed_after_its_anchor_is_found_and_unanchored_runs_are_counted(pg_url: str) -> None:
    with _pg_ledger(pg_url) as led:
        led.auto_anchor = False
        _record_into(led, "x", OK)
        _record_into(led, "y", OK, CONTINUITY)
        assert led.anchor() == 2 and led.anchor() == 0  # nothing new to anchor
        _record_into(led, "z", OK)
    code, out, _ = _cli("log", "verify", "--ledger", pg_url, "--format", "json")
    report = json.loads(out)
    assert code == 0 and report["unanchored"] == 1 and report["head"]["anchors"] == 1
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("SET session_replication_role = replica")  # the guards switched off, as an owner can
        for table in ("edges", "nodes", "events", "runs"):
            conn.execute(f"DELETE FROM {table} WHERE run = 'y'")
        conn.execute("DELETE FROM facts WHERE digest NOT IN (SELECT fact FROM nodes)")
    code, out, _ = _cli("log", "verify", "--ledger", pg_url)
    assert code == 1 and "BROKEN: run 'y': the run is gone: anchor 1 recorded 2 event(s)" in out, out


def test_anchoring_does_not_wait_for_a_held_head_and_writes_go_on(pg_url: str) -> None:
    _record(pg_url, "r", OK)
    with psycopg.connect(pg_url) as holder:  # a transaction holding the ledger head's row
        holder.execute("SELECT * FROM head FOR UPDATE")
        with _pg_ledger(pg_url, timeout_ms=800) as led:
            _record_into(led, "r", OK)  # appends do not touch the head
            assert led.anchor() == 0  # another holds it: left to them, no wait
        holder.rollback()
    with _pg_ledger(pg_url) as led:
        assert led.anchor() == 1
    assert _cli("log", "verify", "--ledger", pg_url)[0] == 0


def test_a_run_changed_without_the_key_is_not_extended(pg_url: str) -> None:
    from stoprule.ledger.errors import LedgerError

    _record(pg_url, "r", OK, OK)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("UPDATE runs SET mac = 'AAAA' || substr(mac, 5)")  # a change the guards let through
    with _pg_ledger(pg_url) as led, pytest.raises(LedgerError, match="does not match its signature") as exc:
        _record_into(led, "r", OK)
    assert exc.value.code == "ledger.corrupt"
    code, out, _ = _cli("log", "verify", "--ledger", pg_url)
    assert code == 1 and "the run's status row's signature does not verify" in out


# the tamper table of tests/ledger/test_ledger_tamper.py (SQLite), its cases that are SQL on PostgreSQL:
# each, made by the database's owner with the guards switched off, is a finding
PG_TAMPER = {
    "event body altered": ("UPDATE events SET body = replace(body, 'user_review', 'pass') WHERE run = 'r' AND seq = 2",
                           "run 'r': first broken link at event 2 (node n2): its content was altered"),
    "event deleted": ("DELETE FROM events WHERE run = 'r' AND seq = 1", "event 1 is missing"),
    "event ids renumbered": ("UPDATE events SET id = id + 100; UPDATE nodes SET event = event + 100;"
                             " UPDATE runs SET last_event = last_event + 100", "ids renumbered or reordered"),
    "node verdict": ("UPDATE nodes SET verdict = 'pass' WHERE run = 's'", "node n1 differs"),
    "status verdict": ("UPDATE runs SET verdict = 'pass' WHERE run = 'r'", "status row does not match"),
    "status signature": ("UPDATE runs SET mac = NULL, key = NULL WHERE run = 's'", "status row is not signed"),
    "run dropped everywhere": ("DELETE FROM edges WHERE run = 's'; DELETE FROM nodes WHERE run = 's';"
                               " DELETE FROM events WHERE run = 's'; DELETE FROM runs WHERE run = 's';"
                               " DELETE FROM facts WHERE digest NOT IN (SELECT fact FROM nodes)",
                               "run 's': the run is gone"),
    "anchor altered": ("UPDATE anchors SET body = replace(body, '\"s\"', '\"S\"')", "was altered"),
    "anchor deleted": ("DELETE FROM anchors WHERE id = (SELECT max(id) FROM anchors)", "the ledger head covers"),
    "head rolled forward": ("UPDATE head SET anchors = anchors + 1", "the ledger head covers"),
    "head signature": ("UPDATE head SET mac = 'AAAA' || substr(mac, 5)", "signature does not verify"),
}  # fmt: skip


@pytest.mark.parametrize("name", list(PG_TAMPER))
def test_tampering_on_postgres_is_found(pg_url: str, name: str) -> None:
    _record(pg_url, "r", OK, REVIEW)
    _record(pg_url, "s", ESCAPE)
    assert _cli("log", "verify", "--ledger", pg_url)[0] == 0
    sql, found = PG_TAMPER[name]
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("SET session_replication_role = replica")
        for statement in sql.split(";"):
            conn.execute(statement)
    code, out, err = _cli("log", "verify", "--ledger", pg_url)
    assert code == 1 and found in out, out + err


def test_a_schema_2_database_is_upgraded_by_migrate_and_keeps_every_record(pg_url: str, tmp_path: Path) -> None:
    """tests/fixtures/ledger/pg-v2.sql: `pg_dump --inserts` of a ledger stoprule wrote at schema 2
    (runs r: a step, a retryable block, its retry, a terminal block; s: a block; t: a step), with its key file."""
    import shutil

    keys = tmp_path / "pg.keys"
    shutil.copy(FIXTURES / "pg-v2.keys", keys)
    os.chmod(keys, 0o600)
    os.environ["STOPRULE_LEDGER_KEYS"] = str(keys)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute((FIXTURES / "pg-v2.sql").read_text())
    code, out, err = _cli("log", "verify", "--ledger", pg_url)
    assert code == 0 and "over 6 event(s), signed by k1" in out, out + err
    exported = _cli("log", "export", "--ledger", pg_url)[1]
    code, _, err = _cli("serve", "--ledger", pg_url, "--no-auth", "--port", "1")  # the service never migrates
    assert code == 2 and "ledger schema 2" in err and "stoprule serve migrate" in err, err
    code, out, err = _cli("serve", "migrate", "--ledger", pg_url)
    assert code == 0 and "from schema 2 to 3" in out, out + err
    code, out, err = _cli("log", "verify", "--ledger", pg_url, "--format", "json")
    assert code == 0 and json.loads(out)["head"]["anchors"] == 1, out + err
    assert _cli("log", "export", "--ledger", pg_url)[1] == exported
    _record(pg_url, "s", OK)
    assert _cli("log", "verify", "--ledger", pg_url)[0] == 0
