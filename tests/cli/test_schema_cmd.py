"""`stoprule schema`: the policy-file schema accepts the default pack and rejects mistakes; the fact
schema accepts every valid test fact and rejects the invalid ones the evaluator rejects."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from stoprule import FactError, load_policy
from stoprule.analysis.cases import load_cases
from stoprule.language.schema_export import fact_json_schema, policy_json_schema


@pytest.fixture(scope="module")
def policy_validator() -> jsonschema.Draft202012Validator:
    schema = policy_json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_default_pack_files_validate(policy_validator, default_pack: Path) -> None:  # noqa: ANN001
    files = sorted(default_pack.glob("*.yaml"))
    assert len(files) >= 5
    for f in files:
        errors = list(policy_validator.iter_errors(yaml.safe_load(f.read_text())))
        assert not errors, (f.name, [e.message for e in errors])


@pytest.mark.parametrize(
    "doc",
    [
        {"rulez": []},
        {"rules": [{"id": "a", "priority": 1, "when": True, "verdict": "v", "reason": "r", "message": "m", "x": 1}]},
        {
            "rules": [
                {
                    "id": "a",
                    "priority": 1,
                    "when": {"status": {"equals": "x"}},
                    "verdict": "v",
                    "reason": "r",
                    "message": "m",
                }
            ]
        },
        {"rules": [{"id": "a", "priority": 1, "when": {"all": "x"}, "verdict": "v", "reason": "r", "message": "m"}]},
        {"conditions": {"c": {"turn": {"gte": {"field": "max_turns", "plus": 2}}}}},
        {"verdicts": {"pass": {"ok": True, "stop": "maybe"}}},
        {"schema": {"fields": {"x": {"type": "text"}}}},
    ],
)
def test_mistakes_are_rejected(policy_validator, doc: dict) -> None:  # noqa: ANN001
    assert list(policy_validator.iter_errors(doc))


@pytest.mark.integration
def test_fact_schema_agrees_with_the_evaluator(default_pack: Path) -> None:
    evaluator = load_policy(default_pack, cache=False)
    schema = fact_json_schema(evaluator.compiled.schema)
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    valid = invalid = 0
    for case in load_cases([default_pack / "tests"]):
        for fact in case.facts:
            try:
                evaluator.validate(fact)
                ok = True
            except FactError:
                ok = False
            errors = list(validator.iter_errors(fact))
            if not ok and not errors and _integral_float(fact):
                continue  # JSON Schema's "integer" admits 3.0; stoprule's int does not (documented)
            assert (not errors) == ok, (case.name, fact, [e.message for e in errors])
            valid += ok
            invalid += not ok
    assert valid > 150 and invalid > 20


def _integral_float(value: object) -> bool:
    if isinstance(value, float):
        return value.is_integer()
    if isinstance(value, dict):
        return any(_integral_float(v) for v in value.values())
    if isinstance(value, list):
        return any(_integral_float(v) for v in value)
    return False


def test_cli_prints_both_schemas(run_cli) -> None:  # noqa: ANN001
    out = run_cli("schema", "policy")
    assert out.returncode == 0
    assert json.loads(out.stdout)["$schema"].endswith("2020-12/schema")
    facts = run_cli("schema", "facts")
    assert facts.returncode == 0
    assert "taskState" in json.loads(facts.stdout)["properties"]
    bad = run_cli("schema", "facts", "--policy", "/nonexistent/pack")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr


def test_bundled_schema_file_is_current(default_pack: Path) -> None:
    """policies/policy.schema.json (referenced by each pack file for editors) matches the code."""
    shipped = json.loads((default_pack / "policy.schema.json").read_text())
    assert shipped == policy_json_schema(), "regenerate: stoprule schema policy > policies/policy.schema.json"
    for f in default_pack.glob("*.yaml"):
        assert f.read_text().startswith("# yaml-language-server: $schema=./policy.schema.json"), f.name
