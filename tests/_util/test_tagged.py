"""Values as JSON data and back (the compiled-pack cache's format): equal, with their tuples and
records; nothing but the named types is ever built from the data."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from stoprule._util import tagged, tagged_dump
from stoprule._util.records import record


@record
class Point:
    x: int
    y: tuple[int, ...] = ()


@dataclass(frozen=True)
class Box:
    label: str
    inner: object = None


TYPES = {"Point": Point, "Box": Box}


@pytest.mark.parametrize(
    "value",
    [
        None,
        True,
        0,
        -1.5,
        "",
        "é\u2028",
        [],
        (),
        [1, (2, [3])],
        {"a": (1,), "b": [{}]},
        frozenset({"x", "y"}),
        Point(1, (2, 3)),
        Box("b", Point(0)),
        {"k": [Box("c", frozenset({1}))]},
        ["d", {"x": 1}],
        ("r", "Point", 1),  # values that look like tags are written as values
        Point(1),  # a record's empty fields, one-item and nested tuples
        Box("e", {}),
        Box("f", frozenset()),
        ((),),
        ((1,), [()], {"k": ()}),
    ],
)
def test_what_is_written_reads_back_equal_with_its_types(value: object) -> None:
    data = json.loads(json.dumps(tagged_dump.dump(value, TYPES)))
    again = tagged.load(data, TYPES)
    assert again == value and type(again) is type(value)
    assert repr(again) == repr(value)  # tuples stay tuples all the way down


def test_a_type_not_named_is_not_written() -> None:
    with pytest.raises(TypeError):
        tagged_dump.dump({"a": object()}, TYPES)
    with pytest.raises(TypeError):
        tagged_dump.dump({1: "a key that is not a string"}, TYPES)


@pytest.mark.parametrize(
    "data",
    [
        ["r", "os.system", "id"],  # a type the reader was not given: never imported, never built
        ["r", "Point"],  # a record missing a field
        ["r", "Point", 1, 2, 3],  # one with too many
        ["r", ["Point"], 1],
        ["x", 1],  # an unknown tag
        [],
        {"x": 1},  # an object not inside a dict tag
        ["d", [1]],
        ["t", {"x": 1}],  # an object inside a one-item tuple
        ["r", "Box", "b", {"x": 1}],  # or as a record's field
        ["r", "Box", "b", ["d", {}, 1]],
        ["r", "Box", "b", ["t", ["x"]]],
        ["l", ["d"]],
    ],
)
def test_data_it_does_not_write_is_refused(data: object) -> None:
    with pytest.raises(ValueError):
        tagged.load(data, TYPES)
