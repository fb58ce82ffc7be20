"""`stoprule eval --run`, `stoprule log` and `stoprule keys` in process (``run_cli``); a fresh
interpreter where its imports are the point, a process without write privileges for read-only files."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from ledger_facts import CONTINUITY, ESCAPE, FAILED, FIXED, OK, REVIEW
from stoprule.ledger import Ledger, Recorder, keys, tokens
from tiers import first_by_default

LEDGER_KEYS = ["run", "node", "parent", "kind", "retryable", "attempt"]


def no_traceback(proc: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in proc.stdout and "Traceback" not in proc.stderr, proc.stderr


def lines(proc: subprocess.CompletedProcess) -> list[dict]:
    return [json.loads(ln) for ln in proc.stdout.splitlines()]


def one(proc: subprocess.CompletedProcess) -> dict:
    (out,) = lines(proc)
    return out


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "ledger.db"


@pytest.fixture
def ev(run_cli, db: Path):
    """``eval --run RUN --ledger DB [ARGS]`` on one fact (a dict) or NDJSON (a list)."""

    def run(run_id: str, fact: dict | list, *args: str) -> subprocess.CompletedProcess:
        text = "\n".join(json.dumps(f) for f in fact) if isinstance(fact, list) else json.dumps(fact)
        proc = run_cli("eval", "--run", run_id, "--ledger", str(db), *args, input=text)
        no_traceback(proc)
        return proc

    return run


def log(run_cli, db: Path, *args: str) -> subprocess.CompletedProcess:
    proc = run_cli("log", *args, "--ledger", str(db))
    no_traceback(proc)
    return proc


def snapshot(db: Path) -> list[tuple]:
    c = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return c.execute("SELECT run, seq, hash FROM events ORDER BY id").fetchall()
    finally:
        c.close()


# ---------------------------------------------------------------------- recording


def test_without_run_nothing_is_recorded(run_cli, tmp_path: Path) -> None:
    proc = run_cli("eval", input=json.dumps(CONTINUITY), env={"STOPRULE_LEDGER": str(tmp_path / "l.db")})
    assert proc.returncode == 1
    assert not set(LEDGER_KEYS) & set(one(proc)) and "retry_token" not in one(proc)
    assert not (tmp_path / "l.db").exists() and not (tmp_path / ".stoprule").exists()


MODULES_AFTER = (
    "import json, sys\n"
    "from stoprule.cli.main import main\n"
    "code = main(sys.argv[1:])\n"
    "sys.stderr.write(json.dumps(sorted(sys.modules)))\n"
    "sys.exit(code)\n"
)


def modules_after(tmp_path: Path, *argv: str) -> set[str]:
    """The modules a real ``stoprule ARGV`` process has imported when it finishes (a subprocess:
    a fresh interpreter's sys.modules is what the cold start pays for)."""
    proc = subprocess.run(
        [sys.executable, "-c", MODULES_AFTER, *argv],
        input=json.dumps(OK),
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "STOPRULE_CACHE_DIR": str(tmp_path / "cache")},
    )
    assert proc.returncode == 0, proc.stderr
    return set(json.loads(proc.stderr))


def test_cold_eval_does_not_import_the_ledger(tmp_path: Path) -> None:
    modules_after(tmp_path, "eval")  # fills the compiled-pack cache (a miss imports the compiler's libraries)
    plain = modules_after(tmp_path, "eval")
    assert "stoprule.cli.eval_cmd" in plain
    ledgerish = {"sqlite3", "_sqlite3", "hmac", "hashlib", "stoprule.cli.log_cmd"}
    assert not {m for m in plain if m in ledgerish or m.startswith("stoprule.ledger")}
    recorded = modules_after(tmp_path, "eval", "--run", "r")  # the same check sees them when they are used
    assert {"sqlite3", "stoprule.ledger.sha", "stoprule.ledger.store", "stoprule.cli.log_cmd"} <= recorded


def test_envelope_gains_run_node_kind_and_token_for_retryable_blocks(ev, db: Path) -> None:
    cases = [(OK, 0, "step", False), (CONTINUITY, 1, "blocked_attempt", True), (ESCAPE, 1, "blocked_attempt", True),
             (REVIEW, 1, "blocked_attempt", False), (FAILED, 1, "blocked_attempt", False)]  # fmt: skip
    for i, (fact, code, kind, retryable) in enumerate(cases, 1):
        proc = ev("r", fact)
        assert proc.returncode == code, proc.stderr
        env = one(proc)
        assert env["ok"] is (code == 0)
        assert {k: env[k] for k in LEDGER_KEYS} == {
            "run": "r",
            "node": f"n{i}",
            "parent": f"n{i - 1}" if i > 1 else None,
            "kind": kind,
            "retryable": retryable,
            "attempt": 1,
        }
        assert ("retry_token" in env) == retryable
    assert one(ev("r", OK, "--checkpoint"))["kind"] == "checkpoint"
    assert one(ev("r", REVIEW, "--checkpoint"))["kind"] == "blocked_attempt"


def test_default_ledger_path_and_environment(run_cli, tmp_path: Path) -> None:
    proc = run_cli("eval", "--run", "r", input=json.dumps(OK))
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / ".stoprule" / "ledger.db").exists()
    env = {"STOPRULE_LEDGER": str(tmp_path / "env.db")}
    assert run_cli("eval", "--run", "r", input=json.dumps(OK), env=env).returncode == 0
    assert one(run_cli("log", "status", "r", "--format", "json", env=env))["decisions"] == 1
    assert one(run_cli("log", "status", "r", "--format", "json"))["decisions"] == 1  # the default one


def test_batch_records_every_good_line_in_order(ev, db: Path, run_cli) -> None:
    facts = [OK, {"status": "nonsense"}, CONTINUITY, OK]
    text = "\n".join(json.dumps(f) for f in facts[:3]) + "\n{not json\n" + json.dumps(OK)
    proc = run_cli("eval", "--run", "b", "--ledger", str(db), input=text)
    assert proc.returncode == 2
    out = lines(proc)
    assert [o.get("node") or o["error"]["code"] for o in out] == ["n1", "fact.enum", "n2", "fact.not_json", "n3"]
    assert out[1]["error"]["line"] == 2 and out[3]["error"]["line"] == 4
    assert "line 2" in proc.stderr and "line 4" in proc.stderr
    assert out[2]["parent"] == "n1" and "retry_token" in out[2]
    assert len(snapshot(db)) == 3


def test_parent_flag_branches_and_unknown_nodes_are_refused(ev, db: Path) -> None:
    ev("r", [OK, OK])
    assert one(ev("r", OK, "--parent", "n1"))["parent"] == "n1"
    before = snapshot(db)
    for args, msg in (
        (("--parent", "n9"), "run 'r' has no node 'n9'"),
        (("--parent", "zzz"), "run 'r' has no node 'zzz'"),
    ):
        proc = ev("r", OK, *args)
        assert proc.returncode == 2 and msg in proc.stderr
    proc = ev("new-run", OK, "--parent", "n1")
    assert proc.returncode == 2 and "run 'new-run' has no decisions" in proc.stderr
    assert snapshot(db) == before


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--parent", "n1"), "--parent needs --run"),
        (("--retry", "x"), "--retry needs --run"),
        (("--checkpoint",), "--checkpoint needs --run"),
        (("--ledger", "x.db"), "--ledger needs --run"),
        (("--run", "r", "--retry", "t", "--parent", "n1"), "cannot be combined"),
        (("--run", " padded"), "is not valid"),
        (("--run", ""), "is not valid"),
    ],
)
def test_flag_misuse_is_exit_2(run_cli, tmp_path: Path, args, message) -> None:
    proc = run_cli("eval", *args, input=json.dumps(OK))
    no_traceback(proc)
    assert proc.returncode == 2 and message in proc.stderr
    assert not (tmp_path / ".stoprule").exists() and not (tmp_path / "x.db").exists()


def test_input_with_no_good_fact_records_nothing(run_cli, tmp_path: Path) -> None:
    for text in ("", "{oops", "[1]\n{oops"):  # nothing parses: the ledger is not even opened
        proc = run_cli("eval", "--run", "r", input=text)
        no_traceback(proc)
        assert proc.returncode == 2 and all("error" in o for o in lines(proc))
    assert not (tmp_path / ".stoprule").exists()
    proc = run_cli("eval", "--run", "r", input='{"status": 7}')  # parses, fails the fact schema
    assert proc.returncode == 2 and one(proc)["error"]["field"] == "status"
    assert run_cli("log", "status", "r").returncode == 2  # no run was recorded


# ---------------------------------------------------------------------- retry and replay


def test_retry_replay_and_consumed_through_the_cli(ev, db: Path) -> None:
    blocked = one(ev("r", CONTINUITY))
    again = ev("r", CONTINUITY, "--retry", blocked["retry_token"])
    assert again.returncode == 1
    a = one(again)
    assert (a["node"], a["parent"], a["kind"], a["attempt"]) == ("n2", "n1", "blocked_attempt", 2)
    done = ev("r", FIXED, "--retry", a["retry_token"])
    d = one(done)
    assert done.returncode == 0 and (d["node"], d["kind"], d["attempt"]) == ("n3", "step", 3)
    assert "retry_token" not in d and "replayed" not in d
    before = snapshot(db)
    replay = ev("r", json.loads(json.dumps(FIXED, sort_keys=True)), "--retry", a["retry_token"])
    r = one(replay)
    assert replay.returncode == 0 and r["replayed"] is True
    assert {k: v for k, v in r.items() if k != "replayed"} == d
    consumed = ev("r", OK, "--retry", a["retry_token"])
    assert consumed.returncode == 2
    assert "already used" in consumed.stderr and one(consumed)["error"]["code"] == "token.consumed"
    pretty = ev("r", FIXED, "--retry", a["retry_token"], "--format", "pretty")
    assert pretty.returncode == 0 and "replayed: nothing appended" in pretty.stdout
    assert snapshot(db) == before


def test_refused_tokens_say_why(ev, db: Path, run_cli) -> None:
    tok = one(ev("r", CONTINUITY))["retry_token"]
    one(ev("other", CONTINUITY))
    prefix, kid, payload, sig = tok.split(".")
    forged_payload = tokens.mint(keys.ensure(str(db) + ".keys"), "r", "n1", 2).split(".")[2]
    cases = {
        "forged": (f"{prefix}.{kid}.{forged_payload}.{sig}", "forged or altered"),
        "truncated": (tok[:-6], "truncated"),
        "malformed": ("please-let-me-stop", "not a stoprule retry token"),
    }
    before = snapshot(db)
    for code, (bad, message) in cases.items():
        proc = ev("r", FIXED, "--retry", bad)
        assert proc.returncode == 2 and message in proc.stderr, (code, proc.stderr)
        assert one(proc)["error"]["code"] == f"token.{code}"
    foreign = ev("other", FIXED, "--retry", tok)
    assert foreign.returncode == 2 and "belongs to run 'r', not 'other'" in foreign.stderr
    assert run_cli("keys", "rotate", "--ledger", str(db)).returncode == 0
    assert run_cli("keys", "retire", "k1", "--ledger", str(db)).returncode == 0
    retired = ev("r", FIXED, "--retry", tok)
    assert retired.returncode == 2 and "signed with key k1, retired" in retired.stderr
    assert one(retired)["error"]["code"] == "token.retired_key"
    assert snapshot(db) == before


def test_terminal_blocks_offer_no_retry(ev, db: Path) -> None:
    env = one(ev("r", FAILED))
    assert env["kind"] == "blocked_attempt" and env["retryable"] is False and "retry_token" not in env
    signed = tokens.mint(keys.ensure(str(db) + ".keys"), "r", "n1", 1)  # a token stoprule would never issue
    proc = ev("r", OK, "--retry", signed)
    assert proc.returncode == 2
    assert "node n1 is a terminal block (failed/unrecoverable_failure): it cannot be retried" in proc.stderr
    assert len(snapshot(db)) == 1


def test_retry_takes_exactly_one_fact(ev, db: Path) -> None:
    tok = one(ev("r", CONTINUITY))["retry_token"]
    proc = ev("r", [FIXED, FIXED], "--retry", tok)
    assert proc.returncode == 2 and "exactly one fact" in proc.stderr
    bad = ev("r", {"status": 3}, "--retry", tok)
    assert bad.returncode == 2 and "status" in bad.stderr
    assert len(snapshot(db)) == 1


# ---------------------------------------------------------------------- reading


@pytest.fixture
def history(db: Path, evaluator) -> Path:
    """Two runs written through the library (the CLI's recording is tested above): r branches at n1."""
    with Ledger.open(str(db)) as led:
        rec = Recorder(led, evaluator)
        rec.record("r", OK)
        tok = rec.record("r", CONTINUITY).token
        tok = rec.retry("r", tok, CONTINUITY).token
        rec.retry("r", tok, FIXED)
        rec.record("r", OK, parent="n1", checkpoint=True)
        rec.record("r", REVIEW)
        rec.record("s", ESCAPE)
    return db


def test_log_status(run_cli, history: Path) -> None:
    st = one(log(run_cli, history, "status", "r", "--format", "json"))
    assert {k: st[k] for k in ("tip", "tip_kind", "retryable", "verdict", "decisions", "blocked", "attempt")} == {
        "tip": "n6",
        "tip_kind": "blocked_attempt",
        "retryable": False,
        "verdict": "user_review",
        "decisions": 6,
        "blocked": 3,
        "attempt": 1,
    }
    text = log(run_cli, history, "status", "r").stdout
    assert "tip n6 blocked_attempt (terminal)" in text and "6 decisions, 3 blocked" in text


def test_log_show_tree_json_mermaid(run_cli, history: Path) -> None:
    tree = log(run_cli, history, "show", "r").stdout.splitlines()
    assert tree[1].startswith("n1 step: pass / ok")
    assert tree[2].startswith("├─ n2 blocked_attempt (retryable): continuity_failure")
    assert tree[3].startswith(
        "│  n3 blocked_attempt (retryable): continuity_failure / missing_auto_next_dispatch, attempt 2, retry of n2"
    )
    assert tree[4].startswith("│  n4 step: pass / ok, attempt 3, retry of n3")
    assert tree[5].startswith("└─ n5 checkpoint: pass / ok")
    assert tree[6].startswith("   n6 blocked_attempt (terminal): user_review / agent_blocked")
    data = one(log(run_cli, history, "show", "r", "--format", "json"))
    assert [n["node"] for n in data["nodes"]] == ["n1", "n2", "n3", "n4", "n5", "n6"]
    assert {(e["from"], e["to"], e["kind"]) for e in data["edges"]} == {
        ("n1", "n2", "next"),
        ("n2", "n3", "retry"),
        ("n3", "n4", "retry"),
        ("n1", "n5", "next"),
        ("n5", "n6", "next"),
    }
    mermaid = log(run_cli, history, "show", "r", "--format", "mermaid").stdout
    assert mermaid.startswith("flowchart TD\n")
    assert 'n2{{"n2 blocked_attempt (retryable)<br/>continuity_failure / missing_auto_next_dispatch"}}' in mermaid
    assert "n2 -. retry .-> n3" in mermaid and "n1 --> n5" in mermaid and 'n5[("n5 checkpoint' in mermaid
    assert "class n6 terminal" in mermaid


def test_log_runs(run_cli, history: Path) -> None:
    data = one(log(run_cli, history, "runs", "--format", "json"))
    assert [(r["run"], r["decisions"]) for r in data] == [("s", 1), ("r", 6)]  # most recent first
    assert [r["run"] for r in one(log(run_cli, history, "runs", "--limit", "1", "--format", "json"))] == ["s"]
    text = log(run_cli, history, "runs").stdout.splitlines()
    assert text[0].split() == ["RUN", "DECISIONS", "TIP", "KIND", "VERDICT", "UPDATED"]
    assert text[1].startswith("s ") and text[2].startswith("r ")


def test_log_export_round_trips_through_eval(run_cli, history: Path, tmp_path: Path) -> None:
    records = lines(log(run_cli, history, "export"))
    assert [(r["run"], r["node"]) for r in records] == [("r", f"n{i}") for i in range(1, 7)] + [("s", "n1")]
    assert records[3]["retry_of"] == "n3" and records[3]["fact"] == FIXED
    assert [r["node"] for r in lines(log(run_cli, history, "export", "--run", "s"))] == ["n1"]
    facts = log(run_cli, history, "export", "--facts-only").stdout
    (tmp_path / "decisions.ndjson").write_text(facts)
    again = run_cli("eval", str(tmp_path / "decisions.ndjson"))
    assert again.returncode == 1
    assert [v["verdict"] for v in lines(again)] == [r["verdict"] for r in records]
    assert lines(again) == [r["envelope"] for r in records]  # same pack: the recorded envelopes exactly


def test_log_verify_passes_then_names_the_tampered_event(run_cli, history: Path) -> None:
    proc = log(run_cli, history, "verify")
    assert proc.returncode == 0 and "ok: 2 run(s), 7 event(s)" in proc.stdout
    assert log(run_cli, history, "verify", "s").returncode == 0
    c = sqlite3.connect(history)
    for (name,) in c.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall():
        c.execute(f"DROP TRIGGER {name}")
    c.execute("UPDATE events SET body = replace(body, 'user_review', 'pass') WHERE run = 'r' AND seq = 6")
    c.commit()
    c.close()
    proc = log(run_cli, history, "verify")
    assert proc.returncode == 1
    assert "run 'r': first broken link at event 6 (node n6): its content was altered" in proc.stdout
    assert "1 of 2 run(s)" in proc.stderr
    assert log(run_cli, history, "verify", "s").returncode == 0
    data = one(log(run_cli, history, "verify", "--format", "json"))
    assert data["ok"] is False and data["breaks"][0]["seq"] == 6


@pytest.mark.parametrize(
    "args", [("status", "nope"), ("show", "nope"), ("verify", "nope"), ("export", "--run", "nope")]
)
def test_unknown_run_is_exit_2(run_cli, history: Path, args) -> None:
    before = snapshot(history)
    proc = log(run_cli, history, *args)
    assert proc.returncode == 2 and "no run 'nope'" in proc.stderr and proc.stdout == ""
    assert snapshot(history) == before


# ---------------------------------------------------------------------- bad ledgers


def sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def test_ledger_in_a_missing_directory(run_cli, tmp_path: Path) -> None:
    for argv in (
        ("eval", "--run", "r", "--ledger", str(tmp_path / "no" / "l.db")),
        ("log", "status", "r", "--ledger", str(tmp_path / "no" / "l.db")),
    ):
        proc = run_cli(*argv, input=json.dumps(OK))
        no_traceback(proc)
        assert proc.returncode == 2 and "does not exist" in proc.stderr
    assert not (tmp_path / "no").exists()
    proc = run_cli("log", "runs", "--ledger", str(tmp_path / "absent.db"))
    assert proc.returncode == 2 and "no ledger here" in proc.stderr and not (tmp_path / "absent.db").exists()


def test_corrupt_ledger_is_refused_untouched(run_cli, tmp_path: Path) -> None:
    bad = tmp_path / "bad.db"
    bad.write_bytes(os.urandom(8192))
    before = sha(bad)
    for argv in (("eval", "--run", "r"), ("log", "status", "r"), ("log", "verify"), ("keys", "rotate")):
        proc = run_cli(*argv, "--ledger", str(bad), input=json.dumps(OK))
        no_traceback(proc)
        assert proc.returncode == 2 and "not a readable SQLite database" in proc.stderr, proc.stderr
    assert sha(bad) == before


def _drop_write_privilege() -> list[str]:
    """A prefix that runs a command unable to write read-only files (root ignores file modes)."""
    if os.geteuid() != 0:
        return []
    if not shutil.which("setpriv"):
        pytest.skip("running as root without setpriv: cannot make a file read-only")
    caps = "-dac_override,-dac_read_search,-fowner"
    return ["setpriv", f"--inh-caps={caps}", f"--bounding-set={caps}"]


@pytest.mark.parametrize("writable_dir", first_by_default([True, False]))
def test_read_only_ledger(ev, db: Path, tmp_path: Path, writable_dir: bool) -> None:
    ev("r", [OK, CONTINUITY])
    with Ledger.open(str(db)) as led:
        led.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    ro = tmp_path / "ro"
    ro.mkdir()
    shutil.copy(db, ro / "l.db")
    shutil.copy(str(db) + ".keys", ro / "l.db.keys")
    path = ro / "l.db"
    path.chmod(0o444)
    if not writable_dir:
        ro.chmod(0o555)
    before = sha(path)
    env = {k: v for k, v in os.environ.items() if k != "STOPRULE_POLICY"}
    env["STOPRULE_CACHE_DIR"] = str(tmp_path / "cache")

    def run(*argv: str) -> subprocess.CompletedProcess:  # a subprocess: privileges are per process
        cmd = [*_drop_write_privilege(), sys.executable, "-m", "stoprule", *argv, "--ledger", str(path)]
        proc = subprocess.run(cmd, input=json.dumps(OK), capture_output=True, text=True, env=env, cwd=tmp_path)
        no_traceback(proc)
        return proc

    try:
        wrote = run("eval", "--run", "r")
        assert wrote.returncode == 2 and "is read-only" in wrote.stderr and "nothing was recorded" in wrote.stderr
        status = run("log", "status", "r", "--format", "json")
        assert status.returncode == 0, status.stderr
        assert one(status)["decisions"] == 2  # still readable; nothing lost
        assert run("log", "verify").returncode == 0
    finally:
        ro.chmod(0o755)
    assert sha(path) == before


# ---------------------------------------------------------------------- keys


def test_keys_commands(run_cli, ev, db: Path) -> None:
    ev("r", CONTINUITY)
    listed = run_cli("keys", "list", "--ledger", str(db), "--format", "json")
    assert listed.returncode == 0 and one(listed)["active"] == "k1"
    assert "secret" not in listed.stdout
    rotated = run_cli("keys", "rotate", "--ledger", str(db))
    assert rotated.returncode == 0 and "k2 now signs new retry tokens" in rotated.stdout
    assert one(ev("r", CONTINUITY))["retry_token"].startswith("srt1.k2.")
    active = run_cli("keys", "retire", "k2", "--ledger", str(db))
    assert active.returncode == 2 and "rotate` first" in active.stderr
    unknown = run_cli("keys", "retire", "k7", "--ledger", str(db))
    assert unknown.returncode == 2 and "no key 'k7'" in unknown.stderr
    retired = run_cli("keys", "retire", "k1", "--ledger", str(db))
    assert retired.returncode == 0 and "k1 retired" in retired.stdout
    text = run_cli("keys", "list", "--ledger", str(db)).stdout
    assert "k1" in text and "retired" in text and "k2" in text and "active" in text
    assert oct(Path(str(db) + ".keys").stat().st_mode)[-3:] == "600"
