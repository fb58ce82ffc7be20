"""The stop hook's journal: a decision is durable once appended, and the next command that opens
the ledger folds it in, in order, with the time it was decided; once, whatever is killed when.

SIGKILL trials (torture tier): hook writers and folding readers, real forked processes killed at
random moments; every decision a writer acknowledged (its append returned) is in the ledger
exactly once, no decision is there twice, and ``log verify`` is ok.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from ledger_facts import CONTINUITY, ESCAPE, OK, REVIEW
from stoprule.ledger import Ledger, Recorder, journal, verify
from stoprule.ledger.folding import pending


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


def check_ledger(db: Path) -> int:
    """SQLite's integrity and foreign-key checks, then ``log verify``; the number of events."""
    c = sqlite3.connect(db)
    try:
        assert c.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert c.execute("PRAGMA foreign_key_check").fetchall() == []
        events = c.execute("SELECT count(*) FROM events").fetchone()[0]
    finally:
        c.close()
    with Ledger.open(str(db), readonly=True) as led:
        report = verify(led)
    assert report.ok, [b.format() for b in report.breaks]
    return int(events)


def _journal(db: Path, evaluator, run: str, fact: dict) -> str:  # noqa: ANN001
    """What ``stoprule hook`` does with a decision (cli/hook_cmd.record, a ledger file)."""
    verdict = evaluator.evaluate(fact)
    kind, retryable = journal.decision_kind(verdict, evaluator)
    return journal.append(str(db), run, fact, verdict.to_dict(), kind=kind, retryable=retryable)


def _facts(db: Path) -> list[dict]:
    with Ledger.open(str(db), readonly=True) as led:
        return [json.loads(body) for _, body in led.records()]


def test_journaled_decisions_are_folded_in_by_the_next_open_in_order(tmp_path: Path, evaluator) -> None:  # noqa: ANN001
    db = tmp_path / "ledger.db"
    with Ledger.open(str(db)) as led:  # a decision recorded directly, then three journaled
        Recorder(led, evaluator).record("s", OK)
    ats = [_journal(db, evaluator, "s", {**f, "task_id": f"t{i}"}) for i, f in enumerate([OK, CONTINUITY, REVIEW])]
    assert pending(str(db))
    with Ledger.open(str(db), readonly=True) as led:  # a reader folds too
        nodes = led.nodes("s")
        assert [n.body["at"] for n in nodes[1:]] == ats  # decided then, not folded then
        assert [n.kind for n in nodes] == ["step", "step", "blocked_attempt", "blocked_attempt"]
        assert [n.retryable for n in nodes] == [False, False, True, False]
        assert verify(led).ok
    assert not pending(str(db)) and not list(tmp_path.glob("*.journal*"))


def test_a_folded_decision_is_the_one_the_recorder_would_append(tmp_path: Path, evaluator) -> None:  # noqa: ANN001
    direct, folded = tmp_path / "a.db", tmp_path / "b.db"
    with Ledger.open(str(direct)) as led:
        Recorder(led, evaluator).record("s", CONTINUITY)
    _journal(folded, evaluator, "s", CONTINUITY)
    with Ledger.open(str(direct)) as a, Ledger.open(str(folded)) as b:
        (x,), (y,) = a.nodes("s"), b.nodes("s")
        assert {**x.body, "at": None} == {**y.body, "at": None} and x.fact == y.fact
        assert x.to_dict() | {"at": None, "event": None} == y.to_dict() | {"at": None, "event": None}


def test_folded_stops_make_the_retry_chains_record_stop_makes(tmp_path: Path, evaluator) -> None:  # noqa: ANN001
    """Blocked, kept working, stopped again: the block's retry, whether the stops were folded
    one at a time or together (Recorder.record_stop on a ledger opened directly is the reference)."""
    stops = [CONTINUITY, ESCAPE, OK, CONTINUITY, REVIEW, OK, CONTINUITY]
    direct = tmp_path / "direct.db"
    with Ledger.open(str(direct)) as led:
        rec = Recorder(led, evaluator)
        for fact in stops:
            rec.record_stop("s", fact)
        want = [(n.node, n.parent, n.edge, n.attempt, n.retry_of) for n in led.nodes("s")]
    for folds_after in ({0, 1, 2, 3, 4, 5, 6}, {6}, {1, 4, 6}):
        db = tmp_path / f"folded-{len(folds_after)}.db"
        for i, fact in enumerate(stops):
            _journal(db, evaluator, "s", fact)
            if i in folds_after:
                Ledger.open(str(db)).close()
        with Ledger.open(str(db), readonly=True) as led:
            assert [(n.node, n.parent, n.edge, n.attempt, n.retry_of) for n in led.nodes("s")] == want
            assert verify(led).ok


def test_a_line_that_is_not_a_decision_is_set_aside_and_the_rest_is_folded(tmp_path: Path, evaluator) -> None:  # noqa: ANN001
    db = tmp_path / "ledger.db"
    path = Path(journal.journal_path(str(db)))
    _journal(db, evaluator, "s", OK)
    with path.open("ab") as fh:  # a hook killed mid-line (never acknowledged), then garbage, then a bad run id
        fh.write(b'\n{"v":1,"run":"s","at":"2026')
    _journal(db, evaluator, "s", REVIEW)  # its own line, whatever came before
    with path.open("ab") as fh:
        fh.write(b'\nnot json\n{"v":1,"run":" bad ","at":"x","kind":"step","retryable":false,"verdict":{},"fact":{}}\n')
    with Ledger.open(str(db)) as led:
        assert [n.verdict for n in led.nodes("s")] == ["pass", "user_review"]
    rejected = Path(str(path) + ".rejected").read_bytes().splitlines()
    assert len(rejected) == 3 and rejected[0].startswith(b'{"v":1,"run":"s","at":"2026')


def test_a_fold_killed_after_its_commit_is_not_folded_twice(tmp_path: Path, evaluator) -> None:  # noqa: ANN001
    db = tmp_path / "ledger.db"
    with Ledger.open(str(db)) as led:
        Recorder(led, evaluator).record("other", OK)  # event 1
    _journal(db, evaluator, "s", OK)
    _journal(db, evaluator, "s", REVIEW)
    path = journal.journal_path(str(db))
    saved = Path(path).read_bytes()
    with Ledger.open(str(db)):  # the fold: events 2 and 3
        pass
    Path(path + ".fold-1").write_bytes(saved)  # as if it had died between its commit and removing the file
    with Ledger.open(str(db)) as led:
        assert [n.verdict for n in led.nodes("s")] == ["pass", "user_review"]
        assert verify(led).ok
    assert not Path(path + ".fold-1").exists()


def test_a_fold_killed_before_its_commit_is_folded_again(tmp_path: Path, evaluator) -> None:  # noqa: ANN001
    db = tmp_path / "ledger.db"
    with Ledger.open(str(db)) as led:
        Recorder(led, evaluator).record("other", OK)
    _journal(db, evaluator, "s", OK)
    path = journal.journal_path(str(db))
    os.rename(path, path + ".fold-1")  # taken aside after event 1, then killed before its commit
    with Ledger.open(str(db)) as led:
        Recorder(led, evaluator).record("other", OK)  # meanwhile event 2 is someone else's (folded first, though)
    with Ledger.open(str(db)) as led:
        assert [n.verdict for n in led.nodes("s")] == ["pass"]
        assert led.status("other").decisions == 2 and verify(led).ok


def test_a_hook_that_opened_the_journal_just_before_a_fold_writes_the_new_one(
    tmp_path: Path,
    evaluator,
    monkeypatch: pytest.MonkeyPatch,  # noqa: ANN001
) -> None:
    from stoprule._util import native

    db = tmp_path / "ledger.db"
    _journal(db, evaluator, "s", OK)
    real, folded = native.flock, []

    def flock(fd: int, op: int) -> None:
        if op == native.LOCK_SH and not folded:  # the hook has the old journal open: a command folds it now,
            folded.append(1)
            with Ledger.open(str(db)):
                pass
            _journal(db, evaluator, "t", CONTINUITY)  # and another hook starts a new journal
        real(fd, op)

    monkeypatch.setattr(native, "flock", flock)
    _journal(db, evaluator, "s", REVIEW)
    monkeypatch.undo()
    assert folded
    with Ledger.open(str(db)) as led:
        assert [n.verdict for n in led.nodes("s")] == ["pass", "user_review"]
        assert [n.verdict for n in led.nodes("t")] == ["continuity_failure"]


def test_a_reader_that_cannot_write_reads_without_the_journal(tmp_path: Path, evaluator) -> None:  # noqa: ANN001
    if os.geteuid() == 0:
        pytest.skip("root writes anywhere")
    db = tmp_path / "ledger.db"
    with Ledger.open(str(db)) as led:
        Recorder(led, evaluator).record("s", OK)
    _journal(db, evaluator, "s", REVIEW)
    db.chmod(0o400)
    try:
        with Ledger.open(str(db), readonly=True) as led:
            assert led.status("s").decisions == 1
    finally:
        db.chmod(0o600)


# ---------------------------------------------------------------------- SIGKILL


def _kill_trials(tmp_path: Path, db: Path, evaluator, trials: int) -> dict[str, int]:  # noqa: ANN001
    rng = random.Random(20261127)
    acks = tmp_path / "acks"
    shapes = [OK, CONTINUITY, REVIEW, {"status": "partial"}]

    def hook_writer(n: int) -> int:  # one stop after another, each acknowledged once its append returned
        for i in range(1000):
            task = f"w{n}-{i}"
            _journal(db, evaluator, f"run{n % 3}", {**shapes[i % 4], "task_id": task})
            fd = os.open(acks, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            os.write(fd, (task + "\n").encode())
            os.close(fd)
        return 0

    def folder() -> int:  # any command that opens the ledger
        while True:
            with Ledger.open(str(db)) as led:
                if rng.random() < 0.3:
                    Recorder(led, evaluator).record("direct", OK)

    tally = {"killed": 0, "finished": 0}
    for t in range(trials):
        kids = [(fork(lambda n=t * 10 + k: hook_writer(n)), rng.uniform(0.0, 0.04)) for k in range(2)]
        kids.append((fork(folder), rng.uniform(0.0, 0.04)))
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
    return tally


@pytest.mark.torture
@pytest.mark.timed
def test_sigkilled_hooks_and_folds_lose_no_acknowledged_decision(tmp_path: Path, evaluator) -> None:  # noqa: ANN001
    db = tmp_path / "ledger.db"
    tally = _kill_trials(tmp_path, db, evaluator, trials=150)
    assert tally["killed"] >= 300, tally
    with Ledger.open(str(db)):  # the next command folds what is left
        pass
    acked = (tmp_path / "acks").read_text().split()
    tasks = [f.get("task_id") for f in _facts(db) if "task_id" in f]
    assert len(tasks) == len(set(tasks)), "a decision was recorded twice"
    missing = set(acked) - set(tasks)
    assert not missing, f"{len(missing)} acknowledged decisions lost, e.g. {sorted(missing)[:3]}"
    assert len(acked) > 200, len(acked)
    events = check_ledger(db)  # SQLite's checks, and `log verify`
    assert events >= len(acked)
    assert not pending(str(db))
