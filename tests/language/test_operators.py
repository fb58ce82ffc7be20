"""Operators are one place: every entry declares everything the tools need, and a new
operator (``starts_with``, ``ends_with``) works in the engine, the reference interpreter,
the editor schema, audit and coverage without touching any other module."""

from __future__ import annotations

import dataclasses
import inspect
import json
import random
from pathlib import Path

import pytest

from stoprule.analysis import audit_pack
from stoprule.analysis.coverage import Observation, compute_coverage
from stoprule.engine.build import compile_pack
from stoprule.engine.evaluator import Evaluator
from stoprule.engine.interpret import evaluate
from stoprule.language.operators import OPERATORS, Operator
from stoprule.language.schema_export import policy_json_schema

REQUIRED = [f.name for f in dataclasses.fields(Operator) if f.default is dataclasses.MISSING]  # name, doc, ...


@pytest.mark.parametrize("name", sorted(OPERATORS))
def test_every_operator_entry_is_complete(name: str) -> None:
    op = OPERATORS[name]
    for attr in REQUIRED:
        value = getattr(op, attr)
        assert value is not None and value != "", f"{name} lacks {attr}"
        if attr in ("check", "lower", "test", "reads", "implies"):
            assert callable(value), f"{name}.{attr} is not callable"
    assert op.name == name
    assert isinstance(op.arg_schema, dict) and op.arg_schema, name
    json.dumps(op.arg_schema)  # the editor schema must serialise


def test_operator_has_exactly_the_documented_parts() -> None:
    """A new part of an operator is a new field; this list keeps the docstring honest."""
    doc = inspect.getdoc(inspect.getmodule(Operator)) or ""
    for attr in [*REQUIRED[2:], "negatable", "presence", "field_operand", "ordered", "set_operand"]:
        assert f"``{attr}" in doc, attr


def test_non_negatable_operators_give_no_negative() -> None:
    for name, op in OPERATORS.items():
        if op.presence:
            continue
        _, neg = op.lower("k", ("a",) if op.set_operand else "a")
        assert (neg is not None) == op.negatable, name


PACK = """
schema:
  fields:
    branch: {type: string}
    path: {type: string, nullable: true}
    files: {type: list, default: [], items: {type: object, fields: {name: {type: string}}}}
verdicts:
  pass: {ok: true, stop: allow}
  stop: {ok: false, stop: block}
rules:
  - {id: release, priority: 3, when: {branch: {starts_with: "release/"}}, verdict: stop, reason: release, message: m}
  - {id: lock, priority: 2, when: {"files[].name": {ends_with: ".lock"}}, verdict: stop, reason: lock, message: m}
  - id: md
    priority: 1
    when: {all: [{path: {ends_with: ".md"}}, {path: {starts_with: "docs/"}}]}
    verdict: pass
    reason: md
    message: m
  - {id: ok, priority: 0, when: true, verdict: pass, reason: ok, message: m}
"""

WORDS = ["release/", "release/1.2", "Release/1", "rel", "docs/a.md", "docs/", ".md", "a.lock", ".lock", "x.lockx",
         "%d*", "release/[x]", "docs/.md", "", "日本.md"]  # fmt: skip


@pytest.fixture(scope="module")
def pack(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("affix")
    (root / "p.yaml").write_text(PACK)
    return root


def test_affix_operators_engine_agrees_with_reference(pack: Path) -> None:
    built = compile_pack(pack)
    assert built.checked is not None and built.compiled is not None
    ev = Evaluator(built.compiled)
    rng = random.Random(7)
    seen: set[str] = set()
    for _ in range(600):
        fact = {
            "branch": rng.choice(WORDS),
            "path": rng.choice([*WORDS, None]),
            "files": [{"name": rng.choice(WORDS)} for _ in range(rng.randint(0, 2))],
        }
        data = ev.validate(fact)
        engine = {r.id for r in ev.matched_rules(fact)}
        reference = {r.id for r in built.checked.rules if evaluate(r.when, data)}
        assert engine == reference, fact
        seen |= engine
    assert seen == {r.id for r in built.checked.rules}


def test_affix_operators_are_in_the_editor_schema() -> None:
    ops = policy_json_schema()["$defs"]["FieldTest"]["anyOf"][1]["properties"]
    assert {"starts_with", "ends_with"} <= set(ops)
    assert ops["starts_with"]["type"] == "string"


def test_audit_and_coverage_see_the_affix_operators(pack: Path) -> None:
    built = compile_pack(pack)
    assert built.checked is not None and built.compiled is not None
    report = audit_pack(built.checked).to_dict()
    won = {r["rule"] for row in report["verdict_map"] for r in row["rules"]}
    assert won == {"p.release", "p.lock", "p.md", "p.ok"}  # audit tells the prefixes and suffixes apart
    ev = Evaluator(built.compiled)
    for row in report["verdict_map"]:
        assert ev.evaluate(row["example"]).rule in {r["rule"] for r in row["rules"]}
    facts = [{"branch": "release/1"}, {"branch": "main"}, {"branch": "x", "path": "docs/a.md"},
             {"branch": "x", "path": "a.md"}, {"branch": "x", "path": "docs/a"},
             {"branch": "x", "files": [{"name": "y.lock"}]}]  # fmt: skip
    obs = [Observation(str(i), ev.validate(f), ev.evaluate(f)) for i, f in enumerate(facts)]
    cov = compute_coverage(built.checked, obs)
    assert cov.rule_ratio()["percent"] == 100.0
    assert not cov.warnings


@pytest.mark.parametrize(
    ("when", "code"),
    [
        ("{not: {branch: {starts_with: a}}}", "condition.unsupported"),  # the engine has no negated match
        ("{branch: {starts_with: ''}}", "condition.type"),
        ("{branch: {ends_with: 3}}", "condition.type"),
        ("{files: {starts_with: a}}", "condition.type"),
    ],
)
def test_affix_operator_mistakes_are_diagnostics(tmp_path: Path, when: str, code: str) -> None:
    from stoprule import PolicyError

    (tmp_path / "p.yaml").write_text(PACK.replace('{branch: {starts_with: "release/"}}', when))
    with pytest.raises(PolicyError) as info:
        compile_pack(tmp_path)
    assert [d.code for d in info.value.diagnostics] == [code]
