"""Property-based fuzzing of facts (hypothesis): any JSON value, and schema-shaped facts
with the edges of every type. Evaluating never raises anything but the documented
errors, and on every accepted fact the engine matches exactly the rules the reference
interpreter finds true. The default run is short; ``-m torture`` runs it long."""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from stoprule import EvaluationError
from stoprule.engine.build import compile_pack
from stoprule.engine.evaluator import Evaluator
from stoprule.engine.interpret import evaluate
from stoprule.facts.schema import FactField
from torture import scaled

LONG = os.environ.get("STOPRULE_FUZZ_EXAMPLES")
settings.register_profile("default-fuzz", max_examples=int(LONG or 150), deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])  # fmt: skip
settings.register_profile("torture-fuzz", max_examples=int(LONG or scaled(20000)), deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])  # fmt: skip

REPO = Path(__file__).resolve().parents[2]
_BUILT = compile_pack(REPO / "policies")
EV = Evaluator(_BUILT.compiled)
CHECKED = _BUILT.checked

INT_EDGES = [0, 1, -1, 2, -2, 3, 7, 8, 10, 2**31, -(2**31), 2**53, -(2**53), 2**63 - 1, -(2**63), 2**63, -(2**63) - 1]
FLOAT_EDGES = [0.0, -0.0, 0.5, 1e-09, 1e-300, 5e-324, 1e308, -1e308, 1.7976931348623157e308, 3.0, -2.5]
TEXT_EDGES = ["", "a", "x" * 300, "café", "日本", "🙂", "a\u2028b", "\ud800", "a\x00b", "%d", "*", "[!]]x", "\\"]

json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.sampled_from(INT_EDGES),
    st.floats(allow_nan=False, allow_infinity=False), st.sampled_from(FLOAT_EDGES), st.text(),
    st.sampled_from(TEXT_EDGES),
)  # fmt: skip
any_json = st.recursive(
    json_scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=12,
)


def value_of(f: FactField) -> st.SearchStrategy[Any]:
    """A value for ``f``: mostly of its type (edges included), sometimes null or anything."""
    t = f.type
    if t == "bool":
        own: st.SearchStrategy[Any] = st.booleans()
    elif t == "int":
        own = st.one_of(st.sampled_from(INT_EDGES), st.integers(-12, 12), st.integers())
    elif t == "number":
        own = st.one_of(st.sampled_from(INT_EDGES + FLOAT_EDGES), st.floats(allow_nan=False, allow_infinity=False))
    elif t == "string":
        own = st.one_of(st.sampled_from(TEXT_EDGES), st.text(max_size=6), st.sampled_from(["p1", "p2", "t9", "t10"]))
    elif t == "enum":
        own = st.one_of(st.sampled_from(list(f.values)), st.sampled_from([v.upper() for v in f.values] + ["", "x"]))
    elif t == "list":
        assert f.items is not None
        own = st.lists(value_of(f.items), max_size=3)
    else:
        own = object_of(f)
    return st.one_of(own, own, own, st.none(), any_json)


def object_of(f: FactField) -> st.SearchStrategy[dict[str, Any]]:
    fields = {name: value_of(child) for name, child in f.fields.items()}
    return st.fixed_dictionaries({}, optional=fields)


def same_as_closures(schema: Any, fact: Any) -> None:
    """The generated validator accepts only what the closures accept, with the same result
    (keys, order, values) and the same unknown fields; what it refuses, they name."""
    found: list[str] = []
    try:
        fast = schema._fast(fact, found)
    except Exception:  # noqa: BLE001 - the closures decide
        fast = None
    try:
        slow = schema._validate(fact)
    except EvaluationError:
        assert fast is None, fact
        return
    if fast is not None:
        assert list(fast.items()) == list(slow.items()) and repr(fast) == repr(slow), fact
        assert schema._unknown_warnings(found) == ([] if not fact else schema.warnings(fact)), fact
    assert schema.check(fact) == (slow, schema.warnings(fact)), fact


def check(fact: Any) -> None:
    same_as_closures(EV.compiled.schema, fact)
    try:
        verdict = EV.evaluate(fact)
    except EvaluationError as exc:
        str(exc).encode("utf-8")  # printable
        return
    data = EV.validate(fact)
    engine = {m.rule for m in verdict.matched}
    reference = {r.id for r in CHECKED.rules if evaluate(r.when, data)}
    assert engine == reference, fact
    stops = [s.id for s in CHECKED.stops if evaluate(s.when, data)]
    assert verdict.high_risk_stop == (stops[0] if stops else None), fact
    for v in (verdict.message, verdict.review_reason or ""):
        v.encode("utf-8")
    assert not any(isinstance(x, float) and math.isnan(x) for x in data.values())


@settings(settings.get_profile("default-fuzz"))
@given(any_json)
def test_any_json_value(fact: Any) -> None:
    check(fact)


@settings(settings.get_profile("default-fuzz"))
@given(object_of(CHECKED.schema.root))
@example({"turn": -(2**63), "max_turns": -(2**63)})  # max_turns - 2 overflowed in the engine (issue 11)
@example({"turn": 2**63 - 1, "max_turns": 2**63 - 1, "status": "blocked"})
@example({"turn": 3, "max_turns": 5.0})
@example({"turn": 1e-09, "max_turns": 1e-300})
@example({"status": [], "taskState": {}})
def test_schema_shaped_facts_at_the_edges(fact: dict[str, Any]) -> None:
    check(fact)


@pytest.mark.torture
@settings(settings.get_profile("torture-fuzz"))
@given(object_of(CHECKED.schema.root))
def test_schema_shaped_facts_long(fact: dict[str, Any]) -> None:
    check(fact)
