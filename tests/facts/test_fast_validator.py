"""The generated validator (FactSchema._fast) against the closures it stands in for, on a
schema with every feature: aliases, defaults, required, required_if, nullable
objects, lists of objects and of scalars, enums, numbers. tests/test_fuzz_facts.py runs
the same comparison on the default pack's facts."""

from __future__ import annotations

import copy
import random
from pathlib import Path
from typing import Any

from test_fuzz_facts import same_as_closures

from stoprule.engine.build import compile_pack
from stoprule.facts.schema import FactSchema

PACK = """
schema:
  fields:
    name: {type: string, required: true, aliases: [the_name]}
    kind: {type: enum, values: [a, b], default: a}
    level: {type: enum, values: [x, y], nullable: true}
    n: {type: int, default: 3, aliases: [count]}
    x: {type: number, nullable: true}
    flag: {type: bool, default: false}
    why: {type: string, required_if: flag}
    tags: {type: list, default: [], items: {type: string}}
    nums: {type: list, nullable: true, items: {type: number}}
    strict:
      type: object
      nullable: true
      fields: {k: {type: string}, j: {type: int, default: 1}}
    report:
      type: object
      nullable: true
      fields:
        items:
          type: list
          default: []
          items: {type: object, fields: {a: {type: string, required: true}, b: {type: bool, nullable: true}}}
verdicts:
  pass: {ok: true, stop: allow}
rules:
  - {id: z, priority: 0, when: true, verdict: pass, reason: z, message: m}
"""

VALUES: list[Any] = [None, True, False, 0, 1, -1, 2**53, 2**60, 1.5, -0.0, 1e308, "", "a", "b", "x", "é",
                     "a\x00", "\ud800", [], ["a"], [1], {}, {"k": "v"}, {"a": "s"},
                     [{"a": "s", "b": True}, {"a": 1}]]  # fmt: skip
KEYS = ["name", "the_name", "kind", "level", "n", "count", "x", "flag", "why", "tags", "nums", "strict", "report",
        "extra", "Name"]  # fmt: skip


def _value(rng: random.Random, key: str) -> Any:
    if key == "strict" and rng.random() < 0.5:
        return {rng.choice(["k", "j", "zz"]): rng.choice(VALUES) for _ in range(rng.randrange(3))}
    if key == "report" and rng.random() < 0.6:
        items = [
            {rng.choice(["a", "b", "c"]): rng.choice(VALUES) for _ in range(rng.randrange(3))}
            for _ in range(rng.randrange(3))
        ]
        return {"items": items, **({"more": 1} if rng.random() < 0.3 else {})}
    return rng.choice(VALUES)


def test_generated_validator_agrees_with_the_closures(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text(PACK)
    schema = compile_pack(tmp_path).compiled.schema
    root = copy.deepcopy(schema.root)
    root.additional = "reject"  # additional_fields: reject
    for s in (schema, FactSchema(root)):
        _compare(s)


def _compare(schema: FactSchema) -> None:
    rng = random.Random(11)
    accepted = 0
    for _ in range(10000):
        fact: Any = {k: _value(rng, k) for k in rng.sample(KEYS, rng.randrange(len(KEYS)))}
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
