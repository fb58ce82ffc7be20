"""One Evaluator shared by several threads gives exactly the single-threaded verdicts."""

from __future__ import annotations

import random
import threading
from typing import Any

import pytest

from stoprule import Evaluator, FactError, Verdict

N_FACTS = 12_000
N_THREADS = 4

HARD = ["mathematically_false", "missing_dependency", "unresolvable_build_error", "invalid_specification"]
SOFT = ["timeout", "context_exhaustion_handoff", "phase_incomplete", "mcp_transient"]
RISKY = ["deploy_production", "drop_database", "force_push", "delete_branch", "rotate_secrets"]
CLOSURES = ["completed", "waiting_user", "blocked", "pending_verification", None]


def _report(rng: random.Random) -> dict[str, Any]:
    report: dict[str, Any] = {
        "blocking_issues": [
            {"issue": "i", "category": rng.choice(["test_failure", "architectural", "bogus"]), "details": "d"}
        ],
        "attempts_made": [{"turn": 1, "action": "a", "result": "r"}],
        "suggested_alternatives": ["s"],
        "human_action_required": "h",
    }
    if rng.random() < 0.5:
        del report[rng.choice(sorted(report))]
    return report


def _fact(rng: random.Random, i: int) -> dict[str, Any]:
    """A fact aimed at one row of the decision table (by ``i``), with random noise."""
    f: dict[str, Any] = {"task_id": f"t{i}"}
    row = i % 16
    if row == 0:
        f.update(requires_user_review=True, review_reason=f"reason {i}")
    elif row == 1:
        f["errors"] = [{"type": rng.choice(HARD)}]
    elif row == 2:
        f["status"] = "blocked"
    elif row == 3:
        f.update(turn=rng.randint(5, 9), max_turns=5)
    elif row == 4:
        f.update(turn=rng.choice([3, 4]), max_turns=5, blocked_report=_report(rng))
    elif row == 5:
        f.update(turn=rng.choice([3, 4]), max_turns=5)
    elif row == 6:
        f["errors"] = [{"type": rng.choice(["validation", "execution", "lint"])}]
    elif row in (7, 8, 9):
        f.update(planId="p", taskState="complete", nextTaskKnown=row == 7, sameApprovedPlan=True)
        f.update(taskBoundaryStop=True, nextTaskId="task-9", replyClosureState=rng.choice(CLOSURES))
        f["nextDerivedAction"] = {"type": rng.choice(RISKY) if row == 9 else "message_subagent"}
        if rng.random() < 0.3:
            f["dispatchReceipt"] = {"planId": "p", "taskId": rng.choice(["task-9", "task-7"]), "boundAt": "now"}
        if row == 9 and rng.random() < 0.5:
            f["highRiskStop"] = True
    elif row == 10:
        f["status"] = "failed"
    elif row == 11:
        f.update(status="partial", errors=[{"type": rng.choice(SOFT)}])
    elif row == 12:
        f["uncommittedWork"] = True
    elif row == 13:
        f["availableTasks"] = [f"t{i + 1}"]
    elif row == 14:
        f["status"] = "implemented"
    else:  # everything at once, or an invalid fact
        f.update(
            status=rng.choice(["implemented", "partial", "failed", "blocked", "weird"]),
            turn=rng.randint(0, 7),
            max_turns=5,
            errors=[{"type": rng.choice(HARD + SOFT + ["other"])} for _ in range(rng.randint(0, 2))],
            uncommittedWork=rng.random() < 0.5,
            highRiskStop=rng.random() < 0.3,
            taskState=rng.choice(["complete", "in_progress"]),
            planId="p",
            derivedAction={"type": "x"},
        )
        if rng.random() < 0.1:
            f["turn"] = "three"
    return f


def _facts() -> list[dict[str, Any]]:
    rng = random.Random(20260424)
    return [_fact(rng, i) for i in range(N_FACTS)]


def _summary(result: Verdict | FactError) -> tuple:
    if isinstance(result, FactError):
        return ("error", result.code, result.field)
    return (result.verdict, result.reason, result.rule, result.ok, result.high_risk_stop, result.matched)


def _evaluate(evaluator: Evaluator, facts: list[dict[str, Any]], order: list[int]) -> list[tuple]:
    out: list[tuple] = [()] * len(facts)
    for i in order:
        try:
            out[i] = _summary(evaluator.evaluate(facts[i]))
        except FactError as exc:
            out[i] = _summary(exc)
    return out


@pytest.mark.torture
def test_threads_agree_with_a_single_thread(evaluator: Evaluator) -> None:
    facts = _facts()
    expected = [_summary(r) for r in evaluator.evaluate_many(facts, on_error="return")]
    reasons = {s[1] for s in expected if s[0] != "error"}
    assert len(reasons) == 15, f"the generated facts reach only {sorted(reasons)}"
    assert any(s[0] == "error" for s in expected)

    results: dict[int, list[tuple]] = {}
    errors: list[BaseException] = []
    barrier = threading.Barrier(N_THREADS)

    def work(t: int) -> None:
        order = list(range(N_FACTS))
        random.Random(t).shuffle(order)  # each thread walks the facts in its own order
        try:
            barrier.wait()
            results[t] = _evaluate(evaluator, facts, order)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(N_THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=300)
    assert not errors, errors
    assert sorted(results) == list(range(N_THREADS))
    for t, got in results.items():
        diff = [i for i in range(N_FACTS) if got[i] != expected[i]]
        assert not diff, (
            f"thread {t} differs on {len(diff)} facts, e.g. fact {diff[0]}: {got[diff[0]]} != {expected[diff[0]]}"
        )
