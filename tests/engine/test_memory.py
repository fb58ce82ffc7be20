"""Engine handles are freed with their thread and their evaluator: RSS stays flat.

durable_rules 2.0.28 keeps about 0.44 MB per ruleset that ever held a fact even after
``delete_ruleset``, so handles whose thread or evaluator is gone wait in an idle pool for
the next one with the same ruleset (stoprule.engine.durable). Before, 300 short-lived threads took
12 MB to 410 MB and 600 ``load_policy()`` cycles 806 MB.
"""

from __future__ import annotations

import gc
import os
import random
import threading
import time
from pathlib import Path

import pytest

from stoprule import Evaluator, compile_policy, load_policy
from torture import scaled

FACT = {"status": "partial", "turn": 3, "max_turns": 5}


def rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _threads(policy, n: int) -> None:  # noqa: ANN001
    for _ in range(n):
        t = threading.Thread(target=policy.evaluate, args=(FACT,))
        t.start()
        t.join()


def _cycles(pack: Path, n: int) -> None:
    for _ in range(n):
        load_policy(pack).evaluate(FACT)  # the compiled pack comes from the cache


def _flat(fn, *args, warmup: int, slack_mb: float = 6.0) -> tuple[float, float]:  # noqa: ANN001
    fn(*args[:-1], warmup)
    gc.collect()
    before = rss_mb()
    fn(*args)
    gc.collect()
    after = rss_mb()
    assert after - before < slack_mb, (before, after)
    return before, after


@pytest.mark.integration
def test_rss_flat_over_thread_lifetimes(evaluator) -> None:  # noqa: ANN001
    _flat(_threads, evaluator, 2000, warmup=50)


@pytest.mark.integration
def test_rss_flat_over_load_policy_cycles(default_pack: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STOPRULE_CACHE_DIR", str(tmp_path))
    _flat(_cycles, default_pack, 300, warmup=20)


@pytest.mark.torture
def test_rss_flat_long(evaluator, default_pack: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    monkeypatch.setenv("STOPRULE_CACHE_DIR", str(tmp_path))
    print("threads:", _flat(_threads, evaluator, scaled(20_000, 2000), warmup=100))
    print("load_policy cycles:", _flat(_cycles, default_pack, scaled(5000, 500), warmup=50))


@pytest.mark.integration
def test_handles_are_not_shared_while_in_use(default_pack: Path) -> None:
    """Evaluators come and go while threads evaluate: every verdict is still the
    single-threaded one (an idle handle is never taken while a thread holds it)."""
    _handles_race(default_pack, seconds=0.5)


@pytest.mark.torture
def test_handles_are_not_shared_while_in_use_long(default_pack: Path) -> None:
    _handles_race(default_pack, seconds=10.0)


def _handles_race(default_pack: Path, seconds: float) -> None:
    rng = random.Random(7)
    facts = [
        {
            "status": rng.choice(["partial", "failed", "implemented", "blocked"]),
            "turn": rng.randint(0, 9),
            "max_turns": 8,
            "uncommittedWork": rng.random() < 0.3,
        }
        for _ in range(300)
    ]
    compiled = compile_policy(default_pack, cache=False)
    want = [Evaluator(compiled).evaluate(f).rule for f in facts]
    errors: list[str] = []
    stop = threading.Event()

    def worker() -> None:
        local = Evaluator(compiled)
        while not stop.is_set():
            got = [local.evaluate(f).rule for f in facts]
            if got != want:
                errors.append("mismatch")
            local = Evaluator(compiled)  # the old one's handles go idle

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        Evaluator(compiled).evaluate(FACT)
        gc.collect()
    stop.set()
    for t in threads:
        t.join()
    assert not errors
