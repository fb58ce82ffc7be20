"""The projector (generated, or not: ``Evaluator._use_code``) sends the engine the very text a
plain reading of the pack's slots gives, for every field type (the engine matches strings and
numbers byte for byte); the message renderers, generated or not, write the same text."""

from __future__ import annotations

import random
from pathlib import Path

from factgen import random_fact
from samplepacks import PROJECTION_FACTS, PROJECTION_PACK, same_projection
from stoprule.engine.build import compile_pack
from stoprule.engine.evaluator import Evaluator
from stoprule.engine.interpret import evaluate
from stoprule.language.template_compiler import compile_template
from stoprule.language.templates import render


def test_projection_is_the_reference_and_the_engine_agrees_with_the_interpreter(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text(PROJECTION_PACK)
    ctx = compile_pack(tmp_path)
    ev = Evaluator(ctx.compiled)
    seen: set[str] = set()
    for raw in PROJECTION_FACTS:
        fact = ev.validate(raw)
        same_projection(ev, fact)
        engine = {r.id for r in ev.matched_rules(fact)}
        assert engine == {r.id for r in ctx.checked.rules if evaluate(r.when, fact)}, raw
        seen |= engine
    assert len(seen) >= 8


def test_compiled_templates_render_as_the_direct_renderer_does(evaluator: Evaluator) -> None:
    ev = evaluator
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
