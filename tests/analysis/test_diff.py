"""``stoprule diff``: verdict changes between two packs, grouped, each with an example that the real
engine confirms on both packs; declaration changes listed; exit 1 only when a verdict changes."""

from __future__ import annotations

import json
import random
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from packgen import random_cond, random_pack, random_small_fact
from stoprule import Evaluator, NoRuleMatched, PolicyError, load_policy
from stoprule.analysis import diff_packs
from stoprule.analysis.queries import outcome_of
from stoprule.engine.build import compile_pack

RunCli = Callable[..., subprocess.CompletedProcess]


@pytest.fixture
def old(tmp_path: Path, default_pack: Path) -> Path:
    dest = tmp_path / "old"
    dest.mkdir()
    for f in default_pack.glob("*.yaml"):
        shutil.copy(f, dest / f.name)
    return dest


@pytest.fixture
def new(tmp_path: Path, old: Path) -> Path:
    dest = tmp_path / "new"
    shutil.copytree(old, dest)
    return dest


def edit(pack: Path, name: str, before: str, after: str) -> None:
    path = pack / name
    text = path.read_text(encoding="utf-8")
    assert text.count(before) == 1, f"{name} changed shape: {before!r}"
    path.write_text(text.replace(before, after), encoding="utf-8")


def outcome(pack: Path, fact: dict[str, Any], engines: dict[Path, Evaluator]) -> tuple[str, str, str] | None:
    if pack not in engines:
        engines[pack] = load_policy(pack, cache=False)
    try:
        v = engines[pack].evaluate(fact)
    except NoRuleMatched as exc:
        assert exc.code == "policy.no_rule", exc
        return None
    return (v.verdict, v.reason, v.rule)


def diff(old: Path, new: Path) -> dict[str, Any]:
    report = diff_packs(compile_pack(old).checked, compile_pack(new).checked).to_dict()
    engines: dict[Path, Evaluator] = {}
    for c in report["changes"]:  # every example, on both packs, with the real engine
        want_old = (c["old"]["verdict"], c["old"]["reason"]) if c["old"] else None
        want_new = (c["new"]["verdict"], c["new"]["reason"]) if c["new"] else None
        examples = [(r["example"], r["old_rule"], r["new_rule"]) for r in c["rules"]]
        examples += [(r["example"], None, None) for r in c["regions"]]
        for ex, old_rule, new_rule in examples:
            got_old, got_new = outcome(old, ex["fact"], engines), outcome(new, ex["fact"], engines)
            assert (got_old[:2] if got_old else None) == want_old, (c["title"], ex)
            assert (got_new[:2] if got_new else None) == want_new, (c["title"], ex)
            if old_rule is not None:
                assert got_old is not None and got_old[2] == old_rule["rule"]
            if new_rule is not None:
                assert got_new is not None and got_new[2] == new_rule["rule"]
    return report


def titles(report: dict[str, Any]) -> set[str]:
    return {c["title"] for c in report["changes"]}


def test_identical_packs(old: Path, new: Path) -> None:
    report = diff(old, new)
    assert report["changed"] is False and report["changes"] == []
    assert report["declarations"] == {"added": [], "removed": [], "changed": [], "moved": []}
    assert report["schema_changed"] is False


@pytest.mark.torture  # ~3 s of exhaustive diff; the default tier runs the same edit as docs/audit.md's `diff old new`
def test_a_moved_category(old: Path, new: Path) -> None:
    edit(new, "vocabulary.yaml", "    timeout: Operation exceeded its time limit\n", "")
    edit(new, "vocabulary.yaml", "  hard:", "  hard:\n    timeout: Operation exceeded its time limit")
    report = diff(old, new)
    assert {
        "auto_continue/soft_blocker -> user_review/hard_blocker",
        "pass/ok -> user_review/hard_blocker",
        "user_review/unclassified_blocker -> user_review/hard_blocker",
    } <= titles(report)
    assert all(c["title"].endswith("-> user_review/hard_blocker") for c in report["changes"])
    ok = next(c for c in report["changes"] if c["title"] == "pass/ok -> user_review/hard_blocker")
    assert ok["rules"][0]["example"]["fact"] == {"errors": [{"type": "timeout"}]}
    # with a blocked report naming the human action, the hard blocker's own rule for it wins
    assert [(r["old_rule"]["rule"], r["new_rule"]["rule"]) for r in ok["rules"]] == [
        ("progress.ok", "review.hard_blocker"),
        ("progress.ok", "review.hard_blocker_with_report"),
    ]
    moved = report["declarations"]["moved"]
    assert {"section": "blocker_categories", "what": "timeout", "from": "soft", "to": "hard"} in moved


@pytest.mark.integration
def test_a_changed_priority(old: Path, new: Path) -> None:
    edit(
        new,
        "progress.yaml",
        "  - id: uncommitted_work\n    priority: 300",
        "  - id: uncommitted_work\n    priority: 450",
    )
    report = diff(old, new)
    assert titles(report) == {
        "auto_continue/soft_blocker -> auto_continue/uncommitted_work",
        "auto_continue/unlogged_question -> auto_continue/uncommitted_work",
    }
    (change,) = [c for c in report["changes"] if c["title"].startswith("auto_continue/soft_blocker")]
    assert change["rules"][0]["example"]["fact"] == {"status": "partial", "uncommittedWork": True}
    assert report["declarations"]["changed"] == [
        {
            "section": "rules",
            "name": "progress.uncommitted_work",
            "details": [{"path": "priority", "old": 300, "new": 450}],
        }
    ]


@pytest.mark.integration
def test_a_changed_reason(old: Path, new: Path) -> None:
    # the plain row-14 rule (available_tasks_with_blockers, its sibling, keeps its reason)
    tail = "\n    message: >-\n      Tasks remain available ({availableTasks}); continue"
    edit(new, "progress.yaml", "    reason: available_tasks" + tail, "    reason: tasks_remaining" + tail)
    report = diff(old, new)
    assert titles(report) == {"auto_continue/available_tasks -> auto_continue/tasks_remaining"}
    assert report["changes"][0]["rules"][0]["example"]["fact"] == {"availableTasks": ["s1"]}


def test_a_removed_catch_all(old: Path, new: Path) -> None:
    edit(new, "progress.yaml", "    when: true\n", "    when: {status: implemented}\n")
    report = diff(old, new)
    assert "pass/ok -> (no rule: policy.no_rule)" in titles(report)


@pytest.mark.integration
def test_declaration_changes_without_verdict_changes(old: Path, new: Path) -> None:
    edit(new, "vocabulary.yaml", "    description: Unrecoverable failure.", "    description: Gave up.")
    edit(
        new,
        "vocabulary.yaml",
        "  - id: rotate_secrets",
        "  - id: wipe_disk\n    description: x\n    when: {nextDerivedAction.type: wipe_disk}\n  - id: rotate_secrets",
    )
    report = diff(old, new)
    decl = report["declarations"]
    assert {(c["section"], c["name"]) for c in decl["changed"]} == {("verdicts", "failed")}
    assert [(a["section"], a["name"]) for a in decl["added"]] == [("high_risk_stops", "wipe_disk")]
    # the new stop changes verdicts: a deploy of wipe_disk was a continuity failure
    assert "continuity_failure/missing_dispatch_receipt -> pass/high_risk_stop" in titles(report)


@pytest.mark.integration
def test_differing_schemas_use_the_union(old: Path, new: Path) -> None:
    edit(new, "schema.yaml", "    task_id:\n", "    urgent: {type: bool, default: false}\n    task_id:\n")
    edit(new, "progress.yaml", "    when: {status: failed}", "    when: {any: [{status: failed}, {urgent: true}]}")
    report = diff(old, new)
    assert report["schema_changed"] and any("urgent" in n for n in report["schema_notes"])
    assert "pass/ok -> failed/unrecoverable_failure" in titles(report)
    assert ("schema", "urgent") in {(a["section"], a["name"]) for a in report["declarations"]["added"]}


# ---------------------------------------------------------------- CLI


def test_cli_identical_exit_0(run_cli: RunCli, old: Path, new: Path) -> None:
    proc = run_cli("diff", str(old), str(new))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Verdict changes: none" in proc.stdout and "diff took" in proc.stdout


@pytest.mark.integration
def test_cli_changes_exit_1(run_cli: RunCli, old: Path, new: Path) -> None:
    # the plain row-14 rule (available_tasks_with_blockers, its sibling, keeps its reason)
    tail = "\n    message: >-\n      Tasks remain available ({availableTasks}); continue"
    edit(new, "progress.yaml", "    reason: available_tasks" + tail, "    reason: tasks_remaining" + tail)
    proc = run_cli("diff", str(old), str(new), "--format", "json")
    assert proc.returncode == 1, proc.stderr
    out = json.loads(proc.stdout)
    assert [c["title"] for c in out["changes"]] == ["auto_continue/available_tasks -> auto_continue/tasks_remaining"]
    proc = run_cli("diff", str(old), str(new))
    assert proc.returncode == 1
    assert "auto_continue/available_tasks -> auto_continue/tasks_remaining" in proc.stdout
    assert "~ rules: progress.available_tasks: reason:" in proc.stdout


def test_cli_bad_input_exit_2(run_cli: RunCli, old: Path, new: Path, tmp_path: Path) -> None:
    proc = run_cli("diff", str(old), str(tmp_path / "nowhere"))
    assert proc.returncode == 2 and "pack.not_found" in proc.stderr
    edit(new, "progress.yaml", "    priority: 500", "    priority: high")
    proc = run_cli("diff", str(old), str(new), "--format", "json")
    assert proc.returncode == 2 and proc.stdout == ""  # a policy error goes to stderr in every format
    assert re.search(r"^progress\.yaml:\d+:\d+: ", proc.stderr, re.M), proc.stderr
    assert f"error(s) in {new}" in proc.stderr


@pytest.mark.integration
@pytest.mark.parametrize(
    "seeds", [range(50), pytest.param(range(50, 150), marks=pytest.mark.torture)], ids=["seeds 0-49", "seeds 50-149"]
)
def test_random_pack_pairs(tmp_path: Path, seeds: range) -> None:
    """A random pack and a one-rule mutation of it: every random fact whose verdict or reason differs
    falls in a reported group, and every example differs as claimed (reference semantics; see
    tests/analysis/test_audit.py's test_random_packs for why not the engine). The first 50 seeds
    in the default run, the other 100 in the torture tier."""
    checked = 0
    for seed in seeds:
        rng = random.Random(seed)
        text = random_pack(rng)
        lines = text.split("\n")
        i = rng.choice([n for n, ln in enumerate(lines) if ln.startswith("  - {id:")])
        r = rng.random()
        if r < 0.3:
            lines[i] = lines[i].replace("priority: ", "priority: 1", 1)
        elif r < 0.6:
            lines[i] = lines[i].replace("reason: x", "reason: y", 1)
        else:
            lines[i] = lines[i].split("when: ")[0] + f"when: {random_cond(rng)}, verdict: pass, reason: w, message: m}}"
        (tmp_path / f"a{seed}").mkdir()
        (tmp_path / f"b{seed}").mkdir()
        (tmp_path / f"a{seed}" / "p.yaml").write_text(text)
        (tmp_path / f"b{seed}" / "p.yaml").write_text("\n".join(lines))
        try:
            a, b = compile_pack(tmp_path / f"a{seed}").checked, compile_pack(tmp_path / f"b{seed}").checked
        except PolicyError:
            continue
        report = diff_packs(a, b).to_dict()

        def label(ctx: Any, fact: dict[str, Any]) -> tuple[str, str] | None:
            top = outcome_of(ctx.rules, ctx.schema.validate(fact))
            return (ctx.rules[top[0]].verdict, ctx.rules[top[0]].reason) if top else None

        groups = {
            (tuple(c["old"].values()) if c["old"] else None, tuple(c["new"].values()) if c["new"] else None): c
            for c in report["changes"]
        }
        for key, c in groups.items():
            for row in c["rules"]:
                assert (label(a, row["example"]["fact"]), label(b, row["example"]["fact"])) == key
        frng = random.Random(seed)
        for _ in range(150):
            fact = random_small_fact(frng)
            la, lb = label(a, fact), label(b, fact)
            assert la == lb or (la, lb) in groups, (seed, fact, la, lb)
        checked += 1
    assert checked >= len(seeds) // 5
