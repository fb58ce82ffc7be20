"""The generated projector sends the engine the very text a plain reading of the pack's slots
gives, for every field type (the engine matches strings and numbers byte for byte)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from stoprule.engine.build import compile_pack
from stoprule.engine.durable import encode
from stoprule.engine.evaluator import Evaluator
from stoprule.engine.interpret import evaluate

_ABSENT = object()


def _read(obj: Any, path: tuple[str, ...]) -> Any:
    """The value at ``path`` (``_ABSENT`` where a step is missing or not an object)."""
    for step in path:
        if type(obj) is not dict or step not in obj:
            return _ABSENT
        obj = obj[step]
    return obj


def _put(slot: Any, value: Any, out: dict[str, Any]) -> None:
    from stoprule.language import patterns

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
    whole of it, or each ruleset's keys of it."""
    ref = reference_projection(ev.compiled, fact)
    keys = ev.compiled.ruleset_keys
    if keys is None:
        assert ev._project_json is not None
        assert ev._project_json(fact) == encode(ref)[1:], fact
        return
    for project, ks in zip(ev._project_parts, keys, strict=True):
        assert project(fact) == encode({k: v for k, v in ref.items() if k in ks})[1:], fact


PACK = """
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

FACTS = [
    {},
    {"x": 1e-09, "n": 2**40, "b": False, "s": "abc", "e": "a", "obj": {"k": "v"}},
    {"x": 1e16, "n": -3, "b": None, "s": None, "e": None, "obj": None},
    {"x": -0.0, "n": 0, "b": True, "s": 'é"q', "nums": [1, 2.5, 1e-09, -0.0, 3e+20], "names": ["qx", "é", ""]},
    {"x": 3, "n": 3, "s": "a\u2028\x01\\", "rows": [{"v": -1e-07, "t": "z"}, {"t": "yz"}, {"v": None, "t": ""}]},
    {"x": 0.1 + 0.2, "nums": [], "names": ["1e-09"], "rows": []},
]


def test_projection_is_the_reference_and_the_engine_agrees_with_the_interpreter(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text(PACK)
    ctx = compile_pack(tmp_path)
    ev = Evaluator(ctx.compiled)
    seen: set[str] = set()
    for raw in FACTS:
        fact = ev.validate(raw)
        same_projection(ev, fact)
        engine = {r.id for r in ev.matched_rules(fact)}
        assert engine == {r.id for r in ctx.checked.rules if evaluate(r.when, fact)}, raw
        seen |= engine
    assert len(seen) >= 8


def test_compiled_templates_render_as_render_does() -> None:
    import random

    from test_engine_vs_interpreter import random_fact

    from stoprule import load_policy
    from stoprule.language.templates import compile_template, render

    ev = load_policy(Path(__file__).resolve().parents[2] / "policies", cache=False)
    sets = ev.compiled.sets
    templates = [t for r in ev.compiled.rules for t in (r.message, r.review_reason) if t]
    compiled = [(t, compile_template(t, sets)) for t in templates]
    rng = random.Random(3)
    for _ in range(300):
        fact = ev.validate(random_fact(rng))
        for t, fn in compiled:
            assert fn(fact) == render(t, fact, sets)
    extra = ("a {{", ("set", ("nope",), None), ("field", ("x", "y"), "fb"), ("field", ("l[]", "k"), None), "}")
    for fact in ({}, {"x": {"y": ""}}, {"x": {"y": [1, {"a": True}]}, "l": [{"k": 1}, {"k": None}, 3]}):
        assert compile_template(extra, sets)(fact) == render(extra, fact, sets)
    assert compile_template((), sets)({}) == ""
