"""Differential test: the durable_rules lowering agrees with the reference semantics.

For thousands of random facts, the set of rules the engine matches must equal the set
of rules whose condition tree the interpreter finds true, and the high-risk stop too.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from factgen import random_fact
from samplepacks import same_projection
from stoprule.engine.build import compile_pack
from stoprule.engine.evaluator import Evaluator
from stoprule.engine.interpret import evaluate


@pytest.fixture(scope="module")
def compiled_ctx(default_pack: Path):  # noqa: ANN201
    return compile_pack(default_pack)


def test_engine_matches_reference_semantics(compiled_ctx) -> None:  # noqa: ANN001
    ctx = compiled_ctx
    ev = Evaluator(ctx.compiled)
    rng = random.Random(20261122)
    seen_rules: set[str] = set()
    for _ in range(1000):  # the generator reaches every rule by its 163rd fact
        fact = ev.validate(random_fact(rng))
        engine = {r.id for r in ev.matched_rules(fact)}
        reference = {r.id for r in ctx.checked.rules if evaluate(r.when, fact)}
        assert engine == reference, fact
        stops = [s.id for s in ctx.checked.stops if evaluate(s.when, fact)]
        assert ev.evaluate(fact).high_risk_stop == (stops[0] if stops else None), fact
        seen_rules |= engine
    # the generator reaches every rule, so the comparison above is not vacuous
    assert seen_rules == {r.id for r in ctx.checked.rules}


GLOB_PACK = """
schema:
  fields:
    name: {type: string}
    tags: {type: list, default: [], items: {type: string}}
verdicts:
  pass: {ok: true, stop: allow}
rules:
  - {id: a, priority: 1, when: {name: {glob: "deploy_*"}}, verdict: pass, reason: a, message: m}
  - {id: b, priority: 1, when: {name: {glob: "a.b?"}}, verdict: pass, reason: b, message: m}
  - {id: c, priority: 1, when: {name: {glob: "[!x]%d*"}}, verdict: pass, reason: c, message: m}
  - {id: d, priority: 1, when: {name: {glob: "lit\\\\*"}}, verdict: pass, reason: d, message: m}
  - {id: e, priority: 1, when: {"tags[]": {glob: "*-[0-9]"}}, verdict: pass, reason: e, message: m}
  - {id: f, priority: 1, when: {name: {glob: "(x)+"}}, verdict: pass, reason: f, message: m}
  - {id: g, priority: 1, when: {name: {glob: "*-*"}}, verdict: pass, reason: g, message: m}
  - {id: h, priority: 1, when: {name: {glob: "^*$"}}, verdict: pass, reason: h, message: m}
  - {id: i, priority: 1, when: {name: {glob: "a|b{c}*"}}, verdict: pass, reason: i, message: m}
  - {id: j, priority: 1, when: {name: {glob: "a/b?"}}, verdict: pass, reason: j, message: m}
  - {id: k, priority: 1, when: {name: {glob: "[a-c]x[%]"}}, verdict: pass, reason: k, message: m}
  - {id: l, priority: 1, when: {name: {glob: "caf?"}}, verdict: pass, reason: l, message: m}
  - {id: n, priority: 1, when: {name: "日本"}, verdict: pass, reason: n, message: m}
  - {id: o, priority: 1, when: {name: {glob: "?本*"}}, verdict: pass, reason: o, message: m}
  - {id: z, priority: 0, when: true, verdict: pass, reason: z, message: m}
"""


@pytest.mark.parametrize(
    "name",
    [
        "deploy_prod",
        "deploy_",
        "xdeploy_",
        "a.bc",
        "axbc",
        "a.b",
        "y%dzz",
        "x%d",
        "%d",
        "lit*",
        "litx",
        "(x)+",
        "x",
        "a-b",
        "ab",
        "^x$",
        "^$",
        "a|b{c}!",
        "ab{c}",
        "a/bc",
        "a/b",
        "bx%",
        "dx%",
        "a\\b",
        "café",
        "cafe",
        "日本",
        "日本語",
        "本",
    ],
)
def test_glob_engine_agrees_with_reference(tmp_path: Path, name: str) -> None:
    (tmp_path / "p.yaml").write_text(GLOB_PACK)
    ctx = compile_pack(tmp_path)
    ev = Evaluator(ctx.compiled)
    fact = ev.validate({"name": name, "tags": [name + "-1", "q"]})
    engine = {r.id for r in ev.matched_rules(fact)}
    reference = {r.id for r in ctx.checked.rules if evaluate(r.when, fact)}
    assert engine == reference


SET_PACK = """
schema:
  fields:
    errors:
      type: list
      default: []
      items:
        type: object
        fields:
          type: {type: string, nullable: true}
          code: {type: int, nullable: true}
    tags: {type: list, default: [], items: {type: string}}
sets:
  soft: [timeout, transient, partial]
verdicts:
  pass: {ok: true, stop: allow}
rules:
  - {id: some_in, priority: 1, when: {some: errors, where: {type: {in: soft}}}, verdict: pass, reason: a, message: m}
  - {id: every_in, priority: 1, when: {every: errors, where: {type: {in: soft}}}, verdict: pass, reason: b, message: m}
  - {id: every_not_in, priority: 1, when: {every: errors, where: {type: {not_in: soft}}}, verdict: pass, reason: c,
     message: m}
  - {id: not_every_in, priority: 1, when: {not: {every: errors, where: {type: {in: soft}}}}, verdict: pass,
     reason: e, message: m}
  - {id: some_in_and_code, priority: 1, when: {some: errors, where: {all: [{type: {in: soft}}, {code: {in: [1, 2]}}]}},
     verdict: pass, reason: g, message: m}
  - {id: every_code_in, priority: 1, when: {every: errors, where: {code: {in: [1, 2, 3]}}}, verdict: pass, reason: h,
     message: m}
  - {id: tags_in, priority: 1, when: {"tags[]": {in: [timeout, x, y]}}, verdict: pass, reason: i, message: m}
  - {id: no_tag_in, priority: 1, when: {not: {"tags[]": {in: [x, y]}}}, verdict: pass, reason: j, message: m}
  - {id: z, priority: 0, when: true, verdict: pass, reason: z, message: m}
"""


def test_set_membership_under_quantifiers_agrees_with_reference(tmp_path: Path) -> None:
    """``some``/``every`` over ``in``/``not_in`` are one ``$iany``/``$iall`` of a same-key ``$or``:
    the engine must agree with the interpreter on all of them (``every ... in SET`` included).
    The pack's rulesets are created many times over: no flaky engine error."""
    (tmp_path / "p.yaml").write_text(SET_PACK)
    ctx = compile_pack(tmp_path)
    ev = Evaluator(ctx.compiled)
    (rs,) = ctx.compiled.rulesets
    # each quantifier over a set is one quantifier in the engine, its body ending with a plain
    # test (durable_rules reads an uninitialised field of a body that ends with $or)
    assert rs["r0"]["all"][0]["m"]["$and"][1] == {
        "$iany": {
            "l0": {
                "$and": [
                    {"$or": [{"$i.g0": "timeout"}, {"$i.g0": "transient"}, {"$i.g0": "partial"}]},
                    {"$neq": {"$i.g0": None}},
                ]
            }
        }
    }
    assert "$iall" in str(rs["r1"])
    assert ctx.compiled.always == ("r8",)
    rng = random.Random(7)
    words = ["timeout", "transient", "partial", "fatal", "x", "y", None]
    seen: set[str] = set()
    for _ in range(3000):
        errors = []
        for _ in range(rng.randrange(4)):
            item: dict[str, Any] = {}
            if rng.random() < 0.8:
                item["type"] = rng.choice(words)
            if rng.random() < 0.6:
                item["code"] = rng.choice([1, 2, 3, 4, None])
            errors.append(item)
        tags = [rng.choice(["x", "y", "timeout", "q"]) for _ in range(rng.randrange(3))]
        raw: dict[str, Any] = {"errors": errors, "tags": tags}
        fact = ev.validate(raw)
        engine = {r.id for r in ev.matched_rules(fact)}
        reference = {r.id for r in ctx.checked.rules if evaluate(r.when, fact)}
        assert engine == reference, raw
        seen |= engine
    assert seen == {r.id for r in ctx.checked.rules}
    from stoprule.engine.durable import check_ruleset

    for _ in range(300):
        assert check_ruleset(rs) is None


@pytest.mark.integration
def test_projection_is_the_reference_projection(compiled_ctx) -> None:  # noqa: ANN001
    """The generated projector sends the engine the very text a plain reading of the pack's
    slots gives (the engine matches strings byte for byte)."""
    ev = Evaluator(compiled_ctx.compiled)
    rng = random.Random(5)
    for _ in range(3000):
        same_projection(ev, ev.validate(random_fact(rng)))
    for value in ('é\u2028"\\', "1e-09", ""):  # non-ASCII, escapes, an exponent-looking string
        same_projection(ev, ev.validate({"nextTaskId": value, "planId": value, "turn": 2**40, "status": "blocked"}))
