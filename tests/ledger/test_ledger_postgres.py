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
        code, out, err = _cli("eval", "--policy", PACK, "--run", "r1", "--retry", blocked["retry_token"],
                              "--ledger", ledger, "-", stdin=json.dumps(fixed).encode())  # fmt: skip
        assert code == 0, err
    _record(ledger, "r2", REVIEW, FAILED, {"status": "bogus"}, OK)
    code, _, err = _cli("eval", "--policy", PACK, "--run", "r3", "--checkpoint", "--ledger", ledger, "-",
                        stdin=json.dumps(OK).encode())  # fmt: skip
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
    code, _, err = _cli("eval", "--policy", PACK, "--run", "r1", "--retry", "srt1.k1.x.y", "--ledger", pg_url, "-",
                        stdin=json.dumps(OK).encode())  # fmt: skip
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
    ["UPDATE events SET body = body", "DELETE FROM nodes", "TRUNCATE facts CASCADE", "DELETE FROM runs",
     "DELETE FROM head", "DROP TRIGGER events_no_change ON events"],
)  # fmt: skip
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
    procs = [ctx.Process(target=_writer, args=(pg_url, os.environ["STOPRULE_LEDGER_KEYS"], "shared", per, barrier))
             for _ in range(writers)]  # fmt: skip
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
