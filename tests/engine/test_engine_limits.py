"""The engine's known limits are handled by the compiler: rule counts, fact size, field names."""

from __future__ import annotations

from pathlib import Path

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
