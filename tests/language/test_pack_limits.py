"""Every pack input gets diagnostics within bounded time and memory; what compiles evaluates.

One test per limit of :mod:`stoprule.limits` (code, file and line), the engine limits
those are derived from (measured here), and regression tests for the crashes, tracebacks
and wrong matches found by fuzzing packs (issue 11). CLI cases run a real process.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from samplepacks import same_projection
from stoprule import load_policy
from stoprule.analysis.strings import string_classes
from stoprule.diagnostic import Diagnostic
from stoprule.diagnostics import PolicyError
from stoprule.engine.build import compile_pack
from stoprule.engine.durable import _dre as dre  # the engine stoprule runs on (built in, or beside it)
from stoprule.engine.durable import encode
from stoprule.engine.evaluator import Evaluator
from stoprule.engine.interpret import evaluate
from stoprule.language.operators import glob_regex
from stoprule.language.patterns import glob_matcher
from stoprule.limits import (
    ENGINE_MAX_FACT_PROPERTIES,
    MAX_CONDITION_DEPTH,
    MAX_FILE_BYTES,
    MAX_GLOB_LENGTH,
    MAX_GLOB_STARS,
    MAX_RULES,
    MAX_SET_MEMBERS,
    MAX_STRING_LITERAL,
    MAX_YAML_DEPTH,
    SAFE_INT,
)

HEAD = """\
schema:
  fields:
    turn: {type: int}
    max_turns: {type: int}
    score: {type: number}
    name: {type: string}
    tags: {type: list, default: [], items: {type: string}}
verdicts:
  pass: {ok: true, stop: allow}
  hit: {ok: false, stop: block}
"""
FALLBACK = "  - {id: z, priority: 0, when: true, verdict: pass, reason: z, message: m}\n"


def pack(tmp_path: Path, rules: str = "", head: str = HEAD, tail: str = "") -> Path:
    root = tmp_path / "p"
    root.mkdir(exist_ok=True)
    (root / "p.yaml").write_text(head + tail + "rules:\n" + rules + FALLBACK)
    return root


def rule(when: str, rid: str = "r") -> str:
    return f"  - {{id: {rid}, priority: 5, when: {when}, verdict: hit, reason: r, message: m}}\n"


def diag(root: Path) -> Diagnostic:
    with pytest.raises(PolicyError) as info:
        compile_pack(root)
    assert info.value.diagnostics, info.value
    d = info.value.diagnostics[0]
    assert "\n" not in d.format()
    return d


# ---------------------------------------------------------------- the engine's own limits, measured


def _assert(handle: int, fact: dict) -> str:
    text = json.dumps(fact)
    try:
        if dre.assert_fact(handle, text)[0] == 0:
            dre.retract_fact(handle, text)
        return "ok"
    except Exception as exc:  # the engine's bare error
        return str(exc)


def test_engine_property_limit_is_252() -> None:
    """The engine adds ``sid`` and ``id`` to a fact and refuses its 255th property: 252 of ours."""
    h = dre.create_ruleset("limit-probe", json.dumps({"r": {"all": [{"m": {"_": 1}}]}}))
    try:
        fact = {"_": 1} | {f"f{i}": i for i in range(ENGINE_MAX_FACT_PROPERTIES - 1)}
        assert _assert(h, fact) == "ok"
        assert "302" in _assert(h, fact | {"one_more": 1})
        # a list is one property however many objects it holds
        assert _assert(h, {"_": 1, "l": [{"a": 1}] * 500}) == "ok"
    finally:
        dre.delete_ruleset(h)


def test_engine_rejects_bare_exponents_and_encode_avoids_them() -> None:
    rs = {"r": {"all": [{"m": {"$lt": {"x": 1.0e-08}}}]}}
    with pytest.raises(Exception, match="204"):
        dre.create_ruleset("float-probe", json.dumps(rs))  # "1e-08": in pack literals too
    h = dre.create_ruleset("float-probe", encode(rs))
    try:
        with pytest.raises(Exception, match="204"):
            dre.assert_fact(h, '{"x":1e-09}')
        assert encode({"x": 1e-09}) == '{"x":1.0e-09}'
        assert encode({"x": [1e16, -0.0, 5e-324], "s": "1e-5"}) == '{"x":[1.0e+16,-0.0,5.0e-324],"s":"1e-5"}'
        assert dre.assert_fact(h, encode({"x": 1e-09}))[0] == 0
    finally:
        dre.delete_ruleset(h)


# ---------------------------------------------------------------- YAML and files (CLI: real processes)


def _cli_check(run_cli, root: Path):  # noqa: ANN001, ANN202
    proc = run_cli("check", "--policy", str(root))
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-1000:])
    assert "Traceback" not in proc.stderr
    return proc.stdout


def test_deep_flow_sequence_is_refused_not_a_segfault(run_cli, tmp_path: Path) -> None:  # noqa: ANN001
    root = tmp_path / "p"
    root.mkdir()
    (root / "a.yaml").write_text("rules: " + "[" * 100_000 + "]" * 100_000 + "\n")
    out = _cli_check(run_cli, root)
    # refused at its line, never a crash: by the pack's own depth limit, or by the YAML
    # parser's when that one stops first (PyYAML >= 6.0.4 caps nesting while it scans ahead)
    assert out.startswith("a.yaml:1:")
    ours = f": limit.yaml_depth: mappings and lists nested deeper than {MAX_YAML_DEPTH}"
    assert ours in out or ": yaml.syntax: " in out


def test_alias_bomb_is_refused_at_the_alias(run_cli, tmp_path: Path) -> None:  # noqa: ANN001
    root = tmp_path / "p"
    root.mkdir()
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 10)]
    (root / "a.yaml").write_text("sets:\n" + "".join(f"  {ln}\n" for ln in lines))
    assert "a.yaml:7:" in _cli_check(run_cli, root)  # a6 expands past 200,000 values
    (root / "a.yaml").write_text("sets:\n  x: &a [1, *a]\n")
    assert "yaml.recursive_alias" in _cli_check(run_cli, root)


def test_huge_integer_literal_is_a_diagnostic(run_cli, tmp_path: Path) -> None:  # noqa: ANN001
    root = pack(tmp_path, rule("{turn: 1" + "0" * 5000 + "}"))
    out = _cli_check(run_cli, root)
    assert "p.yaml:12:" in out and "yaml.value" in out


def test_file_size_limit(tmp_path: Path) -> None:
    root = pack(tmp_path, tail="# " + "x" * MAX_FILE_BYTES + "\n")
    d = diag(root)
    assert (d.code, d.file, d.line) == ("limit.file_size", "p.yaml", 1)


def test_lone_surrogates_and_newlines_give_one_line_diagnostics(run_cli, tmp_path: Path) -> None:  # noqa: ANN001
    root = pack(tmp_path, rule('{name: "\\ud800"}'))
    (root / "bad\nname.yaml").write_text("rules: 3\n")
    out = _cli_check(run_cli, root)
    assert all(ln.count(": ") >= 2 for ln in out.splitlines())
    assert "bad\\x0aname.yaml:1:" in out


# ---------------------------------------------------------------- schema and rules


def test_list_without_items_is_the_documented_diagnostic(tmp_path: Path) -> None:
    head = HEAD.replace("    tags: {type: list, default: [], items: {type: string}}\n", "    tags: {type: list}\n")
    d = diag(pack(tmp_path, head=head))
    assert (d.code, d.line, d.path) == ("schema.list_items", 7, "schema.fields.tags")


@pytest.mark.integration
def test_rule_count_limit(tmp_path: Path) -> None:
    d = diag(pack(tmp_path, "".join(rule("{turn: 1}", f"r{i}") for i in range(MAX_RULES))))
    assert d.code == "limit.rules" and d.line == 12 + MAX_RULES  # the last rule (the fallback)


def test_condition_depth_limit(tmp_path: Path) -> None:
    when = "{not: " * (MAX_CONDITION_DEPTH + 1) + "{turn: 1}" + "}" * (MAX_CONDITION_DEPTH + 1)
    d = diag(pack(tmp_path, rule(when)))
    assert (d.code, d.line) == ("limit.condition_depth", 12)


def test_named_conditions_chained_too_deep(tmp_path: Path) -> None:
    conds = "conditions:\n" + "".join(f"  c{i}: {{ref: c{i + 1}}}\n" for i in range(300)) + "  c300: {turn: 1}\n"
    d = diag(pack(tmp_path, rule("{ref: c0}"), tail=conds))
    assert d.code == "limit.condition_depth"


def test_named_conditions_that_double_at_each_level(tmp_path: Path) -> None:
    """30 levels of `all: [ref next, ref next]` would expand to 2^30 nodes: refused, quickly."""
    conds = "conditions:\n" + "".join(f"  c{i}: {{all: [{{ref: c{i + 1}}}, {{ref: c{i + 1}}}]}}\n" for i in range(30))
    d = diag(pack(tmp_path, rule("{ref: c0}"), tail=conds + "  c30: {turn: 1}\n"))
    assert d.code == "limit.condition_size"


@pytest.mark.parametrize(
    ("when", "code"),
    [
        ("{name: {in: [" + ", ".join(f"v{i}" for i in range(MAX_SET_MEMBERS + 1)) + "]}}", "limit.set_members"),
        ("{name: " + "x" * (MAX_STRING_LITERAL + 1) + "}", "limit.literal_length"),
        ('{name: {glob: "' + "a" * (MAX_GLOB_LENGTH + 1) + '"}}', "limit.literal_length"),
        ('{name: {starts_with: "' + "a" * (MAX_GLOB_LENGTH + 1) + '"}}', "limit.literal_length"),
        ('{name: {glob: "' + "*a" * (MAX_GLOB_STARS + 1) + '"}}', "limit.glob_stars"),
        ('{name: {glob: "[\\u0100-\\u1500]"}}', "limit.glob_class"),
        ('{name: {glob: "[z-a]"}}', "condition.type"),
        ("{turn: 9223372036854775807}", "limit.integer"),
        (f"{{turn: {{gte: {SAFE_INT + 1}}}}}", "limit.integer"),
        ("{turn: {gte: {field: max_turns, offset: 4611686018427387904}}}", "limit.integer"),
        ("{score: {lt: .inf}}", "condition.type"),
        ("{turn: {gte: {field: max_turns, offset: .nan}}}", "condition.type"),
        ('{name: "a\\0b"}', "condition.type"),
    ],
)
def test_literal_limits(tmp_path: Path, when: str, code: str) -> None:
    d = diag(pack(tmp_path, rule(when)))
    assert (d.code, d.file, d.line) == (code, "p.yaml", 12), d.format()


def test_limits_leave_the_default_pack_alone(default_pack: Path) -> None:
    assert compile_pack(default_pack).compiled is not None


# ---------------------------------------------------------------- what compiles evaluates


@pytest.mark.integration
def test_pack_reading_260_fields_evaluates(tmp_path: Path) -> None:
    """Was: check passed, every full fact failed with engine error 302."""
    head = HEAD.replace("verdicts:", "".join(f"    f{i}: {{type: int}}\n" for i in range(260)) + "verdicts:")
    root = pack(tmp_path, "".join(rule(f"{{f{i}: {{gte: 1}}}}", f"r{i}") for i in range(260)), head=head)
    ev = load_policy(root, cache=False)
    assert ev.compiled.ruleset_keys is not None
    v = ev.evaluate({f"f{i}": 1 for i in range(260)})
    assert len(v.matched) == 261
    assert [m.rule for m in ev.evaluate({"f7": 1, "f250": 3}).matched] == ["p.r7", "p.r250", "p.z"]
    for fact in ({}, {"f7": 1, "f250": 3}, {f"f{i}": i for i in range(0, 260, 3)}):
        same_projection(ev, ev.validate(fact))  # each ruleset is sent its keys of the projection
    parts = ev.projection({"f7": 1, "f250": 3})
    assert len(parts) == len(ev.compiled.ruleset_keys) > 1 and all(len(p) <= 252 - 2 for p in parts)


def test_one_rule_reading_too_many_fields_is_refused(tmp_path: Path) -> None:
    head = HEAD.replace("verdicts:", "".join(f"    f{i}: {{type: int}}\n" for i in range(260)) + "verdicts:")
    when = "{all: [" + ", ".join(f"{{f{i}: 1}}" for i in range(260)) + "]}"
    d = diag(pack(tmp_path, rule(when), head=head))
    assert (d.code, d.line) == ("limit.fact_properties", 12 + 260)


SCORES = [1e-09, -1e-09, 1e300, -1e300, 5e-324, -0.0, 0.0, 1e16, 2.0**53, 1.7976931348623157e308, 3, -7, SAFE_INT]


def test_floats_compare_right_in_the_engine(tmp_path: Path) -> None:
    """Was: ``{"score": 1e-09}`` failed with engine error 204."""
    rules = "".join(
        rule(f"{{score: {{{op}: {encode(lit)}}}}}", f"{op}{i}")
        for i, lit in enumerate([1e-08, 0.0, -0.0, 1e16, 1.0e300, 5e-324, SAFE_INT])
        for op in ("lt", "lte", "gt", "eq")
    )
    ctx = compile_pack(pack(tmp_path, rules))
    ev = Evaluator(ctx.compiled)
    for score in SCORES:
        fact = ev.validate({"score": score})
        want = {r.id for r in ctx.checked.rules if evaluate(r.when, fact)}
        assert {r.id for r in ev.matched_rules(fact)} == want, score


def test_offsets_at_the_edges_of_the_safe_range(tmp_path: Path) -> None:
    rules = rule("{turn: {gte: {field: max_turns, offset: -2}}}", "a") + rule(
        f"{{turn: {{lt: {{field: max_turns, offset: {SAFE_INT}}}}}}}", "b"
    )
    ctx = compile_pack(pack(tmp_path, rules))
    ev = Evaluator(ctx.compiled)
    for turn in (SAFE_INT, -SAFE_INT, SAFE_INT - 2, -SAFE_INT + 2, 0):
        for max_turns in (SAFE_INT, -SAFE_INT, -SAFE_INT + 1, 2):
            fact = ev.validate({"turn": turn, "max_turns": max_turns})
            want = {r.id for r in ctx.checked.rules if evaluate(r.when, fact)}
            assert {r.id for r in ev.matched_rules(fact)} == want, fact


# ---------------------------------------------------------------- globs


GLOBS = ["[!]]x", "[]]", "[^]", "[-]", "[^-]", "[!^-]", "[a-z%]", "[!-/]", "[\\\\]", "[]-a]", "a[b-d]*", "?", "a\\\\?"]
STRINGS = ["]x", "x", "]", "^", "-", "%", "a", "/", "\\", "_", "`", "ab", "aq", "a\\", 'a"', "a\n", '"', "\\x"]


def test_glob_classes_agree_in_engine_reference_and_audit(tmp_path: Path) -> None:
    """Was: ``[!]]x`` matched differently in engine and reference and crashed audit (re.error);
    strings with a backslash or quote were matched JSON-escaped by the engine."""
    rules = "".join(rule(f"{{name: {{glob: {json.dumps(g)}}}}}", f"g{i}") for i, g in enumerate(GLOBS))
    rules += "".join(rule(f"{{tags[]: {{glob: {json.dumps(g)}}}}}", f"t{i}") for i, g in enumerate(GLOBS))
    ctx = compile_pack(pack(tmp_path, rules.replace("{tags[]:", '{"tags[]":')))
    ev = Evaluator(ctx.compiled)
    for s in STRINGS:
        fact = ev.validate({"name": s, "tags": ["q", s]})
        engine = {r.id for r in ev.matched_rules(fact)}
        assert engine == {r.id for r in ctx.checked.rules if evaluate(r.when, fact)}, s
        for g in GLOBS:
            assert glob_matcher(g)(s) == (glob_regex(g).match(s) is not None), (g, s)
    classes = string_classes(set(), set(GLOBS), 1)  # audit's automaton: no re.error
    assert classes


def test_glob_matching_is_linear_in_the_worst_case() -> None:
    match = glob_matcher("*a" * MAX_GLOB_STARS + "b")
    assert not match("a" * 20_000)  # a backtracking regex would not finish


def test_fuzzed_glob_shapes_compile(tmp_path: Path) -> None:
    """Were: 127 `*` (SIGSEGV), ten `*a` (engine error 503), `*[!a]*[!a]` (error 507)."""
    rules = rule('{name: {glob: "*a*a*a*a*a*a*a*a"}}', "a") + rule('{name: {glob: "*[!a]*[!a]"}}', "b")
    ev = load_policy(pack(tmp_path, rules), cache=False)
    assert ev.evaluate({"name": "xaxaaaaaaa"}).rule == "p.a"
    assert ev.evaluate({"name": "bb"}).rule == "p.b"


def test_fact_integers_beyond_the_safe_range_are_refused(evaluator) -> None:  # noqa: ANN001
    """The issue's example: `turn >= max_turns - 2` overflows in the engine at -2^63."""
    from stoprule import FactError

    with pytest.raises(FactError) as info:
        evaluator.evaluate({"turn": -(2**63), "max_turns": -(2**63)})
    assert info.value.code == "fact.range"
    with pytest.raises(FactError):
        evaluator.evaluate({"turn": SAFE_INT + 1})


def test_audit_takes_glob_classes(run_cli, tmp_path: Path) -> None:  # noqa: ANN001
    """Was: ``[!]]x`` crashed ``stoprule audit`` with re.error."""
    root = pack(tmp_path, rule('{name: {glob: "[!]]x"}}', "a") + rule('{"tags[]": {glob: "[]-a]*"}}', "b"))
    proc = run_cli("audit", "--policy", str(root))
    assert proc.returncode in (0, 1), proc.stderr[-1000:]
    assert "Traceback" not in proc.stderr
