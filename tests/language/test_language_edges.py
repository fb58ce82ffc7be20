"""Edges of the policy language found while documenting it; each once misbehaved."""

from __future__ import annotations

from pathlib import Path

import pytest

from stoprule import FactError, PolicyError, load_policy
from stoprule.engine.build import compile_pack

BASE = """
schema:
  fields:
    s: {type: string}
    n: {type: int}
    flag: {type: bool, default: false}
    obj: {type: object, nullable: true, fields: {k: {type: string}}}
    items: {type: list, default: [], items: {type: object, fields: {a: {type: string}, b: {type: string}}}}
    tags: {type: list, default: [], items: {type: string}}
verdicts:
  pass: {ok: true, stop: allow}
  hit: {ok: false, stop: block}
"""
FALLBACK = "  - {id: ok, priority: 0, when: true, verdict: pass, reason: ok, message: ok}\n"


def _pack(tmp_path: Path, body: str, name: str = "p.yaml") -> Path:
    (tmp_path / name).write_text(BASE + body)
    return tmp_path


def _codes(tmp_path: Path) -> list[tuple[str, str, int]]:
    with pytest.raises(PolicyError) as info:
        compile_pack(tmp_path)
    return [(d.code, d.file, d.line) for d in info.value.diagnostics]


def test_absent_inside_where_compiles_and_works(tmp_path: Path) -> None:
    body = (
        "rules:\n  - {id: t, priority: 1, when: {some: items, where: {b: {absent: true}}}, "
        "verdict: hit, reason: t, message: m}\n"
    )
    policy = load_policy(_pack(tmp_path, body + FALLBACK), cache=False)
    assert policy.evaluate({"items": [{"a": "x"}]}).rule == "p.t"
    assert policy.evaluate({"items": [{"a": "x", "b": "y"}]}).rule == "p.ok"


def test_high_risk_stop_inside_a_named_condition(tmp_path: Path) -> None:
    body = (
        "high_risk_stops:\n  - {id: risky, description: d, when: {flag: true}}\n"
        "conditions:\n  guarded: {all: [{s: go}, {high_risk_stop: true}]}\n"
        "rules:\n  - {id: t, priority: 1, when: {ref: guarded}, verdict: hit, reason: t, message: m}\n" + FALLBACK
    )
    policy = load_policy(_pack(tmp_path, body), cache=False)
    assert policy.evaluate({"s": "go", "flag": True}).rule == "p.t"
    assert policy.evaluate({"s": "go"}).rule == "p.ok"


def test_a_stop_cannot_use_high_risk_stop(tmp_path: Path) -> None:
    body = "high_risk_stops:\n  - {id: loop, description: d, when: {high_risk_stop: true}}\nrules:\n" + FALLBACK
    assert [c for c, _, _ in _codes(_pack(tmp_path, body))] == ["high_risk_stop.recursive"]


def test_unused_named_conditions_are_type_checked(tmp_path: Path) -> None:
    body = "conditions:\n  unused: {no_such_field: 1}\nrules:\n" + FALLBACK
    line = (BASE + body).splitlines().index("  unused: {no_such_field: 1}") + 1
    assert _codes(_pack(tmp_path, body)) == [("field.unknown", "p.yaml", line)]


def test_schema_diagnostics_name_the_declaring_file(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(BASE + "rules:\n" + FALLBACK)
    (tmp_path / "b.yaml").write_text("schema:\n  fields:\n    other: {type: string, aliases: [s]}\n")
    assert _codes(tmp_path) == [("schema.alias", "b.yaml", 3)]


@pytest.mark.parametrize(
    ("op", "fact", "fires"),
    [("not_in", {}, False), ("not_in", {"s": "x"}, True), ("in", {"s": "x"}, False), ("in", {}, False)],
)
def test_empty_value_lists(tmp_path: Path, op: str, fact: dict, fires: bool) -> None:
    body = f"rules:\n  - {{id: t, priority: 1, when: {{s: {{{op}: []}}}}, verdict: hit, reason: t, message: m}}\n"
    policy = load_policy(_pack(tmp_path, body + FALLBACK), cache=False)
    assert (policy.evaluate(fact).rule == "p.t") is fires


def test_integers_outside_the_safe_range_are_rejected(tmp_path: Path) -> None:
    policy = load_policy(_pack(tmp_path, "rules:\n" + FALLBACK), cache=False)
    for n in (10**30, 2**63 - 1, 2**53, -(2**53)):
        with pytest.raises(FactError) as info:
            policy.evaluate({"n": n})
        assert (info.value.code, info.value.field) == ("fact.range", "n")
    assert policy.evaluate({"n": 2**53 - 1}).rule == "p.ok"
    assert policy.evaluate({"n": -(2**53) + 1}).rule == "p.ok"


def test_templates_render_objects_as_json_and_empty_lists_as_fallback(tmp_path: Path) -> None:
    body = "rules:\n  - {id: t, priority: 0, when: true, verdict: pass, reason: t, message: '{obj} {tags|none}'}\n"
    policy = load_policy(_pack(tmp_path, body), cache=False)
    assert policy.evaluate({"obj": {"k": "x"}}).message == '{"k": "x"} none'


def test_negated_some_over_two_fields_is_explained(tmp_path: Path) -> None:
    body = (
        "rules:\n  - {id: t, priority: 1, when: {not: {some: items, where: {a: x, b: y}}}, "
        "verdict: hit, reason: t, message: m}\n" + FALLBACK
    )
    with pytest.raises(PolicyError) as info:
        compile_pack(_pack(tmp_path, body))
    (d,) = info.value.diagnostics
    assert d.code == "condition.unsupported" and "negated some" in d.message


@pytest.mark.parametrize(
    ("when", "fact", "fires"),
    [
        ("{not: {s: x}}", {"s": "x"}, False),
        ("{not: {s: x}}", {"s": "y"}, True),
        ("{not: {s: x}}", {}, True),
        ("{s: {absent: true}}", {"s": "x"}, False),
        ("{s: {absent: true}}", {}, True),
        ("{any: [{s: {absent: true}}, {n: {absent: true}}]}", {"s": "x", "n": 1}, False),
        ("{any: [{s: {absent: true}}, {n: {absent: true}}]}", {"s": "x"}, True),
    ],
)
def test_rules_made_only_of_absence_tests(tmp_path: Path, when: str, fact: dict, fires: bool) -> None:
    """An alternative made only of `$nex` tests must not match every fact."""
    body = f"rules:\n  - {{id: t, priority: 1, when: {when}, verdict: hit, reason: t, message: m}}\n"
    policy = load_policy(_pack(tmp_path, body + FALLBACK), cache=False)
    assert (policy.evaluate(fact).rule == "p.t") is fires


def test_list_of_objects_read_only_through_empty(tmp_path: Path) -> None:
    body = "rules:\n  - {id: t, priority: 1, when: {items: {empty: true}}, verdict: hit, reason: t, message: m}\n"
    policy = load_policy(_pack(tmp_path, body + FALLBACK), cache=False)
    assert policy.evaluate({}).rule == "p.t"
    assert policy.evaluate({"items": [{"a": "x"}]}).rule == "p.ok"


def test_object_defaults_get_their_childrens_defaults(tmp_path: Path) -> None:
    schema = (
        "schema:\n  fields:\n    o:\n      type: object\n      default: {}\n"
        "      fields: {k: {type: string, default: d}}\n"
        "verdicts: {pass: {ok: true, stop: allow}}\n"
        "rules:\n  - {id: t, priority: 1, when: {o.k: d}, verdict: pass, reason: t, message: m}\n"
        "  - {id: ok, priority: 0, when: true, verdict: pass, reason: ok, message: ok}\n"
    )
    (tmp_path / "p.yaml").write_text(schema)
    policy = load_policy(tmp_path, cache=False)
    assert policy.evaluate({}).rule == "p.t"
    assert policy.evaluate({"o": {}}).rule == "p.t"


def test_a_mistake_in_a_named_condition_used_twice_is_reported_once(tmp_path: Path) -> None:
    body = """
schema:
  fields:
    n: {type: int}
verdicts:
  pass: {ok: true, stop: allow}
conditions:
  big: {n: {gt: "x"}}
rules:
  - {id: a, priority: 2, when: {ref: big}, verdict: pass, reason: a, message: m}
  - {id: b, priority: 1, when: {not: {ref: big}}, verdict: pass, reason: b, message: m}
"""
    (tmp_path / "p.yaml").write_text(body)
    with pytest.raises(PolicyError) as info:
        compile_pack(tmp_path)
    assert [d.code for d in info.value.diagnostics] == ["condition.type"]
