"""``FactField`` is an immutable record: built once, its name lookup computed from its fields,
and it survives the compiled-pack cache (JSON data) whole."""

from __future__ import annotations

import json

import pytest

from stoprule import Evaluator
from stoprule._util import tagged
from stoprule._util.tagged_dump import dump
from stoprule.facts.schema import FactField, FactSchema


def _object() -> FactField:
    return FactField(
        "",
        "object",
        fields={
            "taskState": FactField("taskState", "enum", values=("a", "b"), aliases=("task_state",)),
            "turn": FactField("turn", "int", has_default=True, default=0),
        },
    )


def test_lookup_names_every_field_and_alias() -> None:
    assert _object().lookup == {"taskState": "taskState", "task_state": "taskState", "turn": "turn"}
    assert FactField("x", "object").fields == {} and FactField("x", "object").lookup == {}


def test_a_field_cannot_be_changed_in_place() -> None:
    f = _object()
    with pytest.raises(AttributeError):
        f.additional = "reject"  # type: ignore[misc]


def test_replace_makes_a_copy_and_computes_the_lookup_again() -> None:
    f = _object()
    g = f._replace(fields={"planId": FactField("planId", "string", aliases=("plan_id",))})
    assert g.lookup == {"planId": "planId", "plan_id": "planId"}
    assert f.lookup["task_state"] == "taskState"  # the original is untouched
    assert f._replace(additional="reject").additional == "reject"


def test_written_as_data_and_read_back_it_is_equal_and_validates_alike(evaluator: Evaluator) -> None:
    root = evaluator.compiled.schema.root
    types = {"FactField": FactField}
    again = tagged.load(json.loads(json.dumps(dump(root, types))), types)
    assert type(again) is FactField
    assert again == root and again.lookup == root.lookup
    fact = {"task_state": "complete", "turn": 3, "unknown": 1}
    assert FactSchema(again).check(fact) == evaluator.compiled.schema.check(fact)
