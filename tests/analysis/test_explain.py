"""`stoprule explain`: winner, losers on priority, and the first failing condition of the rest."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from factgen import random_fact
from stoprule.analysis.explain import explain, render_pretty
from stoprule.engine.build import compile_pack
from stoprule.engine.evaluator import Evaluator

BOUNDARY = {
    "planId": "plan-a",
    "currentTask": "task-8",
    "taskState": "complete",
    "nextTaskKnown": True,
    "nextTaskId": "task-9",
    "sameApprovedPlan": True,
    "taskBoundaryStop": True,
    "nextDerivedAction": {"type": "message_subagent"},
    "replyClosureState": "completed",
}


@pytest.fixture(scope="module")
def ctx(default_pack: Path):  # noqa: ANN201
    return compile_pack(default_pack)


def _by_rule(exp: dict) -> dict[str, dict]:
    return {r["rule"]: r for r in exp["rules"]}


def test_winner_losers_and_failed_conditions(ctx) -> None:  # noqa: ANN001
    verdict, exp = explain(ctx.checked, Evaluator(ctx.compiled), BOUNDARY)
    rules = _by_rule(exp)
    assert verdict.reason == "missing_auto_next_dispatch"
    assert rules["continuity.auto_next_obligation"]["status"] == "won"
    lost = rules["continuity.missing_dispatch_receipt"]
    assert (lost["status"], lost["lost_to"], lost["lost_on"]) == (
        "matched",
        "continuity.auto_next_obligation",
        "priority",
    )
    blocked = rules["review.agent_blocked"]["failed"]
    assert blocked["condition"] == "status eq blocked"
    assert blocked["actual"] == "(absent)"
    lines = (Path(ctx.checked.root) / "review.yaml").read_text().splitlines()
    assert (blocked["file"], blocked["line"]) == ("review.yaml", lines.index("    when: {status: blocked}") + 1)
    # the escape hatch rules fail on the named condition, located where it is declared
    hatch = rules["escape_hatch.blocked_report_required"]["failed"]
    assert hatch["file"] == "vocabulary.yaml" and hatch["condition"] == "turn gte max_turns - 2"
    assert hatch["compared_to"] == {"field": "max_turns", "actual": "(absent)"}


def test_failed_value_is_the_facts_value(ctx) -> None:  # noqa: ANN001
    fact = {**BOUNDARY, "replyClosureState": "waiting_user"}
    _, exp = explain(ctx.checked, Evaluator(ctx.compiled), fact)
    failed = _by_rule(exp)["continuity.auto_next_obligation"]["failed"]
    assert failed["field"] == "replyClosureState"
    assert failed["actual"] == "waiting_user"
    assert failed["wanted"].startswith("not replyClosureState in")


def test_list_element_culprit_names_the_element(ctx) -> None:  # noqa: ANN001
    fact = {
        "status": "partial",
        "turn": 3,
        "max_turns": 5,
        "blocked_report": {
            "blocking_issues": [{"issue": "x", "category": "test_failure", "details": "d"}],
            "attempts_made": [{"turn": 1, "action": "a", "result": "r"}],
            "suggested_alternatives": ["s"],
            "human_action_required": "h",
        },
    }
    _, exp = explain(ctx.checked, Evaluator(ctx.compiled), fact)
    failed = _by_rule(exp)["escape_hatch.report_unknown_category"]["failed"]
    assert failed["field"] == "blocked_report.blocking_issues"
    assert "none matching" in failed["actual"]


def test_explanations_agree_with_the_engine_on_random_facts(ctx) -> None:  # noqa: ANN001
    ev = Evaluator(ctx.compiled)
    rng = random.Random(7)
    for _ in range(300):
        fact = random_fact(rng)
        verdict, exp = explain(ctx.checked, ev, fact)
        matched = {m.rule for m in verdict.matched}
        statuses = _by_rule(exp)
        assert {r for r, e in statuses.items() if e["status"] in ("won", "matched")} == matched
        assert statuses[verdict.rule]["status"] == "won"
        for e in statuses.values():
            if e["status"] == "not matched":
                assert e["failed"]["condition"] and e["failed"]["line"] >= 1
        assert render_pretty(exp).startswith(f"Verdict {verdict.verdict} / {verdict.reason}")


def test_cli_pretty_and_json(run_cli, tmp_path: Path) -> None:  # noqa: ANN001
    f = tmp_path / "fact.json"
    f.write_text(json.dumps(BOUNDARY))
    pretty = run_cli("explain", str(f))
    assert pretty.returncode == 1, pretty.stderr
    assert "decided by continuity.auto_next_obligation" in pretty.stdout
    assert "lost to continuity.auto_next_obligation on priority" in pretty.stdout
    assert "review.agent_blocked (priority 1000): needs status eq blocked, but status is (absent)" in pretty.stdout
    js = run_cli("explain", "--format", "json", str(f))
    data = json.loads(js.stdout)
    assert data["verdict"]["rule"] == "continuity.auto_next_obligation"
    assert {r["status"] for r in data["rules"]} == {"won", "matched", "not matched"}


def test_cli_bad_fact_exit_2(run_cli, tmp_path: Path) -> None:  # noqa: ANN001
    f = tmp_path / "fact.json"
    f.write_text('{"status": "weird"}')
    out = run_cli("explain", str(f))
    assert out.returncode == 2
    assert "fact.enum" in out.stderr and "status" in out.stderr
    assert "Traceback" not in out.stderr
