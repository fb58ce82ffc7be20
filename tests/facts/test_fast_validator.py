"""The generated validator (FactSchema._fast, stoprule.facts.fast_validator) against the closures it stands in for, on a
schema with every feature: aliases, defaults, required, required_if, nullable
objects, lists of objects and of scalars, enums, numbers. tests/facts/test_fuzz_facts.py runs
the same comparison on the default pack's facts."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from factgen import same_as_closures
from samplepacks import FEATURE_PACK, KEYS, feature_value
from stoprule.engine.build import compile_pack
from stoprule.facts.schema import FactSchema


def test_generated_validator_agrees_with_the_closures(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text(FEATURE_PACK)
    schema = compile_pack(tmp_path).compiled.schema
    root = schema.root._replace(additional="reject")  # additional_fields: reject
    for s in (schema, FactSchema(root)):
        _compare(s)


def _compare(schema: FactSchema) -> None:
    rng = random.Random(11)
    accepted = 0
    for _ in range(10000):
        fact: Any = {k: feature_value(rng, k) for k in rng.sample(KEYS, rng.randrange(len(KEYS)))}
        if rng.random() < 0.5:  # valid more often: the fast path must be taken, and agree
            fact["name"] = "n"
            fact.pop("the_name", None)
        same_as_closures(schema, fact)
        try:
            schema._fast(fact, [])
            accepted += 1
        except Exception:  # noqa: BLE001, S110
            pass
    for fact in (None, [], "x", 1, {}, {"name": "n"}, {"name": "n", "flag": True, "why": ""}):
        same_as_closures(schema, fact)
    assert accepted > 200
