"""MC/DC feasibility of the conditions no pair of facts covers is decided exactly, on either
backend: a witness pair (re-checked by the interpreter and the engine) for a feasible condition,
"infeasible (proved by ...)" for the others, and both backends give the same answers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from packgen import SCHEMA
from stoprule import Evaluator
from stoprule.analysis.backends import engine_of
from stoprule.analysis.coverage import Coverage, compute_coverage
from stoprule.engine.build import compile_pack


def coverage(root: Path, backend: str) -> Coverage:
    ctx = compile_pack(root)
    # no facts: every condition of every rule goes to the prover
    return compute_coverage(ctx.checked, [], backend=backend, engine=engine_of(Evaluator(ctx.compiled)))


def answers(cov: Coverage) -> dict[tuple[str, str, str | None], tuple[str | None, bool]]:
    assert cov.warnings == []  # every witness reproduced
    return {(c.rule, c.text, c.scope): (c.mcdc, c.witness is not None) for c in cov.conditions()}


def tiny(tmp_path: Path, when: Any) -> Path:
    data = {
        "schema": {"fields": SCHEMA},
        "verdicts": {"pass": {"ok": True, "stop": "allow"}},
        "rules": [
            {"id": "r", "priority": 1, "when": when, "verdict": "pass", "reason": "r", "message": "m"},
            {"id": "z", "priority": 0, "when": True, "verdict": "pass", "reason": "z", "message": "m"},
        ],
    }
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(data, allow_unicode=True))
    return tmp_path


CASES = [  # (when, {condition text: infeasible?})
    ({"all": [{"i1": {"gt": 5}}, {"i1": {"gt": 3}}]}, {"i1 gt 5": False, "i1 gt 3": True}),  # numeric implication
    ({"all": [{"s1": {"exists": True}}, {"s1": "x"}]}, {"s1 exists true": True, "s1 eq x": False}),
    ({"all": [{"n1": {"gt": 0}}, {"n1": {"lte": 5e-324}}]}, {"n1 gt 0": False, "n1 lte 5e-324": False}),
    (
        {"any": [{"s2": {"glob": "a*"}}, {"s2": {"starts_with": "ab"}}]},
        {"s2 glob a*": False, "s2 starts_with ab": True},
    ),
    ({"all": [{"e1": {"ne": "a"}}, {"e1": {"in": ["b", "c"]}}]}, {"e1 ne a": True, "e1 in [b, c]": True}),
    ({"all": [{"b1": True}, {"some": "tags", "where": {"": "t"}}]}, {"b1 eq true": False}),
]


@pytest.mark.parametrize(("when", "infeasible"), CASES)
def test_both_backends_decide_alike_with_witnesses(tmp_path: Path, when: Any, infeasible: dict[str, bool]) -> None:
    root = tiny(tmp_path, when)
    got = {b: answers(coverage(root, b)) for b in ("exhaustive", "solver")}
    assert got["exhaustive"] == got["solver"]
    mine = {text: mcdc for (rule, text, scope), (mcdc, _) in got["solver"].items() if rule == "p.r" and scope is None}
    for text, want in infeasible.items():
        assert (mine[text] == "infeasible") == want, (text, mine)
    for (rule, _text, scope), (mcdc, witnessed) in got["solver"].items():
        if rule == "p.r" and scope is None:
            assert witnessed == (mcdc is None)  # not covered: a witness pair; infeasible: none


def test_the_report_says_how_infeasibility_was_proved(tmp_path: Path) -> None:
    root = tiny(tmp_path, {"all": [{"i1": {"gt": 5}}, {"i1": {"gt": 3}}]})
    for backend, how in [("solver", "proved by the solver"), ("exhaustive", "proved by enumerating")]:
        by_text = {c.text: c for c in coverage(root, backend).conditions()}
        assert by_text["i1 gt 3"].mcdc == "infeasible" and how in by_text["i1 gt 3"].note
        assert "coupled with i1 gt 5" in by_text["i1 gt 3"].note
        feasible = by_text["i1 gt 5"]
        assert feasible.mcdc is None and feasible.witness is not None  # not covered, with a pair to add
        true_side, false_side = feasible.witness
        assert true_side["i1"] > 5 >= false_side["i1"] > 3


@pytest.mark.torture  # the exhaustive proofs of every condition of the default pack take a few CPU seconds
def test_default_pack_same_answers_on_both_backends(default_pack: Path) -> None:
    exhaustive, solver = answers(coverage(default_pack, "exhaustive")), answers(coverage(default_pack, "solver"))
    assert exhaustive == solver
    assert not any(m == "infeasible" for m, _ in solver.values())  # docs/testing.md: the default pack has none
    assert sum(w for _, w in solver.values()) > 100


@pytest.mark.torture  # a few seconds: auto tries the exhaustive way on every decision first
def test_default_pack_auto_proves_every_condition(default_pack: Path) -> None:
    got = answers(coverage(default_pack, "auto"))
    top = [v for (_, _, scope), v in got.items() if scope is None]
    assert top and all(witnessed for _, witnessed in top)  # feasible, each with a checked pair
