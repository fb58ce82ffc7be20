"""The solver backend of ``audit`` against the exhaustive one: the same findings and the same
reachable verdicts on the default pack, on seeded defects and on generated small packs; every
witness re-checked (no bugs); a deadline gives partial results that say what was not answered."""

from __future__ import annotations

import io
import json
import shutil
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st

from packgen import SCHEMA, conditions, packs
from stoprule import Evaluator, PolicyError
from stoprule.analysis import audit_pack, diff_packs
from stoprule.analysis.audit import AuditReport, exhaustive_audit
from stoprule.analysis.backends import engine_of
from stoprule.analysis.explore import OutOfTime, set_deadline
from stoprule.analysis.queries import outcome_of
from stoprule.cli.main import run
from stoprule.diagnostics import AnalysisLimit
from stoprule.engine.build import compile_pack


def findings(report: AuditReport) -> set[tuple[Any, ...]]:
    """What both backends must agree on: kind, location and the rules or declaration named."""
    out: set[tuple[Any, ...]] = set()
    for f in report.findings:
        d = f.data
        if f.kind == "gap":
            out.add(("gap",))
        elif f.kind == "conflict":
            out.add(("conflict", f.location, tuple(r["rule"] for r in d["rules"])))
        elif f.kind == "dead_rule":
            out.add(("dead_rule", f.location, d["rule"], frozenset(s["rule"] for s in d["shadowed_by"])))
        else:
            out.add((f.kind, f.location, d.get("rule"), d.get("name")))
    return out


def verdicts(report: AuditReport) -> set[tuple[Any, ...]]:
    return {(v["verdict"], v["reason"], frozenset(r["rule"] for r in v["rules"])) for v in report.verdict_map}


def both(root: Path) -> tuple[AuditReport, AuditReport]:
    ctx = compile_pack(root)
    exhaustive = audit_pack(ctx.checked, backend="exhaustive")
    solver = audit_pack(ctx.checked, backend="solver", engine=engine_of(Evaluator(ctx.compiled)))
    assert not solver.bugs, solver.bugs
    assert not solver.unanswered
    return exhaustive, solver


def assert_same(root: Path) -> AuditReport:
    exhaustive, solver = both(root)
    assert findings(solver) == findings(exhaustive)
    assert verdicts(solver) == verdicts(exhaustive)
    assert [n.to_dict() for n in solver.notes] == [n.to_dict() for n in exhaustive.notes]
    return solver


@pytest.mark.torture
def test_default_pack_same_findings_on_both_backends(default_pack: Path) -> None:
    report = assert_same(default_pack)
    assert report.backend == "solver" and report.domain["queries"] > 0


SEEDED = [  # (file, old, new): defects of every kind in copies of the default pack
    ("progress.yaml", "priority: 100\n", "priority: 400\n"),  # a conflict / dead rule
    ("progress.yaml", "when: true", "when: {status: implemented}"),  # a gap
    (
        "vocabulary.yaml",
        "    timeout: Operation exceeded its time limit\n",
        "    timeout: Operation exceeded its time limit\n    made_up_category: nothing tells it apart\n",
    ),  # unused member
]


@pytest.mark.torture
@pytest.mark.parametrize("edit", SEEDED)
def test_seeded_defects_same_findings(tmp_path: Path, default_pack: Path, edit: tuple[str, str, str]) -> None:
    for f in default_pack.glob("*.yaml"):
        shutil.copy(f, tmp_path / f.name)
    name, old, new = edit
    text = (tmp_path / name).read_text()
    if text.count(old) != 1:
        pytest.skip(f"{name} changed shape")
    (tmp_path / name).write_text(text.replace(old, new))
    report = assert_same(tmp_path)
    assert report.findings or name == "vocabulary.yaml"  # a new soft category is used: no finding, on both


@st.composite
def varied_packs(draw: st.DrawFn) -> dict[str, Any]:
    """Generated small packs with equal priorities, two verdicts and sometimes no catch-all, so
    that conflicts, dead rules and gaps occur. Their literals include the extreme doubles and
    integers (5e-324, the largest double, 2^53 and its neighbours). Rules are plain conditions
    (no wide disjunctions or long chains of field comparisons: those are the packs the exhaustive
    backend cannot finish) and never negate a pattern (the compiler refuses that)."""
    data = draw(packs())
    for r in data["rules"][:-1]:
        r["when"] = draw(conditions)
        r["priority"] = draw(st.integers(1, 3))
        r["verdict"] = draw(st.sampled_from(["hit", "pass"]))
    if draw(st.booleans()):
        data["rules"].pop()
    assume(not _negated_pattern(data["rules"]) and not _negated_pattern(data["high_risk_stops"]))
    return data


def _negated_pattern(node: Any, negated: bool = False) -> bool:
    if isinstance(node, dict):
        return any(
            (negated and k in ("glob", "starts_with", "ends_with"))
            or _negated_pattern(v, negated != (k in ("not", "every")))
            for k, v in node.items()
        )
    if isinstance(node, list):
        return any(_negated_pattern(v, negated) for v in node)
    return False


def _pack(rules: list[dict[str, Any]], stops: list[dict[str, Any]] | None = None, **extra: Any) -> dict[str, Any]:
    out = {
        "schema": {"fields": SCHEMA},
        "verdicts": {"pass": {"ok": True, "stop": "allow"}, "hit": {"ok": False, "stop": "block"}},
        "rules": [{"message": "m", "reason": r["id"], **r} for r in rules],
        "high_risk_stops": stops or [],
    }
    out.update(extra)
    return out


# Small fixed packs that together use every construct the backends encode (ints with offsets,
# extreme doubles, strings with equality/in/globs/affixes, enums, bools, optional and nullable
# fields, objects, lists with some/every, named conditions, sets, high-risk stops) and give every
# kind of finding (gap, conflict, dead rule, unsatisfiable, unused).
FIXED: dict[str, dict[str, Any]] = {
    "numbers": _pack([
        {"id": "turns", "priority": 3, "verdict": "hit", "when": {"i1": {"gte": {"field": "i2", "offset": -2}}}},
        {"id": "tiny", "priority": 3, "verdict": "pass", "when": {"n1": {"not_in": [0, 5e-324]}}},
        {"id": "big", "priority": 2, "verdict": "hit",
         "when": {"all": [{"n1": {"gt": 9007199254740990}}, {"n2": {"lte": -1.7976931348623157e308}}]}},
        {"id": "between", "priority": 2, "verdict": "hit",
         "when": {"all": [{"n1": {"gt": 0}}, {"n1": {"lt": 5e-324}}]}},  # no double there
        {"id": "order", "priority": 1, "verdict": "pass",
         "when": {"all": [{"n1": {"lt": {"field": "n2"}}}, {"o.x": {"eq": {"field": "i1", "offset": 3}}}]}},
        {"id": "odd", "priority": 1, "verdict": "hit", "when": {"all": [{"i1": {"gt": 5}}, {"i1": {"lt": 3}}]}},
    ]),
    "strings": _pack(
        [
            {"id": "risky", "priority": 3, "verdict": "hit", "when": {"high_risk_stop": True}},
            {"id": "names", "priority": 2, "verdict": "hit",
             "when": {"any": [{"s1": {"glob": "a*[!]]"}}, {"s2": {"starts_with": "b"}}, {"o.y": {"ends_with": "é"}}]}},
            {"id": "same", "priority": 2, "verdict": "pass",
             "when": {"all": [{"s2": {"eq": {"field": "o.y"}}}, {"s1": {"null": True}}]}},
            {"id": "kinds", "priority": 1, "verdict": "pass",
             "when": {"all": [{"e1": {"in": "early"}}, {"s2": {"not_in": ["x", "y"]}}, {"ref": "flagged"}]}},
            {"id": "kinds_again", "priority": 1, "verdict": "pass", "when": {"all": [{"e1": "a"}, {"ref": "flagged"}]}},
        ],
        [{"id": "danger", "description": "d", "when": {"all": [{"b1": True}, {"i2": {"absent": True}}]}},
         {"id": "never", "description": "d", "when": {"all": [{"b1": True}, {"b1": False}]}}],
        sets={"early": {"description": "d", "members": ["a", "b"]}},
        conditions={"flagged": {"any": [{"b1": False}, {"o": {"exists": True}}]}},
    ),
    "lists": _pack([
        {"id": "tagged", "priority": 2, "verdict": "hit", "when": {"some": "tags", "where": {"": {"glob": "t?"}}}},
        {"id": "small", "priority": 2, "verdict": "pass", "when": {"every": "nums", "where": {"": {"lt": 0.5}}}},
        {"id": "objs", "priority": 1, "verdict": "hit",
         "when": {"all": [{"some": "objs", "where": {"all": [{"k": "x"}, {"v": {"null": True}}]}},
                          {"every": "objs", "where": {"o": {"exists": True}}}]}},
        {"id": "empty", "priority": 1, "verdict": "pass",
         "when": {"all": [{"tags": {"empty": True}}, {"nums": {"absent": True}}]}},
        {"id": "z", "priority": 0, "verdict": "pass", "when": True},
    ]),
}  # fmt: skip


KINDS = {  # together: every kind of finding
    "numbers": {"gap", "conflict", "dead_rule", "unsatisfiable"},
    "strings": {"gap", "conflict", "unused"},
    "lists": {"conflict", "dead_rule"},
}


@pytest.mark.parametrize("name", sorted(FIXED))
def test_fixed_packs_same_findings(tmp_path: Path, name: str) -> None:
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(FIXED[name], allow_unicode=True))
    exhaustive, solver = both(tmp_path)
    assert findings(solver) == findings(exhaustive)
    assert verdicts(solver) == verdicts(exhaustive)
    assert [n.to_dict() for n in solver.notes] == [n.to_dict() for n in exhaustive.notes]
    assert {f.kind for f in exhaustive.findings} == KINDS[name]


BUDGET = 5.0  # CPU seconds of the exhaustive backend per generated pack


def _cross_check(tmp_path_factory: pytest.TempPathFactory, data: dict[str, Any]) -> str:
    """Compare the backends on one generated pack; returns what happened (counted by the caller)."""
    root = tmp_path_factory.mktemp("gen")
    (root / "p.yaml").write_text(yaml.safe_dump(data, allow_unicode=True))
    try:
        ctx = compile_pack(root)
    except PolicyError:
        return "refused by the compiler"  # e.g. constructs the engine cannot negate
    set_deadline(time.process_time() + BUDGET, time.process_time)
    try:
        exhaustive = exhaustive_audit(ctx.checked, None, None, True)
    except OutOfTime:
        return f"over the exhaustive budget ({BUDGET:g} CPU s)"
    except AnalysisLimit:
        return "beyond the exhaustive backend (audit.limit)"
    finally:
        set_deadline(None)
    solver = audit_pack(ctx.checked, backend="solver", engine=engine_of(Evaluator(ctx.compiled)))
    assert not solver.bugs, solver.bugs
    assert not solver.unanswered
    assert findings(solver) == findings(exhaustive)
    assert verdicts(solver) == verdicts(exhaustive)
    assert [n.to_dict() for n in solver.notes] == [n.to_dict() for n in exhaustive.notes]
    return "compared"


def _generated(tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str], n: int) -> None:
    """``n`` derandomized generated packs; prints how many were compared and how many skipped why."""
    counts: Counter[str] = Counter()

    # no shrinking: a failing pack is reported as drawn (shrinking one takes many minutes)
    @settings(
        max_examples=n,
        deadline=None,
        derandomize=True,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(data=varied_packs())
    def check(data: dict[str, Any]) -> None:
        counts[_cross_check(tmp_path_factory, data)] += 1

    check()
    summary = f"solver cross-check: {sum(counts.values())} generated packs: " + ", ".join(
        f"{k} {v}" for k, v in sorted(counts.items())
    )
    with capsys.disabled():
        print("\n" + summary)
    assert counts["compared"] >= sum(counts.values()) // 2, summary  # skips stay the exception


@pytest.mark.torture  # python -m pytest -m torture: about a minute on 2 cores
def test_generated_packs_same_findings(
    tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    _generated(tmp_path_factory, capsys, 150)


@pytest.mark.slow  # on demand (python -m pytest -m slow -n 0): several minutes on 2 cores
def test_generated_packs_same_findings_long(
    tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    _generated(tmp_path_factory, capsys, 600)


@pytest.mark.integration
def test_cli_backend_and_timeout(default_pack: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    code = run(
        ["audit", "--policy", str(default_pack), "--backend", "solver", "--timeout", "0.001", "--format", "json"],
        io.BytesIO(),
        out,
        err,
    )
    doc = json.loads(out.getvalue())
    assert code == 1
    assert doc["backend"] == "solver" and doc["unanswered"] and doc["stopped_after"] == 0.001
    out = io.StringIO()
    code = run(
        ["audit", "--policy", str(default_pack), "--backend", "solver", "--timeout", "0.001"],
        io.BytesIO(),
        out,
        io.StringIO(),
    )
    assert "stopped after 0.001 s: these questions were not answered:" in out.getvalue()


@pytest.mark.integration
def test_cli_auto_is_the_exhaustive_report_on_the_default_pack(default_pack: Path) -> None:
    outs = []
    for backend in ("auto", "exhaustive"):
        out = io.StringIO()
        assert (
            run(
                ["audit", "--policy", str(default_pack), "--backend", backend, "--format", "json"],
                io.BytesIO(),
                out,
                io.StringIO(),
            )
            == 0
        )
        doc = json.loads(out.getvalue())
        doc.pop("seconds")
        outs.append(doc)
    assert outs[0] == outs[1] and "backend" not in outs[0]


def changes(report: Any) -> set[tuple[Any, ...]]:
    return {(c["title"], frozenset((r["old_rule"] or {}).get("rule") for r in c["rules"])) for c in report.changes}


@pytest.mark.integration
@pytest.mark.parametrize("edit", SEEDED[:2])
def test_diff_same_changes_on_both_backends(tmp_path: Path, default_pack: Path, edit: tuple[str, str, str]) -> None:
    for f in default_pack.glob("*.yaml"):
        shutil.copy(f, tmp_path / f.name)
    name, old, new = edit
    (tmp_path / name).write_text((tmp_path / name).read_text().replace(old, new, 1))
    a, b = compile_pack(default_pack).checked, compile_pack(tmp_path).checked
    exhaustive = diff_packs(a, b, backend="exhaustive")
    solver = diff_packs(a, b, backend="solver")
    assert not solver.bugs and not solver.unanswered and solver.backend == "solver"
    assert solver.changes and changes(solver) == changes(exhaustive)
    for c in solver.changes:  # every witness gives the claimed verdicts on both packs
        for r in c["rules"]:
            for pack, key in ((a, "old"), (b, "new")):
                got = outcome_of(pack.rules, pack.schema.validate(r["example"]["fact"]))
                label = (pack.rules[got[0]].verdict, pack.rules[got[0]].reason) if got else None
                assert label == ((c[key]["verdict"], c[key]["reason"]) if c[key] else None)


def test_a_witness_the_engine_disagrees_with_is_a_bug_not_a_finding(tmp_path: Path) -> None:
    data = {
        "schema": {"fields": {"a": {"type": "bool"}, "n": {"type": "int"}}},
        "verdicts": {"pass": {"ok": True, "stop": "allow"}, "hit": {"ok": False, "stop": "block"}},
        "rules": [
            {"id": "wide", "priority": 2, "when": {"a": True}, "verdict": "hit", "reason": "w", "message": "m"},
            {"id": "narrow", "priority": 1, "when": {"all": [{"a": True}, {"n": {"gt": 3}}]},
             "verdict": "hit", "reason": "n", "message": "m"},
        ],
    }  # fmt: skip
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(data))
    ctx = compile_pack(tmp_path)
    good = audit_pack(ctx.checked, backend="solver", engine=engine_of(Evaluator(ctx.compiled)))
    assert {"gap", "dead_rule"} <= {f.kind for f in good.findings} and not good.bugs
    dead = next(f for f in good.findings if f.kind == "dead_rule").data
    assert dead["shadowed_by"][0]["rule"] == "p.wide" and dead["shadowed_by"][0]["example"]["a"] is True

    def wrong(fact: dict[str, Any]) -> tuple[str | None, tuple[str, ...]]:
        return "p.narrow", ("p.narrow",)  # an engine that always answers narrow

    bad = audit_pack(ctx.checked, backend="solver", engine=wrong)
    assert bad.bugs and all(b["fact"] is not None and b["problem"] for b in bad.bugs)
    assert not any(f.kind == "dead_rule" for f in bad.findings)  # not shown from a witness that failed
    out, err = io.StringIO(), io.StringIO()
    assert run(["audit", "--policy", str(tmp_path), "--backend", "solver"], io.BytesIO(), out, err) == 1
