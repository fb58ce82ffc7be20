"""Property-based fuzzing of facts (hypothesis): any JSON value, and schema-shaped facts
with the edges of every type. Evaluating never raises anything but the documented
errors, and on every accepted fact the engine matches exactly the rules the reference
interpreter finds true. The default run is short; ``-m torture`` runs it long."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import example, given, settings

from factgen import any_json, default_build, object_of, same_as_closures
from stoprule import EvaluationError
from stoprule.engine.evaluator import Evaluator
from stoprule.engine.interpret import evaluate

EV = Evaluator(default_build().compiled)
CHECKED = default_build().checked


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


@pytest.mark.torture
@settings(settings.get_profile("torture-fuzz"))
@given(any_json)
def test_any_json_value_long(fact: Any) -> None:
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
