"""Durability and concurrency, as tests: concurrent writers, racing retries, SIGKILLed writers.

Writers are real processes: ``python -m stoprule`` subprocesses, and forked children that
run the CLI's own ``run(argv, ...)`` (no interpreter start-up, so hundreds of them can be
killed at random moments within a few seconds).
"""

from __future__ import annotations

import io
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest

from ledger_facts import CONTINUITY, FIXED, OK, REVIEW
from stoprule.cli.main import run as cli_run
from stoprule.ledger import Ledger, Recorder, keys, verify
from stoprule.ledger.recorder import fact_identity


def popen(args: list[str], tmp_path: Path, stdin: str | None = None) -> subprocess.Popen:
    """Start ``python -m stoprule ARGS`` with ``stdin`` already written (it fits the pipe buffer)."""
    env = {k: v for k, v in os.environ.items() if k != "STOPRULE_POLICY"}
    env["STOPRULE_CACHE_DIR"] = str(tmp_path / "cache")
    proc = subprocess.Popen(
        [sys.executable, "-m", "stoprule", *args],
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    if proc.stdin is not None:
        proc.stdin.write(stdin or "")
        proc.stdin.close()
        proc.stdin = None
    return proc


def finish(procs: Iterable[subprocess.Popen]) -> list[tuple[str, str]]:
    """Every process's (stdout, stderr), all collected before any is asserted on: a failing
    assertion must not leave the other processes' pipes open for a later test's GC to report."""
    return [proc.communicate(timeout=120) for proc in procs]


def fork(work: Callable[[], int]) -> int:
    """Run ``work`` in a forked child that exits with its return code (never returns into pytest)."""
    pid = os.fork()
    if pid == 0:
        code = 70
        try:
            code = work()
        finally:
            os._exit(code)
    return pid


def check_ledger(db: Path) -> dict[str, int]:
    """Every structural invariant of a ledger, then the hash chains; returns counts."""
    c = sqlite3.connect(db)
    try:
        assert c.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert c.execute("PRAGMA foreign_key_check").fetchall() == []
        orphans = {
            "node without event": "SELECT count(*) FROM nodes n LEFT JOIN events e ON e.id = n.event"
            " WHERE e.id IS NULL",
            "node without edge": "SELECT count(*) FROM nodes n LEFT JOIN edges g ON g.run = n.run AND g.child = n.node"
            " WHERE g.child IS NULL",
            "event without node": "SELECT count(*) FROM events e LEFT JOIN nodes n ON n.event = e.id"
            " WHERE n.node IS NULL",
            "edge without node": "SELECT count(*) FROM edges g LEFT JOIN nodes n ON n.run = g.run AND n.node = g.child"
            " WHERE n.node IS NULL",
            "run behind its events": "SELECT count(*) FROM runs r WHERE r.events != (SELECT count(*) FROM events e"
            " WHERE e.run = r.run) OR r.events != (SELECT max(seq) FROM events e WHERE e.run = r.run)",
            "events without run": "SELECT count(DISTINCT run) FROM events WHERE run NOT IN (SELECT run FROM runs)",
        }
        for what, sql in orphans.items():
            assert c.execute(sql).fetchone()[0] == 0, what
        counts = {
            "events": c.execute("SELECT count(*) FROM events").fetchone()[0],
            "retries": c.execute("SELECT count(*) FROM nodes WHERE retry_of IS NOT NULL").fetchone()[0],
            "runs": c.execute("SELECT count(*) FROM runs").fetchone()[0],
        }
    finally:
        c.close()
    with Ledger.open(str(db), readonly=True) as led:
        report = verify(led)
    assert report.ok, [b.format() for b in report.breaks]
    return counts


# ---------------------------------------------------------------------- concurrent appends


@pytest.mark.torture
@pytest.mark.timed
def test_eight_processes_append_to_shared_and_own_runs(tmp_path: Path, run_cli) -> None:
    db = tmp_path / "ledger.db"  # does not exist yet: the processes also race to create it
    per = 40
    shapes = [OK, CONTINUITY, REVIEW, {"status": "partial"}]
    procs = []
    for p in range(8):
        run = "shared" if p < 4 else f"own-{p}"
        facts = [{**shapes[i % len(shapes)], "task_id": f"p{p}-{i}"} for i in range(per)]
        stdin = "\n".join(json.dumps(f) for f in facts)
        procs.append((p, run, popen(["eval", "--run", run, "--ledger", str(db)], tmp_path, stdin)))
    outs = {}
    for (p, run, proc), (out, err) in zip(procs, finish(proc for _, _, proc in procs), strict=True):
        assert proc.returncode == 1, err  # the facts mix ok and blocked verdicts
        assert "Traceback" not in err
        envs = [json.loads(ln) for ln in out.splitlines()]
        assert len(envs) == per and all(e["run"] == run for e in envs)
        outs[p] = envs
    counts = check_ledger(db)
    assert counts["events"] == 8 * per and counts["runs"] == 5
    with Ledger.open(str(db), readonly=True) as led:
        markers: dict[str, list[str]] = {}
        for node, fact in led.records():
            markers.setdefault(node.run, []).append(json.loads(fact)["task_id"])
        shared = led.nodes("shared")
    assert sorted(markers["shared"]) == sorted(
        f"p{p}-{i}" for p in range(4) for i in range(per)
    )  # none lost or doubled
    for p in range(4, 8):
        assert markers[f"own-{p}"] == [f"p{p}-{i}" for i in range(per)]  # alone in its run: in order
    assert [n.seq for n in shared] == list(range(1, 4 * per + 1))
    shared_nodes = [e["node"] for p in range(4) for e in outs[p]]
    assert len(set(shared_nodes)) == 4 * per  # each process was told a different node for each decision
    for p in range(4):  # each process's own decisions appear in the order it submitted them
        seqs = [int(e["node"][1:]) for e in outs[p]]
        assert seqs == sorted(seqs)
    proc = run_cli("log", "verify", "--ledger", str(db))
    assert proc.returncode == 0 and "ok: 5 run(s), 320 event(s)" in proc.stdout


@pytest.mark.torture
@pytest.mark.timed
def test_a_writer_waits_for_a_busy_ledger(tmp_path: Path) -> None:
    db = tmp_path / "ledger.db"
    Ledger.open(str(db)).close()
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # hold the write lock while the CLI starts and tries to append
    proc = popen(["eval", "--run", "r", "--ledger", str(db)], tmp_path, json.dumps(OK))
    time.sleep(1.0)
    assert proc.poll() is None  # still waiting on the lock, not failed
    holder.execute("COMMIT")
    holder.close()
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert json.loads(out)["node"] == "n1"


# ---------------------------------------------------------------------- racing retries


@pytest.fixture
def blocked(tmp_path: Path, evaluator) -> tuple[Path, str]:
    db = tmp_path / "ledger.db"
    with Ledger.open(str(db)) as led:
        out = Recorder(led, evaluator).record("r", CONTINUITY)
    return db, out.token


@pytest.mark.torture
@pytest.mark.timed
def test_same_token_from_many_processes_appends_one_retry(tmp_path: Path, blocked: tuple[Path, str]) -> None:
    db, token = blocked
    procs = [
        popen(["eval", "--run", "r", "--ledger", str(db), "--retry", token], tmp_path, json.dumps(FIXED))
        for _ in range(8)
    ]
    results = []
    for proc, (out, err) in zip(procs, finish(procs), strict=True):
        assert proc.returncode == 0, err
        results.append(json.loads(out))
    assert {r["node"] for r in results} == {"n2"}
    assert sum(1 for r in results if not r.get("replayed")) == 1  # one appended, seven replayed
    assert check_ledger(db)["events"] == 2


@pytest.mark.torture
@pytest.mark.timed
@pytest.mark.parametrize("mixed", [False, True])
def test_same_token_released_at_once_by_forked_writers(
    tmp_path: Path, blocked: tuple[Path, str], mixed: bool, default_pack: Path
) -> None:
    """Children start from one barrier, so their retries overlap as closely as processes can."""
    db, token = blocked
    facts = {"fixed": FIXED, "other": CONTINUITY}
    for name, fact in facts.items():
        (tmp_path / f"{name}.json").write_text(json.dumps(fact))
    gate_r, gate_w = os.pipe()
    kids = []
    for i in range(8):
        which = "other" if mixed and i % 2 else "fixed"

        def work(which: str = which, i: int = i) -> int:
            os.close(gate_w)
            os.read(gate_r, 1)  # blocks until the parent closes the gate
            out, err = io.StringIO(), io.StringIO()
            argv = ["eval", "--policy", str(default_pack), "--run", "r", "--ledger", str(db), "--retry", token,
                    str(tmp_path / f"{which}.json")]  # fmt: skip
            code = cli_run(argv, io.BytesIO(), out, err)
            (tmp_path / f"kid{i}.json").write_text(
                json.dumps({"which": which, "code": code, "out": out.getvalue(), "err": err.getvalue()})
            )
            return 0

        kids.append(fork(work))
    os.close(gate_r)
    time.sleep(0.2)
    os.close(gate_w)
    for pid in kids:
        assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
    results = [json.loads((tmp_path / f"kid{i}.json").read_text()) for i in range(8)]
    counts = check_ledger(db)
    assert counts["events"] == 2 and counts["retries"] == 1  # exactly one retry appended
    with Ledger.open(str(db), readonly=True) as led:
        won = led.node("r", "n2")
    appended = 0
    for r in results:
        if fact_identity(facts[r["which"]])[0] == won.fact:  # the winning fact: appended once, else replayed
            assert r["code"] in (0, 1), r["err"]
            env = json.loads(r["out"])
            assert env["node"] == "n2"
            appended += not env.get("replayed")
        else:  # another fact with the spent token: refused
            assert r["code"] == 2 and "token.consumed" in r["err"]
    assert appended == 1
    assert mixed or all(r["code"] == 0 for r in results)


# ---------------------------------------------------------------------- SIGKILL


def _kill_trials(tmp_path: Path, db: Path, default_pack: Path, evaluator, trials: int) -> dict[str, int]:
    rng = random.Random(20260110)
    batch = tmp_path / "batch.ndjson"
    shapes = [OK, CONTINUITY, REVIEW, {"status": "partial"}, {"status": "failed"}]
    batch.write_text("\n".join(json.dumps({**shapes[i % 5], "task_id": f"t{i}"}) for i in range(400)) + "\n")
    runs = ["a", "b", "c"]

    def cli_writer(run: str) -> int:
        sink = io.StringIO()
        return cli_run(
            ["eval", "--policy", str(default_pack), "--run", run, "--ledger", str(db), str(batch)],
            io.BytesIO(),
            sink,
            sink,
        )

    def retry_writer(run: str, seed: int) -> int:
        pick = random.Random(seed)
        with Ledger.open(str(db)) as led:
            rec = Recorder(led, evaluator)
            while True:
                out = rec.record(run, CONTINUITY)
                while out.token is not None:
                    out = rec.retry(run, out.token, pick.choice([CONTINUITY, FIXED]))

    def rotate_writer() -> int:
        if not db.exists():  # nothing to rotate yet (`keys rotate` refuses a missing ledger: exit 2)
            return 0
        sink = io.StringIO()
        return cli_run(["keys", "rotate", "--ledger", str(db)], io.BytesIO(), sink, sink)

    tally = {"killed": 0, "finished": 0}
    for t in range(trials):
        kids = []
        for _ in range(2):  # two writers at once, each killed at its own random moment
            kind = rng.choices(["cli", "retry", "rotate"], weights=[6, 3, 1])[0]
            run = rng.choice(runs)
            seed = rng.randrange(1 << 30)
            work = {
                "cli": lambda run=run: cli_writer(run),
                "retry": lambda run=run, seed=seed: retry_writer(run, seed),
                "rotate": rotate_writer,
            }[kind]
            kids.append((fork(work), rng.uniform(0.0, 0.03)))
        start = time.monotonic()
        for pid, delay in sorted(kids, key=lambda k: k[1]):
            time.sleep(max(0.0, start + delay - time.monotonic()))
            os.kill(pid, signal.SIGKILL)
        for pid, _ in kids:
            status = os.waitpid(pid, 0)[1]
            if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL:
                tally["killed"] += 1
            else:
                tally["finished"] += 1
                assert os.waitstatus_to_exitcode(status) in (0, 1), f"trial {t}: writer exited {status}"
        if t % 40 == 39:  # check along the way too, not only at the end
            check_ledger(db)
    return tally


@pytest.mark.torture
@pytest.mark.timed
def test_sigkilled_writers_leave_no_half_written_decision(
    tmp_path: Path, default_pack: Path, evaluator, run_cli
) -> None:
    db = tmp_path / "ledger.db"  # the first trials also kill writers while they create the ledger
    tally = _kill_trials(tmp_path, db, default_pack, evaluator, trials=200)
    assert tally["killed"] + tally["finished"] == 400
    assert tally["killed"] >= 300, tally  # most writers died mid-work, not after finishing

    # and real CLI processes, killed while they append a large batch
    big = tmp_path / "big.ndjson"
    big.write_text("\n".join(json.dumps({**OK, "task_id": f"big{i}"}) for i in range(20000)) + "\n")
    rng = random.Random(7)
    for _ in range(3):
        procs = [popen(["eval", "--run", f"sub{i}", "--ledger", str(db), str(big)], tmp_path) for i in range(4)]
        time.sleep(rng.uniform(0.4, 0.8))
        for proc in procs:
            time.sleep(rng.uniform(0.0, 0.1))
            proc.send_signal(signal.SIGKILL)
        for proc in procs:
            proc.communicate(timeout=60)
            assert proc.returncode == -signal.SIGKILL

    counts = check_ledger(db)
    assert counts["events"] > 0 and counts["retries"] > 0
    ring = keys.load(str(db) + ".keys")  # the key file is whole, whatever moment rotations were killed at
    assert ring.active in ring.keys
    proc = run_cli("log", "verify", "--ledger", str(db))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # the ledger is still fully usable: a new decision and a retry after all the crashes
    with Ledger.open(str(db)) as led:
        rec = Recorder(led, evaluator)
        out = rec.record("after", CONTINUITY)
        assert rec.retry("after", out.token, FIXED).verdict.ok
    check_ledger(db)
