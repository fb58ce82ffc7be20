"""The projector that writes the engine's JSON directly sends the very text the dict projection
would, for every field type (the engine matches strings and numbers byte for byte)."""

from __future__ import annotations

from pathlib import Path

from stoprule.compiler import compile_pack
from stoprule.engine import encode
from stoprule.evaluator import Evaluator
from stoprule.interpret import evaluate

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


def test_fused_projection_matches_the_dict_projection_and_the_reference(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text(PACK)
    ctx = compile_pack(tmp_path)
    ev = Evaluator(ctx.compiled)
    assert ev._project_json is not None
    seen: set[str] = set()
    for raw in FACTS:
        fact = ev.validate(raw)
        assert ev._project_json(fact) == encode(ev._project(fact))[1:], raw
        engine = {r.id for r in ev.matched_rules(fact)}
        assert engine == {r.id for r in ctx.checked.rules if evaluate(r.when, fact)}, raw
        seen |= engine
    assert len(seen) >= 8


def test_compiled_templates_render_as_render_does() -> None:
    import random

    from stoprule import load_policy
    from stoprule.templates import compile_template, render
    from test_engine_vs_interpreter import random_fact

    ev = load_policy(Path(__file__).resolve().parent.parent / "policies", cache=False)
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
