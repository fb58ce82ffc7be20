"""The engine's known limits are handled by the compiler: rule counts, fact size, field names."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from stoprule import load_policy
from stoprule.engine.build import RULES_PER_RULESET, compile_pack

HEADER = """
schema:
  fields:
    n: {type: int}
    id: {type: string}
    sid: {type: string}
    tag: {type: string}
verdicts:
  pass: {ok: true, stop: allow}
  hit: {ok: false, stop: block}
rules:
  - {id: fallback, priority: 0, when: true, verdict: pass, reason: fallback, message: m}
"""


def test_large_pack_is_split_and_still_exact(tmp_path: Path) -> None:
    rules = "".join(
        f"  - {{id: r{i}, priority: {i + 1}, when: {{n: {{gte: {i}}}}}, verdict: hit, reason: r{i}, message: m}}\n"
        for i in range(300)
    )
    (tmp_path / "pack.yaml").write_text(HEADER + rules)
    ctx = compile_pack(tmp_path)
    assert ctx.compiled is not None
    assert len(ctx.compiled.rulesets) >= 300 // RULES_PER_RULESET
    assert all(len(rs) <= 100 for rs in ctx.compiled.rulesets)
    policy = load_policy(tmp_path, cache=False)
    for n in (0, 1, 63, 64, 65, 150, 299, 500):
        v = policy.evaluate({"n": n})
        assert v.rule == f"pack.r{min(n, 299)}"
        assert len(v.matched) == min(n, 299) + 2  # r0..rn plus the fallback, each once


@pytest.mark.parametrize("field", ["id", "sid"])
def test_fields_named_like_engine_keys(tmp_path: Path, field: str) -> None:
    """User fields called id/sid must not change the engine's fact identity or session."""
    rule = f"  - {{id: x, priority: 5, when: {{{field}: abc}}, verdict: hit, reason: x, message: m}}\n"
    (tmp_path / "pack.yaml").write_text(HEADER + rule)
    policy = load_policy(tmp_path, cache=False)
    assert policy.evaluate({field: "abc"}).rule == "pack.x"
    assert policy.evaluate({field: "abc"}).rule == "pack.x"  # identical fact twice: no "observed" error
    assert policy.evaluate({field: "zzz"}).rule == "pack.fallback"


def test_wide_facts_are_projected(tmp_path: Path) -> None:
    """A fact with hundreds of fields (far over the engine's ~252) evaluates: only read fields are sent."""
    fields = "".join(f"    f{i}: {{type: string}}\n" for i in range(400))
    text = HEADER.replace("    tag: {type: string}\n", "    tag: {type: string}\n" + fields)
    rule = "  - {id: x, priority: 5, when: {f399: z}, verdict: hit, reason: x, message: m}\n"
    (tmp_path / "pack.yaml").write_text(text + rule)
    policy = load_policy(tmp_path, cache=False)
    fact = {f"f{i}": "z" for i in range(400)}
    assert policy.evaluate(fact).rule == "pack.x"
    assert len(policy.compiled.slots) <= 2


# Conditions at the engine's limits (each reported by fuzzing; the conformance corpus's
# limits.yaml holds the same cases for every backend).

LIMITS_HEADER = """
verdicts:
  pass: {ok: true, stop: allow}
  hit: {ok: false, stop: block}
rules:
  - {id: fallback, priority: 0, when: true, verdict: pass, reason: fallback, message: m}
"""


def _pack(tmp_path: Path, schema: str, when: str) -> Any:
    rule = f"  - {{id: x, priority: 5, when: {when}, verdict: hit, reason: x, message: m}}\n"
    (tmp_path / "pack.yaml").write_text(f"schema: {{fields: {schema}}}\n" + LIMITS_HEADER + rule)
    return load_policy(tmp_path, cache=False)


@pytest.mark.parametrize("kind", ["some", "every"])
def test_presence_of_an_object_field_inside_list_items(tmp_path: Path, kind: str) -> None:
    obj = "{type: object, nullable: true, fields: {c: {type: int}}}"
    schema = f"{{items: {{type: list, items: {{type: object, fields: {{o: {obj}}}}}}}}}"
    policy = _pack(tmp_path, schema, f"{{{kind}: items, where: {{o: {{exists: true}}}}}}")
    assert policy.evaluate({"items": [{"o": {"c": 1}}]}).rule == "pack.x"
    assert policy.evaluate({"items": [{"o": {}}]}).rule == "pack.x"
    assert policy.evaluate({"items": [{"o": None}]}).rule == "pack.fallback"
    assert policy.evaluate({"items": [{}]}).rule == "pack.fallback"


def test_a_wide_any_whose_alternatives_all_hold(tmp_path: Path) -> None:
    """65 alternatives matching at once overflow the engine's match stack (its error 303):
    that fact is decided by the reference interpreter."""
    when = "{any: [" + ", ".join(f"{{n: {{gt: {i}}}}}" for i in range(65)) + "]}"
    policy = _pack(tmp_path, "{n: {type: int}}", when)
    facts = [{"n": 100}, {"n": 3}, {"n": 0}, {"n": 100}]
    assert [v.rule for v in policy.evaluate_many(facts, on_error="return")] == [  # type: ignore[union-attr]
        "pack.x",
        "pack.x",
        "pack.fallback",
        "pack.x",
    ]
    assert policy.evaluate({"n": 64}).rule == "pack.x"


def test_the_default_pack_with_any_for_a_receipt_compiles_and_decides(tmp_path: Path) -> None:
    """A one-word edit of the default pack used to be refused (the engine's error 113: too many
    expressions in one rule): such a rule is decided by the reference interpreter."""
    import shutil

    from stoprule.engine.interpret import evaluate

    pack = tmp_path / "p"
    shutil.copytree(Path(__file__).resolve().parents[2] / "policies", pack)
    vocab = pack / "vocabulary.yaml"
    text = vocab.read_text()
    head = "  receipt_for_plan:           # names the fact's plan and when it was bound\n"
    edited = text.replace(head + "    all:", head + "    any:")
    assert edited != text
    vocab.write_text(edited)
    built = compile_pack(pack)
    assert built.compiled.in_python  # the rules the engine refuses
    policy = load_policy(pack, cache=False)
    facts = [
        {"status": "implemented", "planId": "p", "dispatchReceipt": {"planId": "q", "boundAt": "t", "taskId": "a"}},
        {"status": "implemented", "planId": "p", "dispatchReceipt": {"planId": "p"}, "nextTaskId": "a"},
        {"status": "implemented", "turn": 3, "max_turns": 4},
    ]
    for fact in facts:
        data = policy.validate(fact)
        want = {r.id for r in built.checked.rules if evaluate(r.when, data)}
        assert {r.id for r in policy.matched_rules(fact)} == want, fact


def test_an_int_plus_offset_against_a_float_is_exact(tmp_path: Path) -> None:
    """The engine adds in doubles: 9007199254740991 + 2 would round to 2**53."""
    policy = _pack(tmp_path, "{a: {type: number}, b: {type: int}}", "{a: {lt: {field: b, offset: 2}}}")
    assert policy.evaluate({"a": 9007199254740992.0, "b": 9007199254740991}).rule == "pack.x"
    assert policy.evaluate({"a": 9007199254740994.0, "b": 9007199254740991}).rule == "pack.fallback"
    assert policy.evaluate({"a": 1.5, "b": 0}).rule == "pack.x"
