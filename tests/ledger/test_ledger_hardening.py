"""Ledger regressions: file modes, read-only commands where there is
no ledger, line separators and lone surrogates in exported facts, error mapping, the signed
ledger head and run signatures across key rotation, and upgrading ledgers of schemas 1 and 2."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import stat
import subprocess
from pathlib import Path

import pytest

from clirunner import invoke
from ledger_facts import CONTINUITY, OK, REVIEW
from stoprule.ledger import Ledger, LedgerError, Recorder, keys, verify
from stoprule.ledger.store import sqlite_error


def mode(p: Path | str) -> int:
    return stat.S_IMODE(os.stat(p).st_mode)


def no_traceback(proc: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr


def sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


# ---------------------------------------------------------------------- 2. file modes


def test_ledger_and_its_side_files_are_owner_only_under_umask_022(tmp_path: Path, evaluator) -> None:
    old = os.umask(0o022)
    try:
        path = tmp_path / "ledger.db"
        with Ledger.open(str(path)) as led:
            Recorder(led, evaluator).record("r", CONTINUITY)
            side = [Path(f"{path}{s}") for s in ("-wal", "-shm")]
            assert all(p.exists() for p in side)  # while open, WAL mode keeps both
            assert {p.name: mode(p) for p in (path, *side, Path(led.keys_path))} == {
                "ledger.db": 0o600,
                "ledger.db-wal": 0o600,
                "ledger.db-shm": 0o600,
                "ledger.db.keys": 0o600,
            }
    finally:
        os.umask(old)


def test_cli_creates_the_default_ledger_owner_only_under_umask_022(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("STOPRULE_POLICY", "STOPRULE_LEDGER")}
    env["STOPRULE_CACHE_DIR"] = str(tmp_path / "cache")
    old = os.umask(0o022)
    try:
        proc = invoke(["eval", "--run", "r", "-"], input=json.dumps(OK), cwd=tmp_path, env=env)
    finally:
        os.umask(old)
    assert proc.returncode == 0, proc.stderr
    files = sorted((tmp_path / ".stoprule").iterdir())
    assert (tmp_path / ".stoprule" / ".gitignore").is_file()  # made with the directory: the ledger stays out of git
    files = [p for p in files if p.name != ".gitignore"]
    assert files and {p.name: mode(p) for p in files} == {p.name: 0o600 for p in files}, [
        (p.name, oct(mode(p))) for p in files
    ]


# ---------------------------------------------------------------------- 3. no ledger here


@pytest.mark.parametrize(
    "argv",
    [
        ("log", "status", "r"),
        ("log", "show", "r"),
        ("log", "runs"),
        ("log", "export"),
        ("log", "export", "--run", "r"),
        ("log", "verify"),
        ("log", "verify", "r"),
        ("log", "upgrade"),
        ("keys", "rotate"),
        ("keys", "retire", "k1"),
    ],
)
@pytest.mark.parametrize("explicit", [False, True])
def test_commands_that_read_a_ledger_say_no_ledger_here_and_create_nothing(
    run_cli, tmp_path: Path, argv: tuple[str, ...], explicit: bool
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    extra = ("--ledger", "l.db") if explicit else ()
    proc = run_cli(*argv, *extra, cwd=work, env={"STOPRULE_LEDGER": ""})
    no_traceback(proc)
    shown = "l.db" if explicit else os.path.join(".stoprule", "ledger.db")
    assert proc.returncode == 2 and f"no ledger here: {shown} does not exist" in proc.stderr, proc.stderr
    assert "cannot create" not in proc.stderr and proc.stdout == ""
    assert list(work.iterdir()) == []  # no ledger, no .stoprule/, no key file


def test_keys_list_without_a_ledger_creates_nothing(run_cli, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    proc = run_cli("keys", "list", cwd=work, env={"STOPRULE_LEDGER": ""})
    assert proc.returncode == 0 and "no keys yet" in proc.stdout and list(work.iterdir()) == []


# ---------------------------------------------------------------------- 4. line separators in NDJSON

BREAKERS = "\u2028\u2029\u0085\x0b\x0c\x1c\x1d\x1e\r"


def test_export_escapes_line_separators_and_round_trips_through_eval(run_cli, tmp_path: Path) -> None:
    facts = [{**OK, "task_id": f"a{ch}b"} for ch in BREAKERS] + [{**REVIEW, "note": BREAKERS}]
    db = str(tmp_path / "l.db")
    rec = run_cli("eval", "--run", "r", "--ledger", db, "-", input="\n".join(json.dumps(f) for f in facts) + "\n")
    no_traceback(rec)
    assert rec.returncode == 1 and len(rec.stdout.splitlines()) == len(facts)

    only = run_cli("log", "export", "--facts-only", "--ledger", db)
    assert only.returncode == 0
    assert len(only.stdout.splitlines()) == len(only.stdout.split("\n")) - 1 == len(facts)  # every splitter agrees
    assert [json.loads(ln) for ln in only.stdout.splitlines()] == facts
    again = run_cli("eval", "-", input=only.stdout)  # `log export --facts-only | eval -`
    no_traceback(again)
    assert len(again.stdout.splitlines()) == len(facts)
    assert [json.loads(ln)["verdict"] for ln in again.stdout.splitlines()] == ["pass"] * len(BREAKERS) + ["user_review"]

    full = run_cli("log", "export", "--ledger", db)
    assert len(full.stdout.splitlines()) == len(facts)
    assert [json.loads(ln)["fact"] for ln in full.stdout.splitlines()] == facts
    for fmt_args in (
        ("show", "r", "--format", "json"),
        ("status", "r", "--format", "json"),
        ("runs", "--format", "json"),
        ("verify", "--format", "json"),
    ):
        out = run_cli("log", *fmt_args, "--ledger", db).stdout
        assert len(out.splitlines()) == 1 and not any(ch in out for ch in "\u2028\u2029\u0085"), fmt_args


# ---------------------------------------------------------------------- 5. lone surrogates in unknown fields


def test_lone_surrogates_in_unknown_fields_are_recorded_and_exported_safely(run_cli, tmp_path: Path) -> None:
    text = '{"status": "implemented", "note": "x\\udfffy", "\\ud800": "\\u0000"}'
    db = str(tmp_path / "l.db")
    proc = run_cli("eval", "--run", "r", "--ledger", db, "-", input=text)
    no_traceback(proc)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["node"] == "n1"
    want = json.loads(text)
    full = run_cli("log", "export", "--ledger", db)
    no_traceback(full)
    assert full.returncode == 0 and json.loads(full.stdout)["fact"] == want
    only = run_cli("log", "export", "--facts-only", "--ledger", db)
    assert json.loads(only.stdout) == want and only.stdout.isascii()
    assert run_cli("eval", "-", input=only.stdout).returncode == 0
    assert run_cli("log", "verify", "--ledger", db).returncode == 0
    for args in (
        ("show", "r"),
        ("show", "r", "--format", "json"),
        ("show", "r", "--format", "mermaid"),
        ("status", "r"),
        ("runs",),
    ):
        shown = run_cli("log", *args, "--ledger", db)
        no_traceback(shown)
        assert shown.returncode == 0, args


def test_a_lone_surrogate_fact_has_a_stable_digest_through_the_library(tmp_path: Path, evaluator) -> None:
    fact = {"status": "implemented", "note": "\udfff", "\ud800": 1}
    with Ledger.open(str(tmp_path / "l.db")) as led:
        rec = Recorder(led, evaluator)
        first = rec.record("r", fact)
        second = rec.record("r", json.loads(json.dumps(fact, sort_keys=True)))
        assert first.node.fact == second.node.fact
        ((body,),) = led.connection.execute("SELECT body FROM facts").fetchall()
        assert json.loads(body) == fact and "\\udfff" in body
        assert verify(led).ok


# ---------------------------------------------------------------------- error mapping


def test_undecodable_text_is_corrupt_not_busy() -> None:
    # the text of such an error quotes the stored value: "blocked" once made it look like "locked" (busy)
    exc = sqlite3.OperationalError("Could not decode to UTF-8 column 'body' with text '{\"status\":\"blo\ufffdked\"}'")
    assert sqlite_error("l.db", exc).code == "ledger.corrupt"
    undecodable = UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte")
    assert sqlite_error("l.db", undecodable).code == "ledger.corrupt"


def test_a_damaged_event_body_is_corrupt_for_readers(tmp_path: Path, evaluator, run_cli) -> None:
    db = tmp_path / "l.db"
    with Ledger.open(str(db)) as led:
        Recorder(led, evaluator).record("r", OK)
    c = sqlite3.connect(db)
    c.execute("DROP TRIGGER events_no_update")
    c.execute("UPDATE events SET body = '{not json'")
    c.commit()
    c.close()
    for args in (("show", "r"), ("export",), ("verify",)):
        proc = run_cli("log", *args, "--ledger", str(db))
        no_traceback(proc)
        assert proc.returncode in (1, 2), args
        assert "ledger.corrupt" in proc.stderr or "BROKEN" in proc.stdout


# ---------------------------------------------------------------------- the signed head and the keys


def test_rotation_signs_the_head_again_and_the_old_key_can_be_retired(tmp_path: Path, evaluator) -> None:
    with Ledger.open(str(tmp_path / "l.db")) as led:
        rec = Recorder(led, evaluator)
        rec.record("r", OK)
        assert led.head().key == "k1"
        keys.rotate(led)
        assert led.head().key == "k2"
        keys.retire(led, "k1")
        assert verify(led).ok
        rec.record("r", OK)  # still appendable
        assert led.head().key == "k2" and led.head().anchors == 2


def test_retiring_a_key_signs_the_runs_it_signed_again_first(tmp_path: Path, evaluator) -> None:
    with Ledger.open(str(tmp_path / "l.db")) as led:
        rec = Recorder(led, evaluator)
        rec.record("old", OK)
        keys.rotate(led)
        rec.record("new", OK)
        signers = dict(led.connection.execute("SELECT run, key FROM runs").fetchall())
        assert signers == {"old": "k1", "new": "k2"}
        keys.retire(led, "k1")
        assert dict(led.connection.execute("SELECT run, key FROM runs").fetchall()) == {"old": "k2", "new": "k2"}
        assert verify(led).ok
        rec.record("old", OK)  # its row verifies with the live key: still appendable


def test_retiring_the_key_a_killed_rotation_left_on_the_head(tmp_path: Path, evaluator) -> None:
    """A rotation killed after writing the key file but before its commit: the head is still
    signed with k1, k2 is active. Retiring k1 signs the head with k2 first."""
    with Ledger.open(str(tmp_path / "l.db")) as led:
        Recorder(led, evaluator).record("r", OK)
        ring = keys.ensure(led.keys_path)
        k2 = keys._new_key(ring)
        keys._write(keys.KeyRing(ring.path, k2.id, {**ring.keys, k2.id: k2}), exclusive=False)
        assert led.head().key == "k1"
        keys.retire(led, "k1")
        assert led.head().key == "k2" and verify(led).ok


def test_a_lost_key_file_stops_appends_but_not_reads(tmp_path: Path, evaluator) -> None:
    path = tmp_path / "l.db"
    with Ledger.open(str(path)) as led:
        Recorder(led, evaluator).record("r", OK)
    os.unlink(str(path) + ".keys")
    with Ledger.open(str(path)) as led:
        with pytest.raises(LedgerError, match="does not hold") as exc:
            Recorder(led, evaluator).record("r", OK)
        assert exc.value.code == "ledger.corrupt"
        assert led.status("r").decisions == 1
    assert not os.path.exists(str(path) + ".keys") or keys.load(str(path) + ".keys").active is not None


# ---------------------------------------------------------------------- upgrading ledgers of older schemas

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "ledger"


def old_ledger(tmp_path: Path, version: int) -> Path:
    """A ledger as an older stoprule wrote it. tests/fixtures/ledger/ledger-v2.db (and its key file)
    was written by stoprule at schema 2 (one chain over every event): runs r (a step, a retryable
    block, its retry, a checkpoint off n1, a terminal block), s (a block), t (a step).
    ledger-v1.db: r (a step, a terminal block) and t, by the same stoprule with the ledger head
    removed, as stoprule before the head wrote them (user_version 1, no key file)."""
    db = tmp_path / f"v{version}.db"
    shutil.copy(FIXTURES / f"ledger-v{version}.db", db)
    os.chmod(db, 0o600)
    if version == 2:
        shutil.copy(FIXTURES / "ledger-v2.db.keys", str(db) + ".keys")
        os.chmod(str(db) + ".keys", 0o600)  # git keeps no such mode
    return db


def test_a_schema_1_ledger_reads_as_it_is_and_verify_asks_for_the_upgrade(tmp_path: Path, run_cli) -> None:
    db = old_ledger(tmp_path, 1)
    before = sha(db)
    status = run_cli("log", "status", "r", "--format", "json", "--ledger", str(db))
    assert status.returncode == 0 and json.loads(status.stdout)["decisions"] == 2
    proc = run_cli("log", "verify", "--ledger", str(db))
    assert proc.returncode == 1 and "BROKEN: ledger: this is a schema-1 ledger" in proc.stdout
    assert "stoprule log upgrade" in proc.stdout
    assert sha(db) == before  # reading changed nothing
    up = run_cli("log", "upgrade", "--ledger", str(db))
    assert up.returncode == 0 and "upgraded from ledger schema 1 to 3" in up.stdout, up.stderr
    assert run_cli("log", "verify", "--ledger", str(db)).returncode == 0
    assert "already at ledger schema 3" in run_cli("log", "upgrade", "--ledger", str(db)).stdout
    with Ledger.open(str(db), readonly=True) as led:
        assert led.head().anchors == 1 and led.head().key == "k1"


def test_recording_into_a_schema_1_ledger_upgrades_it(tmp_path: Path, run_cli) -> None:
    db = old_ledger(tmp_path, 1)
    proc = run_cli("eval", "--run", "r", "--ledger", str(db), "-", input=json.dumps(OK))
    assert proc.returncode == 0 and json.loads(proc.stdout)["node"] == "n3", proc.stderr
    assert run_cli("log", "verify", "--ledger", str(db)).returncode == 0


def test_a_damaged_schema_1_ledger_is_not_upgraded(tmp_path: Path, run_cli) -> None:
    db = old_ledger(tmp_path, 1)
    c = sqlite3.connect(db)
    c.execute("DROP TRIGGER runs_forward")
    c.execute("UPDATE runs SET verdict = 'user_review' WHERE run = 't'")
    c.commit()
    c.close()
    before = sha(db)
    proc = run_cli("log", "upgrade", "--ledger", str(db))
    no_traceback(proc)
    assert proc.returncode == 2 and "ledger.corrupt" in proc.stderr and "cannot upgrade" in proc.stderr
    assert "status row does not match" in proc.stderr
    assert sha(db) == before and not os.path.exists(str(db) + ".keys")


def test_a_schema_2_ledger_verifies_as_written_and_upgrades_to_runs_chained_on_their_own(
    tmp_path: Path, run_cli
) -> None:
    db = old_ledger(tmp_path, 2)
    before = sha(db)
    proc = run_cli("log", "verify", "--ledger", str(db))
    assert proc.returncode == 0 and "over 7 event(s), signed by k1" in proc.stdout, proc.stdout + proc.stderr
    exported = run_cli("log", "export", "--ledger", str(db)).stdout
    assert sha(db) == before
    up = run_cli("log", "upgrade", "--ledger", str(db))
    assert up.returncode == 0 and "upgraded from ledger schema 2 to 3" in up.stdout, up.stderr
    proc = run_cli("log", "verify", "--ledger", str(db), "--format", "json")
    report = json.loads(proc.stdout)
    assert proc.returncode == 0 and report["head"]["anchors"] == 1 and report["events"] == 7, report
    assert run_cli("log", "export", "--ledger", str(db)).stdout == exported  # every record as it was
    tok = json.loads(run_cli("log", "show", "r", "--format", "json", "--ledger", str(db)).stdout)
    assert tok["status"]["decisions"] == 5
    proc = run_cli("eval", "--run", "s", "--ledger", str(db), "-", input=json.dumps(OK))
    assert proc.returncode == 0 and json.loads(proc.stdout)["node"] == "n2", proc.stderr
    assert run_cli("log", "verify", "--ledger", str(db)).returncode == 0


@pytest.mark.parametrize(
    ("change", "found"),
    [
        ("DELETE FROM events WHERE run = 's'", "event id(s) 5 are missing"),
        ("UPDATE head SET mac = 'AAAA' || substr(mac, 5)", "signature does not verify"),
    ],
)
def test_a_damaged_schema_2_ledger_is_not_upgraded(tmp_path: Path, run_cli, change: str, found: str) -> None:
    db = old_ledger(tmp_path, 2)
    c = sqlite3.connect(db)
    for (trigger,) in c.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall():
        c.execute(f"DROP TRIGGER {trigger}")
    for table in ("nodes", "edges", "runs"):
        if "'s'" in change:
            c.execute(f"DELETE FROM {table} WHERE run = 's'")
    c.execute(change)
    c.commit()
    c.close()
    proc = run_cli("log", "verify", "--ledger", str(db))
    assert proc.returncode == 1 and found in proc.stdout, proc.stdout
    before = sha(db)
    proc = run_cli("log", "upgrade", "--ledger", str(db))
    no_traceback(proc)
    assert proc.returncode == 2 and "cannot upgrade from ledger schema 2" in proc.stderr and found in proc.stderr
    assert sha(db) == before
