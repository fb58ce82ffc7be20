"""Small packs that exercise one part of the pipeline each, with their inputs.

``FEATURE_PACK``: a fact schema with every feature (aliases, defaults, required,
required_if, nullable objects, lists of objects and of scalars, enums, numbers) and
:func:`feature_value` to draw values for it. ``PROJECTION_PACK``: one rule per field type
and operator family, its ``PROJECTION_FACTS``, and :func:`same_projection`, the check that
an evaluator sends the engine what a plain reading of the pack's slots gives.
"""

from __future__ import annotations

import random
from typing import Any

from stoprule.engine.durable import encode
from stoprule.engine.evaluator import Evaluator, _direct_projector
from stoprule.engine.json_projector import projectors
from stoprule.language import patterns

FEATURE_PACK = """
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


def feature_value(rng: random.Random, key: str) -> Any:
    if key == "strict" and rng.random() < 0.5:
        return {rng.choice(["k", "j", "zz"]): rng.choice(VALUES) for _ in range(rng.randrange(3))}
    if key == "report" and rng.random() < 0.6:
        items = [
            {rng.choice(["a", "b", "c"]): rng.choice(VALUES) for _ in range(rng.randrange(3))}
            for _ in range(rng.randrange(3))
        ]
        return {"items": items, **({"more": 1} if rng.random() < 0.3 else {})}
    return rng.choice(VALUES)


_ABSENT = object()


def _read(obj: Any, path: tuple[str, ...]) -> Any:
    """The value at ``path`` (``_ABSENT`` where a step is missing or not an object)."""
    for step in path:
        if type(obj) is not dict or step not in obj:
            return _ABSENT
        obj = obj[step]
    return obj


def _put(slot: Any, value: Any, out: dict[str, Any]) -> None:
    if value is _ABSENT:
        return
    if slot.test is not None:  # a pattern slot: whether a string passes; left out otherwise
        if type(value) is str:
            fn, arg = slot.test
            out[slot.key] = getattr(patterns, fn)(value, arg)
    elif slot.marker:
        out[slot.key] = True if value is not None else None
    else:
        out[slot.key] = value


def reference_projection(compiled: Any, fact: dict[str, Any]) -> dict[str, Any]:
    """The projection of a validated fact as the compiled pack's slots and lists describe it."""
    out: dict[str, Any] = {"_": 1}
    for slot in compiled.slots:
        _put(slot, _read(fact, slot.path), out)
    for ls in compiled.lists:
        seq = _read(fact, ls.path)
        if type(seq) is not list:
            out[ls.len_key] = 0
            continue
        out[ls.len_key] = len(seq)
        if not ls.items:
            continue
        if ls.scalar:
            out[ls.key] = seq
            continue
        rows = []
        for item in seq:
            row: dict[str, Any] = {}
            for slot in ls.item_slots:
                _put(slot, item if not slot.path else _read(item, slot.path), row)
            rows.append(row)
        out[ls.key] = rows
    return out


def same_projection(ev: Evaluator, fact: dict[str, Any]) -> None:
    """What ``ev`` sends the engine for a validated fact is the reference projection: the
    whole of it, or each ruleset's keys of it; with the generated projectors and without them
    (``Evaluator._use_code``)."""
    ref = reference_projection(ev.compiled, fact)
    keys = ev.compiled.ruleset_keys
    c = ev.compiled
    subsets = [None] if keys is None else [frozenset(k) for k in keys]
    direct = [_direct_projector(c.slots, c.lists, c.schema.root, ks) for ks in subsets]
    generated = [fn for _, fn in projectors(c)]
    for parts in (ev._project_parts, direct, generated):
        if keys is None:
            assert parts[0](fact) == encode(ref)[1:], fact
            continue
        for project, ks in zip(parts, keys, strict=True):
            assert project(fact) == encode({k: v for k, v in ref.items() if k in ks})[1:], fact


PROJECTION_PACK = """
schema:
  fields:
    x: {type: number, nullable: true}
    n: {type: int, nullable: true}
    b: {type: bool, nullable: true}
    s: {type: string, nullable: true}
    e: {type: enum, values: [a, b], nullable: true}
    obj: {type: object, nullable: true, fields: {k: {type: string}}}
    nums: {type: list, default: [], items: {type: number}}
    names: {type: list, default: [], items: {type: string}}
    rows:
      type: list
      default: []
      items: {type: object, fields: {v: {type: number, nullable: true}, t: {type: string}}}
verdicts:
  pass: {ok: true, stop: allow}
rules:
  - {id: x, priority: 1, when: {x: {gt: 0.5}}, verdict: pass, reason: x, message: m}
  - {id: xn, priority: 1, when: {x: {lte: {field: n}}}, verdict: pass, reason: xn, message: m}
  - {id: b, priority: 1, when: {b: false}, verdict: pass, reason: b, message: m}
  - {id: s, priority: 1, when: {s: {glob: "a*"}}, verdict: pass, reason: s, message: m}
  - {id: s2, priority: 1, when: {s: "é\\"q"}, verdict: pass, reason: s2, message: m}
  - {id: e, priority: 1, when: {e: a}, verdict: pass, reason: e, message: m}
  - {id: o, priority: 1, when: {obj: {exists: true}}, verdict: pass, reason: o, message: m}
  - {id: nums, priority: 1, when: {"nums[]": {in: [1, 2.5, 1.0e-9]}}, verdict: pass, reason: nums, message: m}
  - {id: names, priority: 1, when: {"names[]": {starts_with: "q"}}, verdict: pass, reason: names, message: m}
  - {id: rows, priority: 1, when: {some: rows, where: {all: [{v: {lt: 0}}, {t: {ends_with: z}}]}}, verdict: pass,
     reason: rows, message: m}
  - {id: z, priority: 0, when: true, verdict: pass, reason: z, message: m}
"""

PROJECTION_FACTS = [
    {},
    {"x": 1e-09, "n": 2**40, "b": False, "s": "abc", "e": "a", "obj": {"k": "v"}},
    {"x": 1e16, "n": -3, "b": None, "s": None, "e": None, "obj": None},
    {"x": -0.0, "n": 0, "b": True, "s": 'é"q', "nums": [1, 2.5, 1e-09, -0.0, 3e20], "names": ["qx", "é", ""]},
    {"x": 3, "n": 3, "s": "a\u2028\x01\\", "rows": [{"v": -1e-07, "t": "z"}, {"t": "yz"}, {"v": None, "t": ""}]},
    {"x": 0.1 + 0.2, "nums": [], "names": ["1e-09"], "rows": []},
]
