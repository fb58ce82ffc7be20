"""The optional C accelerator (stoprule/engine/speedups.py, ``_speedups.c``) gives what the Python
path gives: the same verdict, warnings or error for every fact, the same validated data and the
same projection text; a development install has it (``STOPRULE_REQUIRE_SPEEDUPS=1``, set by
.ci/run, turns a missing build into a failure instead of a skip)."""

from __future__ import annotations

import json
import os
import random
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings

from clirunner import cli, process_env
from factgen import any_json, default_build, object_of
from samplepacks import FEATURE_PACK, KEYS, PROJECTION_FACTS, PROJECTION_PACK, feature_value
from stoprule import EvaluationError
from stoprule.engine import batches, speedups
from stoprule.engine.batches import describe_backend
from stoprule.engine.build import compile_pack
from stoprule.engine.evaluator import Evaluator

EV = Evaluator(default_build().compiled)
PY_EV = Evaluator(default_build().compiled, backend=None)  # the Python path only
CHECKED = default_build().checked
REQUIRED = os.environ.get("STOPRULE_REQUIRE_SPEEDUPS") == "1"

pytestmark = pytest.mark.skipif(
    speedups.load() is None and not REQUIRED, reason="the accelerator is not built or is turned off"
)


def _outcome(ev: Evaluator, fact: Any, strict: bool) -> Any:
    try:
        (out,) = ev.evaluate_many([fact], strict=strict)
        return out
    except EvaluationError as exc:
        return [type(exc).__name__, exc.code, exc.field, str(exc)]  # a list: a Verdict is a tuple


def same_as_python(ev: Evaluator, py: Evaluator, fact: Any) -> None:
    """``ev``'s C runner and ``py``'s Python path agree on ``fact``, with and without strict."""
    run = batches.runner(ev)
    assert run is not None
    for strict in (False, True):
        taken = run(fact)  # a verdict, or None: left to the Python path
        want = _outcome(py, fact, strict)
        if taken is not None:
            assert not isinstance(want, list) or (strict and taken.warnings), (fact, want)
            if not (strict and taken.warnings):
                assert taken == want, fact
        assert _outcome(ev, fact, strict) == want, fact


def test_the_accelerator_is_built_and_used() -> None:
    assert speedups.load() is not None
    assert EV.backend == "c" and PY_EV.backend == "python"
    assert "c accelerator" in describe_backend()
    fact = {"status": "implemented", "turn": 1, "max_turns": 9, "session": "s1"}
    run = batches.runner(EV)
    assert run is not None
    verdict = run(fact)
    assert verdict is not None and verdict.warnings[0]["field"] == "session"
    assert [verdict] == PY_EV.evaluate_many([fact])


def test_turned_off_by_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STOPRULE_SPEEDUPS", "0")
    assert speedups.load() is None
    assert Evaluator(EV.compiled).backend == "python"
    assert "python" in describe_backend() and "c accelerator" not in describe_backend()


@pytest.mark.integration
@settings(settings.get_profile("default-fuzz"))
@given(object_of(CHECKED.schema.root))
@example({"status": "implemented", "plan_id": "p", "planId": "q"})  # a field given twice
@example({"status": "implemented", "blocked_report": {"extra": 1}})  # an unknown key below the top
@example({"review_reason": "", "requires_user_review": True})  # required_if
def test_default_pack_facts_agree(fact: dict[str, Any]) -> None:
    same_as_python(EV, PY_EV, fact)


@pytest.mark.torture
@settings(settings.get_profile("torture-fuzz"))
@given(object_of(CHECKED.schema.root))
def test_default_pack_facts_agree_long(fact: dict[str, Any]) -> None:
    same_as_python(EV, PY_EV, fact)


@settings(settings.get_profile("default-fuzz"))
@given(any_json)
def test_any_json_value_agrees(fact: Any) -> None:
    same_as_python(EV, PY_EV, fact)


def test_random_default_pack_facts_agree() -> None:
    """The benchmark's kind of facts (every decision row, varied lower-priority aspects)."""
    from factgen import random_fact

    rng = random.Random(20251125)
    facts = [random_fact(rng) for _ in range(1500)]
    assert EV.evaluate_many(facts, on_error="return") == PY_EV.evaluate_many(facts, on_error="return")
    run = batches.runner(EV)
    assert run is not None and sum(run(f) is not None for f in facts) >= 1000  # the runner took most


def _pair(tmp_path: Path, pack: str) -> tuple[Evaluator, Evaluator]:
    (tmp_path / "p.yaml").write_text(pack)
    compiled = compile_pack(tmp_path).compiled
    return Evaluator(compiled), Evaluator(compiled, backend=None)


def test_every_schema_feature_agrees(tmp_path: Path) -> None:
    """Aliases, defaults, required, required_if, nullable objects, lists of objects: random
    facts, with the validated data the same too."""
    ev, py = _pair(tmp_path, FEATURE_PACK)
    run = batches.runner(ev)
    assert run is not None
    rng = random.Random(20251123)
    taken = 0
    for _ in range(3000):
        fact = {rng.choice(KEYS): feature_value(rng, rng.choice(KEYS)) for _ in range(rng.randrange(7))}
        if rng.random() < 0.5:
            fact["name"] = rng.choice(["n", "é", 1])
        same_as_python(ev, py, fact)
        taken += run(fact) is not None
    assert taken >= 50  # the accelerator took its share (most of these facts are invalid)


def test_projection_text_and_data_are_the_generated_projectors(tmp_path: Path) -> None:
    ev, py = _pair(tmp_path, PROJECTION_PACK)
    run = batches.runner(ev)
    assert run is not None
    runner = run.__self__  # type: ignore[attr-defined]
    projected = 0
    for fact in PROJECTION_FACTS:
        same_as_python(ev, py, fact)
        got = runner.project(fact)
        if got is None:  # left to Python (a non-ASCII string, the empty fact)
            continue
        projected += 1
        data, text = got
        assert data == py.validate(fact)
        assert ev._project_json is not None and text == ev._project_json(py.validate(fact)), fact
    assert projected >= 3


def test_engine_rule_names_map_to_bits() -> None:
    assert speedups.names_program(["r0", "r1", "h0"]) == ({"h": (0, 1), "r": (1, 2)}, {"r0": 1, "r1": 2, "h0": 0})
    assert speedups.names_program(["rule-1"]) is None  # the Python path then


def test_the_cli_gives_the_same_output_without_the_accelerator(tmp_path: Path) -> None:
    rng = random.Random(7)
    lines = []
    for i in range(300):
        fact: dict[str, Any] = {"status": rng.choice(["implemented", "partial", "blocked"]), "turn": i % 9 + 1}
        fact["max_turns"] = 9
        if i % 3 == 0:
            fact["session"] = f"s{i}"  # an unknown field: a warning
        if i % 5 == 0:
            fact["plan_id"] = "p"  # an alias
        lines.append(json.dumps(fact))
    lines.append('{"status": 3}')  # an error
    (tmp_path / "facts.ndjson").write_text("\n".join(lines) + "\n")
    outputs = []
    for flag in ("1", "0"):
        with process_env({"STOPRULE_SPEEDUPS": flag}, tmp_path):
            r = cli("eval", "facts.ndjson")
        outputs.append((r.code, r.out, r.err))
    assert outputs[0] == outputs[1]
    assert outputs[0][1].count("\n") == 301 and '"warnings"' in outputs[0][1]


class _Meddler:
    """A key that looks like ``name`` and changes the fact when compared (once)."""

    def __init__(self, name: str, act: Any) -> None:
        self.name, self.act = name, act

    def __hash__(self) -> int:
        return hash(self.name)

    def __eq__(self, other: object) -> bool:
        act, self.act = self.act, None
        if act is not None:
            act()
        return other == self.name


def test_a_fact_changed_while_it_is_read_is_left_to_python_or_read_safely() -> None:
    """Found under AddressSanitizer: the runner held values it had not taken a reference to."""
    run = batches.runner(EV)
    assert run is not None
    fact: dict[str, Any] = {"status": "partial", "turn": 1, "max_turns": 9, "plan_id": "p"}  # an alias: the walk
    fact["partial_progress"] = {_Meddler("stage", lambda: fact.pop("partial_progress")): "s"}
    for _ in range(3):
        run(fact)  # no crash; the result is the Python path's or None
    old = {"id": "z"}
    rows: list[Any] = [{"blocks_progress": True}, {"id": "x"}, old]
    rows[1][_Meddler("category", lambda: rows.__setitem__(2, {"blocks_progress": False}))] = "c"
    before = sys.getrefcount(old)
    verdict = run({"status": "partial", "turn": 1, "max_turns": 9, "openBlockers": rows})
    assert verdict is None  # a key that is not a str: left to Python
    assert rows[2] is old  # the runner never compares a fact's keys by Python code
    assert sys.getrefcount(old) == before  # and holds nothing on to them


_RULES = """
sets:
  s: {members: [p, q]}
high_risk_stops:
  - {id: flagged, description: f, when: {flag: true}}
  - {id: kind_b, description: k, when: {kind: b}}
verdicts:
  pass: {ok: true, stop: allow}
  review: {ok: false, stop: block, requires_user_review: true}
rules:
  - id: a
    priority: 5
    when: {flag: true}
    verdict: review
    reason: a
    message: "name {name}, kind {kind}, level {level|none}, n={n}, x={x}, tags {tags}, nums {nums|no nums}"
    review_reason: "strict {strict} k {strict.k|–} j {strict.j}; items {report.items[].a}, bs {report.items[].b|∅}"
  - id: b
    priority: 3
    when: {kind: b}
    verdict: pass
    reason: b
    message: "{report.items} / {report} / {x|0} / {why} {@s} {{literal}} é"
  - id: c
    priority: 2
    when: {n: 3}
    verdict: pass
    reason: c
    message: "{report.items[]} {tags[]} {nums[]|none}"
  - {id: z, priority: 0, when: true, verdict: pass, reason: z, message: constant}
"""
MESSAGES_PACK = FEATURE_PACK.split("verdicts:")[0] + _RULES


_SHOWN: list[dict[str, Any]] = [
    {"report": {"items": [{"a": "s", "b": True}, {"a": "t", "b": False}, {"a": "u", "b": None}, {"a": ""}]}},
    {"report": {"items": []}, "x": 1.5, "nums": [1, 2.5, -0.0]},
    {"report": None, "x": 10**20, "nums": [], "tags": ["t", "é", ""]},
    {"strict": {"k": "v", "j": 2}, "tags": [], "level": None, "x": -3},
    {"strict": {"k": ""}, "x": 1e300, "nums": None},
    {"strict": None, "level": "y", "n": 0},
]


def test_messages_matches_and_stops_agree(tmp_path: Path) -> None:
    """Every kind of message placeholder (nested, list items, fallbacks, sets, objects and lists
    shown whole, non-ASCII text) and varied sets of matched rules and high-risk stops: the
    verdicts the runner builds are the Python path's."""
    ev, py = _pair(tmp_path, MESSAGES_PACK)
    run = batches.runner(ev)
    assert run is not None
    rng = random.Random(7)
    taken, winners = 0, set()
    for _ in range(3000):
        fact = {rng.choice(KEYS): feature_value(rng, rng.choice(KEYS)) for _ in range(rng.randrange(9))}
        fact.setdefault("name", rng.choice(["n", "", "é"]))
        if rng.random() < 0.3:  # rule a and the stop "flagged"
            fact.update(flag=True, why=rng.choice(["w", "é"]))
        if rng.random() < 0.3:  # rule b and the stop "kind_b"
            fact["kind"] = "b"
        if rng.random() < 0.5:  # valid values of every shape, for the messages to show
            fact.update(rng.choice(_SHOWN))
        same_as_python(ev, py, fact)
        verdict = run(fact)
        if verdict is not None:
            taken += 1
            winners.add((verdict.rule, verdict.high_risk_stop, len(verdict.matched)))
    assert taken >= 200  # most random facts are invalid: left to Python
    assert {w[0] for w in winners} == {"p.a", "p.b", "p.c", "p.z"}
    assert {w[1] for w in winners} == {None, "flagged", "kind_b"}


DEFAULTS_PACK = """
schema:
  fields:
    cfg:
      type: object
      default: {}
      fields:
        mode: {type: string, default: strict}
        inner: {type: object, default: {}, fields: {level: {type: int, default: 2}}}
    outer:
      type: list
      default: []
      items:
        type: object
        fields:
          inner: {type: list, nullable: true, items: {type: object, fields: {s: {type: string, nullable: true}}}}
verdicts:
  pass: {ok: true, stop: allow}
  block: {ok: false, stop: block}
rules:
  - id: strict
    priority: 2
    when: {cfg.mode: {eq: strict}}
    verdict: block
    reason: s
    message: "[{outer[].inner[].s|none}]"
  - {id: deep, priority: 1, when: {cfg.inner.level: {eq: 2}}, verdict: block, reason: d, message: "d"}
  - {id: z, priority: 0, when: true, verdict: pass, reason: z, message: "[{outer[].inner[].s|none}]"}
"""


def test_defaulted_objects_and_nested_item_paths_agree(tmp_path: Path) -> None:
    """The projection reads below an object given its default; an item path's empty text is
    None before it is joined into the items above."""
    ev, py = _pair(tmp_path, DEFAULTS_PACK)
    run = batches.runner(ev)
    assert run is not None
    outer = [{"inner": [{"s": ""}]}, {"inner": [{"s": "x"}]}]
    for fact in ({"outer": []}, {"cfg": {}}, {"cfg": {"inner": {}}}, {"outer": outer}, {"cfg": {"mode": "m"}}):
        verdict = run(fact)
        assert verdict is not None and verdict == py.evaluate(fact), fact
        same_as_python(ev, py, fact)


def test_a_pack_that_rejects_unknown_fields_runs_in_python(tmp_path: Path) -> None:
    """The runner lists unknown top-level keys as warnings; with ``additional_fields: reject``
    they are errors, so such a pack is left to the Python path."""
    ev, py = _pair(tmp_path, FEATURE_PACK.replace("schema:\n", "schema:\n  additional_fields: reject\n", 1))
    assert batches.runner(ev) is None and ev.backend == "python"
    out = ev.evaluate_many([{"name": "a", "zz": 1}, {"name": "a"}], on_error="return")
    assert isinstance(out[0], EvaluationError) and out[0].code == "fact.unknown_field"
    assert out == py.evaluate_many([{"name": "a", "zz": 1}, {"name": "a"}], on_error="return")


def test_an_engine_error_leaves_the_fact_to_the_python_path(tmp_path: Path) -> None:
    """A fact that meets one of the engine's limits while matching (its match stack, 64 deep)
    is decided by the reference interpreter on the Python path, never raised from the batch."""
    alts = ", ".join(f"{{n: {{gt: {i}}}}}" for i in range(70))
    pack = f"""
schema:
  fields:
    n: {{type: int}}
verdicts:
  pass: {{ok: true, stop: allow}}
  block: {{ok: false, stop: block}}
rules:
  - {{id: wide, priority: 1, when: {{any: [{alts}]}}, verdict: block, reason: w, message: w}}
  - {{id: z, priority: 0, when: true, verdict: pass, reason: z, message: z}}
"""
    ev, py = _pair(tmp_path, pack)
    facts = [{"n": n} for n in (-1, 0, 1, 50, 100)]
    assert ev.evaluate_many(facts, on_error="return") == py.evaluate_many(facts, on_error="return")
    assert [v.rule for v in ev.evaluate_many(facts)] == ["p.z", "p.z", "p.wide", "p.wide", "p.wide"]


def test_a_malformed_verdict_program_is_refused_when_the_runner_is_made(monkeypatch: pytest.MonkeyPatch) -> None:
    """The shape of every rule's verdict program is checked once, when the runner is made (so
    deciding a fact need not check it): a message field that is not (path, text) is refused."""
    good = speedups.verdict_program

    def bad(prototype: Any, messages: Any, sets: Any) -> Any:
        proto, fills = good(prototype, messages, sets)
        return proto, tuple((at, ("x", ("path-not-a-tuple", "-"))) for at, _ in fills) or ((0, (1,)),)

    monkeypatch.setattr(speedups, "verdict_program", bad)
    with pytest.raises(ValueError, match="ranked"):
        batches.runner(Evaluator(EV.compiled))
