"""What the solver backend does to scale: string tests checked on real strings (with lemmas),
lists tried short first, conditions written again shared, and ``diff`` as one sweep; each
against the exhaustive backend or the reference interpreter."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from stoprule import Evaluator
from stoprule.analysis import AnalysisLimit, audit_pack, diff_packs
from stoprule.analysis.backends import engine_of
from stoprule.analysis.queries import outcome_of
from stoprule.engine.build import compile_pack

VERDICTS = {"pass": {"ok": True, "stop": "allow"}, "hit": {"ok": False, "stop": "block"}}


def write(root: Path, fields: dict[str, Any], rules: list[dict[str, Any]]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    full = [{"verdict": "hit", "message": "m", **r} for r in rules]
    full.append({"id": "rest", "priority": 0, "when": True, "verdict": "pass", "reason": "rest", "message": "m"})
    data = {"schema": {"fields": fields}, "verdicts": VERDICTS, "rules": full}
    (root / "p.yaml").write_text(yaml.safe_dump(data, allow_unicode=True))
    return root


def solver_audit(root: Path) -> Any:
    ctx = compile_pack(root)
    report = audit_pack(ctx.checked, backend="solver", engine=engine_of(Evaluator(ctx.compiled)))
    assert not report.bugs and not report.unanswered
    return report


STRINGS = {"s": {"type": "string"}, "t": {"type": "string"}}


@pytest.mark.parametrize(
    ("when", "can_match"),
    [
        ({"all": [{"s": {"starts_with": "ab"}}, {"s": {"ends_with": "x"}}, {"s": {"eq": "abc"}}]}, False),
        ({"all": [{"s": {"glob": "a*"}}, {"s": {"glob": "*b"}}, {"s": {"ne": "ab"}}]}, True),
        ({"all": [{"s": {"glob": "[a-c]?"}}, {"s": {"in": ["x", "yy", "bz"]}}]}, True),
        ({"all": [{"s": {"glob": "[a-c]?"}}, {"s": {"in": ["x", "yy", "dz"]}}]}, False),
        ({"all": [{"s": {"eq": {"field": "t"}}}, {"t": {"starts_with": "q"}}, {"s": {"ends_with": "q"}}]}, True),
        ({"all": [{"s": {"eq": {"field": "t"}}}, {"t": {"starts_with": "q"}}, {"s": {"glob": "z*"}}]}, False),
    ],
)
def test_string_tests_are_checked_on_real_strings(tmp_path: Path, when: dict[str, Any], can_match: bool) -> None:
    """A model's choice of string tests that no strings satisfy becomes a lemma (the rule is
    unsatisfiable); one that some strings satisfy gives a witness the interpreter confirms."""
    rules = [{"id": "r", "priority": 2, "when": when, "reason": "r"}]
    report = solver_audit(write(tmp_path, STRINGS, rules))
    unsat = [f for f in report.findings if f.kind == "unsatisfiable"]
    assert bool(unsat) == (not can_match)
    if can_match:
        row = next(v for v in report.verdict_map if v["reason"] == "r")
        example = row["example"]
        checked = compile_pack(tmp_path).checked
        top = outcome_of(checked.rules, checked.schema.validate(example))
        assert checked.rules[top[0]].id == "p.r"


def test_a_string_beyond_the_solvers_alphabet_is_a_clear_limit(tmp_path: Path) -> None:
    rules = [{"id": "r", "priority": 2, "when": {"s": {"eq": "a\U00030001"}}, "reason": "r"}]
    ctx = compile_pack(write(tmp_path, STRINGS, rules))
    with pytest.raises(AnalysisLimit, match="U\\+2FFFF"):
        audit_pack(ctx.checked, backend="solver")


LISTS = {
    "n": {"type": "int"},
    "items": {"type": "list", "items": {"type": "object", "fields": {"k": {"type": "int"}, "b": {"type": "bool"}}}},
}


def test_a_list_longer_than_the_short_bound_is_found(tmp_path: Path) -> None:
    """Three elements needed (each `some` excludes the others): the short attempt (2) fails,
    the exact bound finds it; the same findings as the exhaustive backend."""
    some = [{"some": "items", "where": {"all": [{"k": {"eq": v}}, {"b": v % 2 == 0}]}} for v in (1, 2, 3)]
    rules = [{"id": "three", "priority": 2, "when": {"all": some}, "reason": "three"}]
    root = write(tmp_path, LISTS, rules)
    report = solver_audit(root)
    assert not [f for f in report.findings if f.kind == "unsatisfiable"]
    example = next(v for v in report.verdict_map if v["reason"] == "three")["example"]
    assert {e.get("k") for e in example["items"]} >= {1, 2, 3}
    ctx = compile_pack(root)
    exhaustive = audit_pack(ctx.checked, backend="exhaustive")
    assert {f.kind for f in exhaustive.findings} == {f.kind for f in report.findings}


def test_same_condition_in_many_rules_is_one_term_and_still_dead(tmp_path: Path) -> None:
    """Rules written alike (another location, same condition) share one term: the second of
    two identical rules is dead, shadowed by the first, on both backends."""
    when = {"all": [{"n": {"gt": 3}}, {"some": "items", "where": {"k": {"lt": 0}}}]}
    rules = [
        {"id": "first", "priority": 3, "when": when, "reason": "a"},
        {"id": "again", "priority": 2, "when": when, "reason": "b"},
    ]
    root = write(tmp_path, LISTS, rules)
    report = solver_audit(root)
    dead = [f.data for f in report.findings if f.kind == "dead_rule"]
    assert [(d["rule"], [s["rule"] for s in d["shadowed_by"]]) for d in dead] == [("p.again", ["p.first"])]


def _flip_pack(root: Path, flip: bool) -> Path:
    fields = {"e": {"type": "enum", "values": ["a", "b", "c"], "required": True}, "n": {"type": "int"},
              "f": {"type": "bool"}}  # fmt: skip
    rules = []
    conds = [{"e": "a"}, {"all": [{"n": {"gt": 2}}, {"f": True}]}, {"e": {"in": ["b", "c"]}}, {"n": {"lt": 0}}]
    for i, when in enumerate([*conds, {"f": False}]):
        verdict = "pass" if flip and i in (1, 3) else "hit"
        rules.append({"id": f"r{i}", "priority": 10 - i, "when": when, "reason": f"r{i}", "verdict": verdict})
    return write(root, fields, rules)


def test_diff_sweep_same_pairs_as_the_exhaustive_backend(tmp_path: Path) -> None:
    """Verdicts flipped on a live rule and on a dead one: the sweep finds exactly the pairs
    (old winner, new winner) the exhaustive backend finds, and nothing where the verdict
    did not change."""
    a = compile_pack(_flip_pack(tmp_path / "a", False)).checked
    b = compile_pack(_flip_pack(tmp_path / "b", True)).checked
    solver = diff_packs(a, b, backend="solver")
    exhaustive = diff_packs(a, b, backend="exhaustive")
    assert not solver.bugs and not solver.unanswered

    def pairs(report: Any) -> set[tuple[Any, ...]]:
        return {(c["title"], r["old_rule"]["rule"], r["new_rule"]["rule"]) for c in report.changes for r in c["rules"]}

    assert pairs(solver) == pairs(exhaustive) == {("hit/r1 -> pass/r1", "p.r1", "p.r1")}
    same = diff_packs(a, a, backend="solver")
    assert not same.changes and not same.bugs
