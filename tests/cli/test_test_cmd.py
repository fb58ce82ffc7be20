"""`stoprule test` in process (``run_cli``), and the coverage / MC/DC computation on tiny packs."""

from __future__ import annotations

import json
import shutil
import subprocess
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from stoprule.analysis.cases import load_cases
from stoprule.analysis.coverage import Coverage, Observation, compute_coverage
from stoprule.engine.build import compile_pack
from stoprule.engine.evaluator import Evaluator

# Conditions of the default pack that no pair of valid facts can show independent (see docs/testing.md).
# None: receipt_linked no longer restates `dispatchReceipt.taskId exists`, which its
# `dispatchReceipt.taskId eq nextTaskId` implies (it used to be the one infeasible condition).
DEFAULT_INFEASIBLE: set[tuple[str, str]] = set()

FAILING = """\
cases:
  - name: wrong verdict
    fact: {planId: p, taskState: complete, derivedAction: {type: x}}
    expect: {verdict: pass, ok: true, reason: missing_dispatch_receipt}
  - name: right verdict
    fact: {status: implemented}
    expect: {verdict: pass}
"""


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def _no_traceback(proc: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr


@pytest.fixture(scope="module")
def default_case_count(default_pack: Path) -> int:
    return len(load_cases([default_pack / "tests"]))


@pytest.fixture
def pack_copy(tmp_path: Path, default_pack: Path) -> Path:
    dest = tmp_path / "pack"
    shutil.copytree(default_pack, dest)
    return dest


# --- running cases -------------------------------------------------------------------------------


def test_default_cases_all_pass(run_cli, default_pack: Path, default_case_count: int) -> None:
    proc = run_cli("test", "--policy", str(default_pack))
    _no_traceback(proc)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith(f"ok: {default_case_count} cases passed")
    assert "FAIL" not in proc.stdout


def test_bundled_pack_and_its_tests_are_the_default(run_cli, default_case_count: int) -> None:
    proc = run_cli("test", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["ok"] is True
    assert out["summary"]["cases"] == out["summary"]["passed"] == default_case_count
    assert out["failures"] == []


def test_failing_case_exits_1_with_one_diff_line(run_cli, tmp_path: Path, default_pack: Path) -> None:
    bad = _write(tmp_path / "bad.yaml", FAILING)
    proc = run_cli("test", "--policy", str(default_pack), str(bad))
    _no_traceback(proc)
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    fails = [ln for ln in lines if " FAIL " in ln]
    assert fails == [
        f"{bad}:2: FAIL wrong verdict: verdict: expected 'pass', got 'continuity_failure'; ok: expected True, got False"
    ]
    assert lines[-1] == "FAILED: 1 of 2 cases (2 facts, 1 file)"


def test_failing_case_json_is_structured(run_cli, tmp_path: Path, default_pack: Path) -> None:
    bad = _write(tmp_path / "bad.yaml", FAILING)
    proc = run_cli("test", "--policy", str(default_pack), "--format", "json", str(bad))
    assert proc.returncode == 1
    out = json.loads(proc.stdout)
    assert out["ok"] is False
    assert out["summary"] == {"cases": 2, "passed": 1, "failed": 1, "facts": 2, "files": 1}
    [failure] = out["failures"]
    assert (failure["name"], failure["file"], failure["line"]) == ("wrong verdict", str(bad), 2)
    assert failure["mismatches"] == [
        {"fact": 0, "key": "verdict", "expected": "pass", "actual": "continuity_failure"},
        {"fact": 0, "key": "ok", "expected": True, "actual": False},
    ]
    assert [c["passed"] for c in out["cases"]] == [False, True]
    assert "coverage" not in out


def test_junit_parses_with_the_right_counts(run_cli, tmp_path: Path, default_pack: Path, default_case_count) -> None:
    bad = _write(tmp_path / "bad.yaml", FAILING)
    proc = run_cli("test", "--policy", str(default_pack), "--format", "junit", str(default_pack / "tests"), str(bad))
    assert proc.returncode == 1
    root = ET.fromstring(proc.stdout)
    assert root.tag == "testsuites"
    assert int(root.get("tests")) == default_case_count + 2
    assert int(root.get("failures")) == 1
    cases = root.findall("./testsuite/testcase")
    assert len(cases) == default_case_count + 2
    for suite in root.findall("testsuite"):
        assert int(suite.get("tests")) == len(suite.findall("testcase"))
        assert int(suite.get("failures")) == len(suite.findall("testcase/failure"))
    [failed] = [tc for tc in cases if tc.find("failure") is not None]
    assert (failed.get("classname"), failed.get("name"), failed.get("line")) == ("bad", "wrong verdict", "2")
    failure = failed.find("failure")
    assert failure is not None
    assert "verdict: expected 'pass', got 'continuity_failure'" in failure.get("message", "")
    assert "fact[0] ok: expected True, got False" in (failure.text or "")


@pytest.mark.integration
def test_junit_coverage_gate_is_a_testcase(run_cli, tmp_path: Path, default_pack: Path) -> None:
    case = _write(tmp_path / "one.yaml", "cases: [{name: ok, fact: {status: implemented}, expect: {verdict: pass}}]")
    proc = run_cli("test", "--policy", str(default_pack), "--format", "junit", "--threshold", "90", str(case))
    assert proc.returncode == 1
    root = ET.fromstring(proc.stdout)
    assert (root.get("tests"), root.get("failures")) == ("2", "1")
    gate = root.find("./testsuite[@name='coverage']/testcase")
    assert gate is not None and gate.get("name") == "MC/DC >= 90%"
    assert gate.find("failure") is not None
    props = {p.get("name"): float(p.get("value")) for p in root.iter("property")}
    assert props["rules_percent"] < 100 and props["mcdc_percent"] < 90


# --- bad input -----------------------------------------------------------------------------------


def test_bad_case_file_exits_2_with_file_and_line(run_cli, tmp_path: Path, default_pack: Path) -> None:
    bad = _write(tmp_path / "bad.yaml", "cases:\n  - name: x\n    fact: {}\n    expect: {verdikt: pass}\n")
    proc = run_cli("test", "--policy", str(default_pack), str(bad))
    _no_traceback(proc)
    assert proc.returncode == 2
    assert f"{bad}:4:" in proc.stderr and "cases.unknown_key" in proc.stderr
    proc = run_cli("test", "--policy", str(default_pack), "--format", "json", str(bad))
    assert proc.returncode == 2 and proc.stdout == ""  # bad input goes to stderr in every format
    [diag] = [ln for ln in proc.stderr.splitlines() if not ln.startswith("stoprule: ")]
    assert diag.startswith(f"{bad}:4:") and ": cases.unknown_key: " in diag, proc.stderr


@pytest.mark.parametrize(
    "args",
    [
        ("--threshold", "150"),
        ("--threshold", "lots"),
        ("--format", "xml"),
    ],
)
def test_bad_flags_exit_2(run_cli, default_pack: Path, args: tuple[str, ...]) -> None:
    proc = run_cli("test", "--policy", str(default_pack), *args)
    assert proc.returncode == 2


def test_missing_case_file_or_tests_folder_exits_2(run_cli, pack_copy: Path, tmp_path: Path) -> None:
    proc = run_cli("test", "--policy", str(pack_copy), str(tmp_path / "nope.yaml"))
    assert proc.returncode == 2 and "cases.not_found" in proc.stderr
    shutil.rmtree(pack_copy / "tests")
    proc = run_cli("test", "--policy", str(pack_copy))
    _no_traceback(proc)
    assert proc.returncode == 2 and "no test files" in proc.stderr


def test_bad_pack_exits_2(run_cli, pack_copy: Path) -> None:
    _write(pack_copy / "broken.yaml", "rules: [{id: x}]\n")
    proc = run_cli("test", "--policy", str(pack_copy))
    assert proc.returncode == 2 and "broken.yaml:1:" in proc.stderr


# --- coverage of the default pack and of edited copies ---------------------------------------------


def test_default_pack_has_full_rule_coverage_and_mcdc(run_cli, default_pack: Path) -> None:
    proc = run_cli("test", "--policy", str(default_pack), "--coverage", "--threshold", "100", "--format", "json")
    _no_traceback(proc)
    assert proc.returncode == 0, proc.stderr
    cov = json.loads(proc.stdout)["coverage"]
    assert cov["rules"]["percent"] == 100.0 and cov["rules"]["total"] == 26
    assert cov["mcdc"]["percent"] == 100.0 and cov["mcdc"]["covered"] == cov["mcdc"]["total"] > 80
    assert cov["conditions"]["percent"] == 100.0
    assert cov["threshold"] == 100.0 and cov["threshold_met"] is True
    assert cov["uncovered_rules"] == [] and cov["uncovered_conditions"] == []
    assert {(c["rule"], c["text"]) for c in cov["infeasible_conditions"]} == DEFAULT_INFEASIBLE
    assert cov["unexercised"] == []
    assert cov["warnings"] == []
    per_rule = {r["rule"]: r for r in cov["per_rule"]}
    assert all(r["won"] > 0 and r["matched"] >= r["won"] for r in per_rule.values())
    hrs = per_rule["continuity.high_risk_stop"]["conditions"]
    assert all(c["mcdc"] == "unique-cause" and len(c["pair"]) == 2 for c in hrs)


REDUNDANT_RULE = """\
rules:
  - id: redundant  # `task_id exists` is implied by `task_id eq TASK-X`: infeasible
    priority: 50
    when: {all: [{task_id: {exists: true}}, {task_id: TASK-X}]}
    verdict: pass
    reason: ok
    message: task X
"""

REDUNDANT_CASES = """\
cases:
  - name: task X
    fact: {task_id: TASK-X}
    expect: {rule: zz_redundant.redundant}
  - name: another task
    fact: {task_id: TASK-Y}
    expect: {rule: progress.ok}
"""


def test_pretty_coverage_summary(run_cli, default_pack: Path, pack_copy: Path) -> None:
    proc = run_cli("test", "--policy", str(default_pack), "--coverage", "--threshold", "100")
    assert proc.returncode == 0
    assert "  rules       100.0%  26/26 won by some fact" in proc.stdout
    assert "MC/DC >= 100%: met" in proc.stdout
    assert "infeasible conditions" not in proc.stdout
    _write(pack_copy / "zz_redundant.yaml", REDUNDANT_RULE)
    _write(pack_copy / "tests" / "zz_redundant.yaml", REDUNDANT_CASES)
    proc = run_cli("test", "--policy", str(pack_copy), "--coverage", "--threshold", "100")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "  rules       100.0%  27/27 won by some fact" in proc.stdout
    assert "infeasible conditions (not counted in MC/DC):" in proc.stdout
    assert "task_id exists true  [zz_redundant.redundant]" in proc.stdout


UNTESTED_RULE = """\
# a rule no case exercises
rules:
  - id: untested
    priority: 50
    when: {task_id: TASK-NEVER}
    verdict: pass
    reason: never
    message: never seen
"""


@pytest.mark.integration
def test_untested_rule_is_reported_and_fails_the_threshold(run_cli, pack_copy: Path) -> None:
    extra = _write(pack_copy / "zz_extra.yaml", UNTESTED_RULE)
    proc = run_cli("test", "--policy", str(pack_copy), "--threshold", "100", "--format", "json")
    _no_traceback(proc)
    assert proc.returncode == 1
    out = json.loads(proc.stdout)
    assert out["summary"]["failed"] == 0 and out["ok"] is False
    cov = out["coverage"]
    assert cov["uncovered_rules"] == [{"rule": "zz_extra.untested", "file": str(extra), "line": 3, "matched": 0}]
    [cond] = cov["uncovered_conditions"]
    assert (cond["file"], cond["line"], cond["text"]) == (str(extra), 5, "task_id eq TASK-NEVER")
    assert (cond["true"], cond["false"], cond["note"]) == (0, cond["false"], "only ever false")
    assert cov["threshold_met"] is False and cov["mcdc"]["percent"] < 100
    assert "below the threshold 100%" in proc.stderr

    proc = run_cli("test", "--policy", str(pack_copy), "--coverage")
    assert proc.returncode == 0  # no threshold: coverage is reported, not enforced
    assert f"  {extra}:3: zz_extra.untested (matched 0 facts)" in proc.stdout
    assert f"  {extra}:5: task_id eq TASK-NEVER  [zz_extra.untested] only ever false" in proc.stdout


EXTRA_DECLARATIONS = """\
sets:
  unused_set: [alpha, beta]
  zz_tasks: [task-8, task-never]
blocker_categories:
  transient:
    network_blip: The network dropped for a moment
high_risk_stops:
  - id: wipe_disk
    description: The next action wipes a disk.
    when: {nextDerivedAction.type: wipe_disk}
rules:
  - id: zz_tasks  # ties with progress.ok and loses: changes no verdict
    priority: 0
    when: {currentTask: {in: zz_tasks}}
    verdict: pass
    reason: ok
    message: a known task
"""


@pytest.mark.integration
def test_declarations_no_case_exercised(run_cli, pack_copy: Path) -> None:
    extra = _write(pack_copy / "zz_extra.yaml", EXTRA_DECLARATIONS)
    vocab = pack_copy / "vocabulary.yaml"
    text = vocab.read_text(encoding="utf-8")
    text = text.replace("legal_closure_states:\n", "legal_closure_states:\n  handed_off: Handed to another agent\n", 1)
    vocab.write_text(text, encoding="utf-8")
    # a new legal closure state must also be a value of the replyClosureState enum
    schema = pack_copy / "schema.yaml"
    text = schema.read_text(encoding="utf-8")
    old = "values: [completed, in_progress, waiting_user, blocked, pending_verification]"
    assert old in text
    schema.write_text(text.replace(old, old[:-1] + ", handed_off]"), encoding="utf-8")
    proc = run_cli("test", "--policy", str(pack_copy), "--coverage", "--format", "json")
    _no_traceback(proc)
    assert proc.returncode == 0, proc.stderr
    found = {(u["kind"], u["name"]): u for u in json.loads(proc.stdout)["coverage"]["unexercised"]}
    assert set(found) == {
        ("set", "unused_set"),
        ("blocker_category", "blocker_categories.transient.network_blip"),
        ("high_risk_stop", "wipe_disk"),
        ("closure_state", "handed_off"),
        ("set_member", "zz_tasks.task-never"),
    }
    assert (found["set", "unused_set"]["file"], found["set", "unused_set"]["line"]) == (str(extra), 2)
    assert found["blocker_category", "blocker_categories.transient.network_blip"]["line"] == 6
    assert found["high_risk_stop", "wipe_disk"]["line"] == 8
    assert found["set_member", "zz_tasks.task-never"]["line"] == 3
    lines = vocab.read_text(encoding="utf-8").splitlines()
    assert "handed_off" in lines[found["closure_state", "handed_off"]["line"] - 1]
    proc = run_cli("test", "--policy", str(pack_copy), "--coverage")
    assert f"  {extra}:8: high risk stop wipe_disk: no fact triggered it" in proc.stdout


# --- the MC/DC computation on tiny packs -------------------------------------------------------------

TINY = """\
schema:
  fields:
    a: {type: bool, default: false}
    b: {type: bool, default: false}
    c: {type: bool, default: false}
    x: {type: int, default: 0}
    y: {type: int}
    items:
      type: list
      default: []
      items: {type: object, fields: {k: {type: string, nullable: true}, v: {type: int, nullable: true}}}
verdicts:
  pass: {ok: true, stop: allow}
conditions:
  a_set: {a: true}
rules:
  - id: ok
    priority: 0
    when: true
    verdict: pass
    reason: ok
    message: ok
"""


def _tiny(tmp_path: Path, when: str) -> Path:
    pack = tmp_path / "tiny"
    _write(pack / "tiny.yaml", TINY + f"  - id: r\n    priority: 10\n    when: {when}\n")
    with (pack / "tiny.yaml").open("a", encoding="utf-8") as fh:
        fh.write("    verdict: pass\n    reason: r\n    message: r\n")
    return pack


def _coverage(pack: Path, facts: list[dict]) -> Coverage:
    ctx = compile_pack(pack)
    assert ctx.compiled is not None
    ev = Evaluator(ctx.compiled)
    obs = [Observation(f"f{i}", ev.validate(f), ev.evaluate(f)) for i, f in enumerate(facts)]
    return compute_coverage(ctx.checked, obs)


def _conds(cov: Coverage) -> dict[str, tuple[str | None, str]]:
    return {c.text: (c.mcdc, c.note) for c in cov.conditions() if c.rule == "tiny.r"}


AND = "{all: [{a: true}, {b: true}]}"


def test_mcdc_of_a_and_b_needs_three_facts(tmp_path: Path) -> None:
    cov = _coverage(_tiny(tmp_path, AND), [{"a": True, "b": True}, {"b": True}, {"a": True}])
    assert cov.mcdc_ratio()["percent"] == 100.0 and cov.rule_ratio()["percent"] == 100.0
    by_text = {c.text: c for c in cov.conditions()}
    assert by_text["a eq true"].mcdc == "unique-cause" and by_text["a eq true"].pair == ("f0", "f1")
    assert by_text["b eq true"].mcdc == "unique-cause" and by_text["b eq true"].pair == ("f0", "f2")


@pytest.mark.parametrize(
    ("facts", "uncovered", "note"),
    [
        ([{"a": True, "b": True}, {"b": True}], "b eq true", "only ever true"),
        ([{"a": True, "b": True}, {"a": True}], "a eq true", "only ever true"),
        ([{"a": True, "b": True}, {}], "a eq true", "no pair of facts where it alone flips the decision"),
    ],
)
def test_mcdc_of_a_and_b_with_a_fact_missing(tmp_path: Path, facts: list[dict], uncovered: str, note: str) -> None:
    cov = _coverage(_tiny(tmp_path, AND), facts)
    got = _conds(cov)
    assert {t for t, (m, _) in got.items() if m is None} >= {uncovered}
    assert got[uncovered] == (None, note)
    assert cov.mcdc_ratio()["percent"] < 100
    assert not cov.mcdc_at_least(100) and cov.mcdc_at_least(0)


def test_an_unfired_rule_is_uncovered(tmp_path: Path) -> None:
    cov = _coverage(_tiny(tmp_path, AND), [{}, {"a": True}])
    assert [r.id for r in cov.uncovered_rules()] == ["tiny.r"]
    assert cov.rule_ratio() == {"covered": 1, "total": 2, "percent": 50.0}


def test_masking_pair_when_unique_cause_is_impossible(tmp_path: Path) -> None:
    # x always has a value, so `x gte 5` and `x lt 5` always flip together: no unique-cause pair exists
    when = "{any: [{all: [{x: {gte: 5}}, {a: true}]}, {all: [{x: {lt: 5}}, {b: true}]}]}"
    cov = _coverage(_tiny(tmp_path, when), [{"x": 7, "a": True}, {"x": 3, "a": True}])
    assert _conds(cov)["x gte 5"][0] == "masking"
    assert _conds(cov)["x lt 5"][0] is None  # b is false in both facts: x lt 5 never decides


def test_redundant_condition_is_proven_infeasible(tmp_path: Path) -> None:
    # y eq 1 implies y exists: `y exists` can never decide the rule alone
    when = "{all: [{y: {exists: true}}, {y: 1}]}"
    cov = _coverage(_tiny(tmp_path, when), [{"y": 1}, {"y": 2}, {}])
    got = _conds(cov)
    assert got["y eq 1"][0] == "unique-cause"
    assert got["y exists true"][0] == "infeasible"
    assert "coupled with y eq 1" in got["y exists true"][1]
    assert cov.mcdc_ratio()["infeasible"] == 1 and cov.mcdc_ratio()["percent"] == 100.0


def test_infeasibility_is_not_claimed_for_a_coverable_condition(tmp_path: Path) -> None:
    # y exists decides `y exists and a` with y = 7: only missing cases, not infeasible
    cov = _coverage(_tiny(tmp_path, "{all: [{y: {exists: true}}, {a: true}]}"), [{"y": 1, "a": True}])
    assert _conds(cov)["y exists true"] == (None, "only ever true")


def test_quantifier_is_one_condition_with_its_where_measured_per_element(tmp_path: Path) -> None:
    when = "{all: [{ref: a_set}, {some: items, where: {any: [{k: {exists: false}}, {v: {gte: 3}}]}}, {ref: a_set}]}"
    facts = [
        {"a": True, "items": [{"k": "x", "v": 1}, {"v": 1}]},  # where: false, true  -> some true
        {"a": True, "items": [{"k": "x", "v": 1}]},  # some false
        {"items": [{"k": "x", "v": 5}]},  # a false
    ]
    cov = _coverage(_tiny(tmp_path, when), facts)
    conds = [c for c in cov.conditions() if c.rule == "tiny.r"]
    assert [(c.text, c.scope, c.kind) for c in conds] == [
        ("a eq true", None, "atom"),  # the named condition twice: one condition
        ("some items where (k exists false or v gte 3)", None, "quantifier"),
        ("k exists false", "some items", "atom"),
        ("v gte 3", "some items", "atom"),
    ]
    assert all(c.mcdc == "unique-cause" for c in conds), [(c.text, c.note) for c in conds]
    k = conds[2]
    assert (k.true, k.false) == (1, 3)
    assert k.pair == ("f0 items[1]", "f0 items[0]")
