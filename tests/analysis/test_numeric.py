"""The exhaustive backend's numeric regions are exact over what facts hold: every finite double
for ``number`` fields and every integer within ±(2^53 - 1) for ``int`` fields. Every witness gets
its region's outcomes from the interpreter's comparisons, and every value a fact can hold (the
literals, their neighbouring doubles, the ends of the range) lands in some region."""

from __future__ import annotations

import math
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from packgen import EDGE_FLOATS, EDGE_INTS, SCHEMA
from stoprule import Evaluator
from stoprule.analysis import audit_pack
from stoprule.analysis.backends import engine_of
from stoprule.analysis.numeric import from_ordinal, ordinal, plainest, regions
from stoprule.engine.build import compile_pack
from stoprule.limits import SAFE_INT

MAX = sys.float_info.max


def three_way(x: Any, c: Any) -> int:
    return -1 if x < c else 0 if x == c else 1  # Python compares ints and floats exactly, as the interpreter


def probes(consts: list[Any], integer: bool) -> list[Any]:
    """Values a fact may hold next to every literal: the literal, its neighbours, the range's ends."""
    out: list[Any] = [0, -SAFE_INT, SAFE_INT] if integer else [0.0, -MAX, MAX, 5e-324, -5e-324]
    for c in consts:
        if integer:
            out += [c - 1, c, c + 1]
        else:
            out += [math.nextafter(c, -math.inf), float(c), math.nextafter(c, math.inf)]
    if integer:
        return [x for x in out if -SAFE_INT <= x <= SAFE_INT]
    return [x for x in out if math.isfinite(x)]


def check_literals(consts: list[Any], integer: bool) -> None:
    prims = [(1, 0, Fraction(c)) for c in consts]
    found = regions(2, prims, {1} if integer else None)
    rels = [rel for rel, _ in found]
    assert len(set(rels)) == len(rels)
    for rel, w in found:  # sound: each witness is a value a fact may hold, with its region's outcomes
        x = w[1]
        if integer:
            assert x.denominator == 1 and -SAFE_INT <= x <= SAFE_INT
        else:
            assert math.isfinite(float(x)) and Fraction(float(x)) == x
        assert rel == tuple(three_way(x, Fraction(c)) for c in consts), (consts, rel, x)
    for x in probes(consts, integer):  # complete: every value lands in a region
        assert tuple(three_way(x, c) for c in consts) in rels, (consts, x)


CASES = [
    ([0, 5e-324], False),  # nothing between the two: 4 regions, not 5
    ([9007199254740990], False),  # above it: 9007199254740991 and beyond
    ([-9007199254740992.0], False),  # below it: -9007199254740994.0
    ([MAX], False),  # nothing above the largest double
    ([-MAX, MAX], False),
    ([2.0**53, 2.0**53 + 2], False),  # 2^53 + 1 is not a double
    ([1e-300, 5e-324, 0.0], False),
    ([SAFE_INT - 1, SAFE_INT], False),
    ([SAFE_INT - 1], True),  # one integer above it
    ([SAFE_INT], True),  # none above it
    ([-SAFE_INT, SAFE_INT], True),
]


@pytest.mark.parametrize(("consts", "integer"), CASES)
def test_literal_regions_are_exact(consts: list[Any], integer: bool) -> None:
    check_literals(consts, integer)


def test_no_region_between_adjacent_doubles() -> None:
    found = regions(2, [(1, 0, Fraction(0)), (1, 0, Fraction(5e-324))])
    assert sorted(rel for rel, _ in found) == [(-1, -1), (0, -1), (1, 0), (1, 1)]
    assert [rel for rel, _ in regions(2, [(1, 0, Fraction(MAX))])] == [(-1,), (0,)]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(EDGE_FLOATS), st.floats(allow_nan=False, allow_infinity=False)), max_size=4))
def test_generated_number_literals(consts: list[float]) -> None:
    check_literals(consts, False)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(EDGE_INTS), st.integers(-SAFE_INT, SAFE_INT)), max_size=4))
def test_generated_int_literals(consts: list[int]) -> None:
    check_literals(consts, True)


def test_number_fields_compared_with_each_other_over_doubles() -> None:
    # x > y, x < 5e-324, y >= 0: reals allow it, doubles do not (x would lie between 0 and 5e-324)
    prims = [(1, 2, Fraction(0)), (1, 0, Fraction(5e-324)), (2, 0, Fraction(0))]
    found = {rel: w for rel, w in regions(3, prims)}
    assert (1, -1, 0) not in found and (1, -1, 1) not in found
    for rel, w in found.items():
        x, y = float(w[1]), float(w[2])
        assert rel == (three_way(x, y), three_way(x, 5e-324), three_way(y, 0.0))


@pytest.mark.parametrize("x", [0.0, 5e-324, -5e-324, 1.0, -2.5, 2.0**53, MAX, -MAX, 1e-310])
def test_ordinals_are_order_preserving(x: float) -> None:
    k = ordinal(x)
    assert from_ordinal(k) == x
    assert from_ordinal(k + 1) == math.nextafter(x, math.inf) or x == MAX
    assert from_ordinal(k - 1) == math.nextafter(x, -math.inf) or x == -MAX


@pytest.mark.parametrize(
    ("lo", "hi", "plain"),
    [
        (0.25, 3.5, 1.0),
        (-3.5, -0.25, -1.0),
        (-1.0, 1.0, 0.0),
        (0.3, 0.6, 0.5),
        (5e-324, 5e-324, 5e-324),
        (2.0**60, 2.0**61, 2.0**60),
        (1.1, 1.2, 1.125),
    ],
)
def test_plainest_double(lo: float, hi: float, plain: float) -> None:
    assert plainest(lo, hi) == plain


# ---------------------------------------------------------------- the audit, both backends


def audit(tmp_path: Path, when: Any) -> tuple[Any, Any]:
    data = {
        "schema": {"fields": SCHEMA},
        "verdicts": {"pass": {"ok": True, "stop": "allow"}, "hit": {"ok": False, "stop": "block"}},
        "rules": [
            {"id": "r0", "priority": 1, "when": when, "verdict": "hit", "reason": "r0", "message": "m"},
            {"id": "z", "priority": 0, "when": True, "verdict": "pass", "reason": "z", "message": "m"},
        ],
    }
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(data))
    ctx = compile_pack(tmp_path)
    exhaustive = audit_pack(ctx.checked, backend="exhaustive")
    solver = audit_pack(ctx.checked, backend="solver", engine=engine_of(Evaluator(ctx.compiled)))
    return exhaustive, solver


def hit_example(report: Any) -> Any:
    rows = [v for v in report.verdict_map if v["verdict"] == "hit"]
    return rows[0]["example"] if rows else None


@pytest.mark.parametrize(
    ("when", "example"),
    [
        ({"n1": {"not_in": [0, 5e-324]}}, {"n1": -1}),
        ({"n1": {"gt": 9007199254740990}}, {"n1": 9007199254740991}),
        ({"n1": {"lt": -9007199254740992.0}}, {"n1": -9007199254740994.0}),
        ({"all": [{"n1": {"gt": 0}}, {"n1": {"lt": 1e-323}}]}, {"n1": 5e-324}),
    ],
)
def test_extreme_literals_are_satisfiable_on_both_backends(tmp_path: Path, when: Any, example: Any) -> None:
    exhaustive, solver = audit(tmp_path, when)
    assert not exhaustive.findings, [f.to_dict() for f in exhaustive.findings]
    assert hit_example(exhaustive) == example
    assert hit_example(solver) is not None and not solver.bugs


@pytest.mark.parametrize(
    "when",
    [
        {"all": [{"n1": {"gt": 0}}, {"n1": {"lt": 5e-324}}]},  # no double in between
        {"n1": {"gt": 1.7976931348623157e308}},  # no double above the largest
        {"all": [{"n1": {"gt": {"field": "n2"}}}, {"n1": {"lt": 5e-324}}, {"n2": {"gte": 0}}]},
    ],
)
def test_empty_between_doubles_is_unsatisfiable(tmp_path: Path, when: Any) -> None:
    for report in audit(tmp_path, when):
        assert "unsatisfiable" in {f.kind for f in report.findings}, report.backend
        assert not getattr(report, "bugs", None)
