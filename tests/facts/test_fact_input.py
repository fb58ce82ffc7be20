"""Facts that used to escape as tracebacks or pass silently (issue 11): each is now a
fact error naming the field, or a warning in the verdict."""

from __future__ import annotations

from typing import Any

import pytest

from stoprule import Evaluator, FactError


@pytest.mark.parametrize(
    ("fact", "code", "field"),
    [
        ({"status": []}, "fact.type", "status"),  # was TypeError: unhashable type
        ({"status": {}}, "fact.type", "status"),
        ({"errors": [{"type": ["x"]}]}, "fact.type", "errors[0].type"),
        ({"status": "partial\udfff"}, "fact.enum", "status"),
        ({"requires_user_review": True, "review_reason": "a\udfffb"}, "fact.string", "review_reason"),
        ({"requires_user_review": True, "review_reason": "a\x00b"}, "fact.string", "review_reason"),
        ({"errors": [{"type": "time\udc80out"}]}, "fact.string", "errors[0].type"),
        ({"taskState": "completed"}, "fact.enum", "taskState"),  # a typo of a closed vocabulary
    ],
)
def test_bad_values_are_fact_errors(evaluator: Evaluator, fact: dict[str, Any], code: str, field: str) -> None:
    with pytest.raises(FactError) as info:
        evaluator.evaluate(fact)
    assert (info.value.code, info.value.field) == (code, field)
    str(info.value).encode("utf-8")  # the message itself can be printed


def test_unicode_strings_are_fine(evaluator: Evaluator) -> None:
    v = evaluator.evaluate({"requires_user_review": True, "review_reason": "café 日本 🙂"})
    assert v.review_reason is not None


def test_unknown_fields_are_warned_with_a_suggestion(evaluator: Evaluator) -> None:
    v = evaluator.evaluate({"stauts": "partial", "errors": [{"type": "timeout", "mesage": "x"}]})
    fields = {w["field"]: w["message"] for w in v.warnings}
    assert fields == {
        "stauts": "not a field of the schema (did you mean 'status'?)",
        "errors[0].mesage": "not a field of the schema (did you mean 'message'?)",
    }
    assert v.to_dict()["warnings"] == list(v.warnings)


def test_a_key_that_is_not_a_string_is_an_unknown_field(evaluator: Evaluator) -> None:
    """From Python a fact may have any key; it is warned about (strict: refused) by its text,
    at the top level as below it."""
    v = evaluator.evaluate({1: 2, "status": "partial", "errors": [{"type": "timeout", (3, 4): 5}]})
    assert [w["field"] for w in v.warnings] == ["1", "errors[0].(3, 4)"]
    with pytest.raises(FactError) as info:
        evaluator.evaluate({None: 1, "status": "partial"}, strict=True)
    assert (info.value.code, info.value.field) == ("fact.unknown_field", "None")


def test_no_warning_no_key(evaluator: Evaluator) -> None:
    assert "warnings" not in evaluator.evaluate({"status": "implemented"}).to_dict()


def test_an_empty_fact_is_warned(evaluator: Evaluator) -> None:
    assert [w["code"] for w in evaluator.evaluate({}).warnings] == ["fact.empty"]


def test_strict_makes_an_unknown_field_an_error(evaluator: Evaluator) -> None:
    with pytest.raises(FactError) as info:
        evaluator.evaluate({"stauts": "partial"}, strict=True)
    assert (info.value.code, info.value.field) == ("fact.unknown_field", "stauts")
    out = evaluator.evaluate_many([{"stauts": 1}, {"status": "partial"}], on_error="return", strict=True)
    assert isinstance(out[0], FactError) and not isinstance(out[1], FactError)


def test_depth_limit_at_its_boundary_with_and_without_the_bracket_count_shortcut() -> None:
    from stoprule.facts.parse import MAX_DEPTH, parse_facts

    def nested(k: int, extra: str = "") -> bytes:
        return ('{"a": ' + "[" * k + "1" + "]" * k + extra + "}").encode()

    ok = parse_facts(nested(MAX_DEPTH - 1))[0][1]  # exactly MAX_DEPTH brackets: not walked
    assert isinstance(ok, dict)
    deep = parse_facts(nested(MAX_DEPTH))[0][1]
    assert getattr(deep, "code", None) == "fact.too_deep"
    brackets_in_text = parse_facts(nested(3, ', "s": "' + "[{" * 40 + '"'))[0][1]  # walked, and fine
    assert isinstance(brackets_in_text, dict)
    deep_and_text = parse_facts(nested(MAX_DEPTH, ', "s": "[["'))[0][1]
    assert getattr(deep_and_text, "code", None) == "fact.too_deep"


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ('{"weird": 1e999}', "weird"),  # a field the pack does not know
        ('{"turn": -1e400}', "turn"),  # one it declares
        ('{"extra": {"deep": [1, 2.5, 1e999]}}', "extra.deep[2]"),
        ('{"a": ' + "9" * 400 + ".5}", "a"),  # no exponent: 400 digits are past a double's range too
    ],
)
def test_a_number_json_cannot_write_is_an_error_naming_its_field(text: str, field: str) -> None:
    """Python reads such a literal as an infinity, which no JSON writer gives back: every reader of
    facts (eval, explain, the hook's remote path, the server) refuses it, naming the field."""
    from stoprule.facts.parse import parse_facts

    ((line, error),) = parse_facts(text.encode())
    assert isinstance(error, FactError) and (error.code, error.field, line) == ("fact.not_json", field, 1)
    ((_, fine),) = parse_facts(b'{"a": 1e308, "b": -2.5e-400}')  # large, and underflow to 0: fine
    assert fine == {"a": 1e308, "b": -0.0}
