"""Policy diagnostics: one small pack per mistake, each reported with code, file, line and path.

Every test writes a minimal valid pack to ``tmp_path`` (a schema with a few fields, two
verdicts, a named condition, a set and a catch-all rule) and changes one thing.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from stoprule.diagnostic import Diagnostic
from stoprule.diagnostics import MAX_DIAGNOSTICS, PolicyError
from stoprule.engine.build import compile_pack, run_stages

SCHEMA = """\
pack:
  name: tiny
schema:
  fields:
    status:
      type: enum
      values: [done, blocked]
    turn: {type: int}
    flag: {type: bool, default: false}
    name: {type: string}
    tags:
      type: list
      default: []
      items: {type: string}
sets:
  colors: [red, green]
conditions:
  is_blocked: {status: blocked}
verdicts:
  pass: {ok: true, stop: allow}
  stop: {ok: false, stop: allow}
"""


def rule(
    rid: str,
    when: str = "{ref: is_blocked}",
    *,
    priority: int = 10,
    verdict: str = "stop",
    message: str = "Task {name} is blocked.",
    extra: str = "",
) -> str:
    """One rule as YAML text (a list item under ``rules:``)."""
    return (
        f"  - id: {rid}\n"
        f"    priority: {priority}\n"
        f"    when: {when}\n"
        f"    verdict: {verdict}\n"
        f"    reason: {rid}_reason\n"
        f"    message: {message}\n"
        f"{extra}"
    )


CATCH_ALL = rule("ok", "true", priority=0, verdict="pass", message="Fine.")


def rules_file(*rules: str, tail: str = "") -> str:
    return "rules:\n" + "".join(rules or (rule("blocked"), CATCH_ALL)) + tail


RULES = rules_file()


def write_pack(root: Path, schema: str = SCHEMA, rules: str = RULES, **extra: str) -> Path:
    """Write a pack: ``schema.yaml``, ``rules.yaml`` and ``extra`` files (``name_yaml=text``)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "schema.yaml").write_text(schema)
    (root / "rules.yaml").write_text(rules)
    for name, text in extra.items():
        (root / name.replace("_yaml", ".yaml")).write_text(text)
    return root


def line_of(text: str, needle: str, nth: int = 1) -> int:
    """1-based line number of the ``nth`` line of ``text`` containing ``needle``."""
    hits = [i for i, ln in enumerate(text.splitlines(), 1) if needle in ln]
    assert len(hits) >= nth, f"{needle!r} not found {nth} time(s)"
    return hits[nth - 1]


def errors(root: Path) -> PolicyError:
    with pytest.raises(PolicyError) as info:
        compile_pack(root)
    return info.value


def only(root: Path) -> Diagnostic:
    err = errors(root)
    assert len(err.diagnostics) == 1, err.render()
    assert err.total == 1
    return err.diagnostics[0]


def assert_diag(d: Diagnostic, code: str, file: str, line: int, path: str | None = None) -> None:
    assert (d.code, d.file, d.line) == (code, file, line), d.format()
    if path is not None:
        assert d.path == path, d.format()
    assert d.column >= 1


# ---------------------------------------------------------------- baseline


def test_minimal_pack_compiles(tmp_path: Path) -> None:
    ctx = compile_pack(write_pack(tmp_path / "p"))
    assert ctx.compiled is not None
    assert [r.id for r in ctx.compiled.rules] == ["rules.blocked", "rules.ok"]
    assert set(ctx.compiled.verdicts) == {"pass", "stop"}
    assert ctx.checked.digest.startswith("sha256:")


# ---------------------------------------------------------------- load stage


def test_unknown_top_level_key(tmp_path: Path) -> None:
    text = rules_file(tail="bogus: 1\n")
    d = only(write_pack(tmp_path / "p", rules=text))
    assert_diag(d, "policy.unknown_key", "rules.yaml", line_of(text, "bogus:"), "bogus")
    assert "bogus" in d.message


def test_unknown_top_level_key_with_block_value_points_at_the_key(tmp_path: Path) -> None:
    text = rules_file(tail="bogus:\n  a: 1\n")
    d = only(write_pack(tmp_path / "p", rules=text))
    assert_diag(d, "policy.unknown_key", "rules.yaml", line_of(text, "bogus:"), "bogus")
    assert d.column == 1


def test_unknown_key_inside_rule(tmp_path: Path) -> None:
    text = rules_file(rule("blocked", extra="    colour: red\n"), CATCH_ALL)
    d = only(write_pack(tmp_path / "p", rules=text))
    assert_diag(d, "policy.unknown_key", "rules.yaml", line_of(text, "colour:"), "rules[0].colour")
    assert "colour" in d.message


def test_bad_value_in_verdict(tmp_path: Path) -> None:
    schema = SCHEMA.replace("stop: {ok: false, stop: allow}", "stop: {ok: false, stop: maybe}")
    d = only(write_pack(tmp_path / "p", schema=schema))
    assert_diag(d, "policy.bad_value", "schema.yaml", line_of(schema, "stop: maybe"), "verdicts.stop.stop")


def test_unknown_key_inside_set(tmp_path: Path) -> None:
    more = "sets:\n  shades: {members: [dark], note: n}\n"
    d = only(write_pack(tmp_path / "p", more_yaml=more))
    assert_diag(d, "policy.unknown_key", "more.yaml", 2, "sets.shades.note")


def test_missing_key_inside_rule(tmp_path: Path) -> None:
    text = rules_file(rule("blocked").replace("    verdict: stop\n", ""), CATCH_ALL)
    d = only(write_pack(tmp_path / "p", rules=text))
    assert d.code == "policy.missing_key"
    assert d.file == "rules.yaml"
    assert d.path == "rules[0].verdict"
    assert d.line == line_of(text, "- id: blocked")


def test_unknown_field_in_condition(tmp_path: Path) -> None:
    text = rules_file(CATCH_ALL, rule("blocked", "\n      all:\n        - nope: 1\n        - status: blocked"))
    d = only(write_pack(tmp_path / "p", rules=text))
    assert_diag(d, "field.unknown", "rules.yaml", line_of(text, "- nope: 1"), "rules[1].when.all[0].nope")
    assert "'nope'" in d.message


def test_unknown_nested_field_in_condition(tmp_path: Path) -> None:
    text = rules_file(rule("blocked", "{name.first: x}"), CATCH_ALL)
    d = only(write_pack(tmp_path / "p", rules=text))
    assert_diag(d, "field.unknown", "rules.yaml", line_of(text, "name.first"), "rules[0].when.name.first")
    assert "string" in d.message


def test_unknown_set_in_in(tmp_path: Path) -> None:
    text = rules_file(rule("blocked", "{name: {in: shades}}"), CATCH_ALL)
    d = only(write_pack(tmp_path / "p", rules=text))
    assert_diag(d, "set.unknown", "rules.yaml", line_of(text, "shades"), "rules[0].when.name.in")
    assert "'shades'" in d.message and "colors" in d.message


def test_unknown_named_condition(tmp_path: Path) -> None:
    text = rules_file(rule("blocked", "{ref: is_stuck}"), CATCH_ALL)
    d = only(write_pack(tmp_path / "p", rules=text))
    assert_diag(d, "condition.unknown", "rules.yaml", line_of(text, "is_stuck"), "rules[0].when.ref")
    assert "'is_stuck'" in d.message and "is_blocked" in d.message


def test_unknown_verdict(tmp_path: Path) -> None:
    text = rules_file(rule("blocked", verdict="halt"), CATCH_ALL)
    d = only(write_pack(tmp_path / "p", rules=text))
    assert_diag(d, "verdict.unknown", "rules.yaml", line_of(text, "verdict: halt"), "rules[0].verdict")
    assert "'halt'" in d.message


def test_unknown_operator(tmp_path: Path) -> None:
    text = rules_file(rule("blocked", "{turn: {above: 3}}"), CATCH_ALL)
    d = only(write_pack(tmp_path / "p", rules=text))
    assert_diag(d, "condition.unknown_operator", "rules.yaml", line_of(text, "above"), "rules[0].when.turn.above")


# ---------------------------------------------------------------- typecheck stage


def test_enum_compared_to_value_outside_it(tmp_path: Path) -> None:
    text = rules_file(rule("blocked", "{status: later}"), CATCH_ALL)
    d = only(write_pack(tmp_path / "p", rules=text))
    assert_diag(d, "condition.type", "rules.yaml", line_of(text, "status: later"), "rules[0].when.status")
    assert "'later'" in d.message


def test_enum_in_list_with_value_outside_it(tmp_path: Path) -> None:
    text = rules_file(rule("blocked", "{status: {in: [done, later]}}"), CATCH_ALL)
    d = only(write_pack(tmp_path / "p", rules=text))
    assert_diag(d, "condition.type", "rules.yaml", line_of(text, "later"), "rules[0].when.status.in")


def test_bool_field_compared_to_int(tmp_path: Path) -> None:
    text = rules_file(rule("blocked", "{flag: 1}"), CATCH_ALL)
    d = only(write_pack(tmp_path / "p", rules=text))
    assert_diag(d, "condition.type", "rules.yaml", line_of(text, "flag: 1"), "rules[0].when.flag")
    assert "bool" in d.message and "int" in d.message


def test_message_placeholder_not_a_field(tmp_path: Path) -> None:
    text = rules_file(rule("blocked", message="Task {nope} is blocked."), CATCH_ALL)
    d = only(write_pack(tmp_path / "p", rules=text))
    assert_diag(d, "template.unknown_field", "rules.yaml", line_of(text, "{nope}"), "rules[0].message")
    assert "{nope}" in d.message


def test_glob_under_not_is_unsupported(tmp_path: Path) -> None:
    text = rules_file(rule("blocked", "{not: {name: {glob: 'build-*'}}}"), CATCH_ALL)
    d = only(write_pack(tmp_path / "p", rules=text))
    assert_diag(d, "condition.unsupported", "rules.yaml", line_of(text, "glob"), "rules[0].when.not.name.glob")
    assert "glob" in d.message


# ---------------------------------------------------------------- duplicates and cycles


def test_duplicate_rule_id(tmp_path: Path) -> None:
    text = rules_file(rule("blocked"), rule("blocked", priority=5), CATCH_ALL)
    d = only(write_pack(tmp_path / "p", rules=text))
    assert_diag(d, "duplicate.rule", "rules.yaml", line_of(text, "- id: blocked", nth=2), "rules[1].id")
    assert "rules.blocked" in d.message


def test_same_rule_id_in_two_files_is_fine(tmp_path: Path) -> None:
    # rule ids are qualified by the file stem
    root = write_pack(tmp_path / "p", more_yaml=rules_file(rule("blocked", priority=5)))
    ids = [r.id for r in compile_pack(root).compiled.rules]
    assert "more.blocked" in ids and "rules.blocked" in ids


def test_duplicate_set_across_two_files(tmp_path: Path) -> None:
    more = "sets:\n  shades: [dark]\n  colors: [blue]\n"
    d = only(write_pack(tmp_path / "p", zz_more_yaml=more))
    # files are read in name order: schema.yaml declares it first, zz_more.yaml again
    assert_diag(d, "duplicate.set", "zz_more.yaml", line_of(more, "colors:"), "sets.colors")
    assert "schema.yaml" in d.message


def test_cycle_among_named_conditions(tmp_path: Path) -> None:
    conds = "conditions:\n  a:\n    any:\n      - ref: b\n      - flag: true\n  b: {ref: a}\n"
    text = rules_file(rule("blocked", "{ref: a}"), CATCH_ALL)
    d = only(write_pack(tmp_path / "p", rules=text, more_yaml=conds))
    # a is resolved first; the edge that closes the cycle is b's `ref: a`
    assert_diag(d, "condition.cycle", "more.yaml", line_of(conds, "b: {ref: a}"), "conditions.b.ref")
    assert "a -> b -> a" in d.message


def test_self_referencing_condition(tmp_path: Path) -> None:
    conds = "conditions:\n  loop: {all: [{flag: true}, {ref: loop}]}\n"
    d = only(write_pack(tmp_path / "p", more_yaml=conds))
    assert_diag(d, "condition.cycle", "more.yaml", 2, "conditions.loop.all[1].ref")
    assert "loop -> loop" in d.message


# ---------------------------------------------------------------- YAML


def test_yaml_syntax_error_line(tmp_path: Path) -> None:
    text = rules_file(rule("blocked", verdict="stop: again"), CATCH_ALL)
    d = only(write_pack(tmp_path / "p", rules=text))
    assert (d.code, d.file, d.line) == ("yaml.syntax", "rules.yaml", line_of(text, "verdict: stop: again"))


def test_yaml_syntax_error_in_second_file_only(tmp_path: Path) -> None:
    bad = "sets:\n  shades: [dark, light\n  more: [x]\nverdicts: {}\n"
    err = errors(write_pack(tmp_path / "p", zz_yaml=bad))
    assert [(d.code, d.file) for d in err.diagnostics] == [("yaml.syntax", "zz.yaml")]
    assert 2 <= err.diagnostics[0].line <= 4


def test_yaml_tab_indentation(tmp_path: Path) -> None:
    text = "rules:\n\t- id: x\n"
    d = only(write_pack(tmp_path / "p", rules=text))
    assert (d.code, d.file, d.line) == ("yaml.syntax", "rules.yaml", 2)


def test_duplicate_yaml_key(tmp_path: Path) -> None:
    text = rules_file(rule("blocked", extra="    priority: 20\n"), CATCH_ALL)
    d = only(write_pack(tmp_path / "p", rules=text))
    assert_diag(d, "yaml.duplicate_key", "rules.yaml", line_of(text, "priority: 20"), "rules[0].priority")
    assert "priority" in d.message


def test_duplicate_top_level_yaml_key(tmp_path: Path) -> None:
    text = RULES + "rules: []\n"
    d = only(write_pack(tmp_path / "p", rules=text))
    assert_diag(d, "yaml.duplicate_key", "rules.yaml", line_of(text, "rules: []"), "rules")


def test_file_that_is_not_a_mapping(tmp_path: Path) -> None:
    d = only(write_pack(tmp_path / "p", zz_yaml="- just\n- a list\n"))
    assert (d.code, d.file, d.line) == ("policy.not_mapping", "zz.yaml", 1)


# ---------------------------------------------------------------- many at once


def test_several_mistakes_reported_together_and_sorted(tmp_path: Path) -> None:
    # all typecheck mistakes, made in an order that is not the sorted one:
    # high-risk stops are checked before rules, and a message before its `when:` here.
    alpha = rules_file(
        rule("one", "{flag: 1}"),
        "  - id: two\n    priority: 3\n    message: Hi {nope}.\n    when: {status: later}\n"
        "    verdict: stop\n    reason: r\n",
    )
    zz = "high_risk_stops:\n  - id: risky\n    description: d\n    when: {turn: yes}\n"
    rules = rules_file(rule("three", "{missing_field: 2}"), CATCH_ALL)
    err = errors(write_pack(tmp_path / "p", rules=rules, alpha_yaml=alpha, zz_yaml=zz))
    got = [(d.file, d.line, d.code) for d in err.diagnostics]
    assert got == [
        ("alpha.yaml", line_of(alpha, "flag: 1"), "condition.type"),
        ("alpha.yaml", line_of(alpha, "{nope}"), "template.unknown_field"),
        ("alpha.yaml", line_of(alpha, "status: later"), "condition.type"),
        ("rules.yaml", line_of(rules, "missing_field"), "field.unknown"),
        ("zz.yaml", line_of(zz, "turn: yes"), "condition.type"),
    ]
    assert err.total == 5
    assert got == sorted(got)
    rendered = err.render().splitlines()
    assert len(rendered) == 5 and rendered[0].startswith("alpha.yaml:")


def test_several_load_mistakes_across_files(tmp_path: Path) -> None:
    rules = rules_file(rule("blocked", extra="    colour: red\n"), CATCH_ALL, tail="bogus: 1\n")
    more = "verdicts:\n  extra: {ok: true, stop: allow, colour: x}\n"
    err = errors(write_pack(tmp_path / "p", rules=rules, more_yaml=more))
    got = [(d.file, d.line, d.code, d.path) for d in err.diagnostics]
    assert got == [
        ("more.yaml", 2, "policy.unknown_key", "verdicts.extra.colour"),
        ("rules.yaml", line_of(rules, "colour"), "policy.unknown_key", "rules[0].colour"),
        ("rules.yaml", line_of(rules, "bogus"), "policy.unknown_key", "bogus"),
    ]


def test_compiler_stops_after_first_failing_stage(tmp_path: Path) -> None:
    # an unknown verdict (resolve) and an enum mistake (typecheck): only resolve reports
    text = rules_file(rule("blocked", "{status: later}", verdict="halt"), CATCH_ALL)
    err = errors(write_pack(tmp_path / "p", rules=text))
    assert [d.code for d in err.diagnostics] == ["verdict.unknown"]


def test_more_than_fifty_mistakes_are_capped_with_total(tmp_path: Path) -> None:
    n = 60
    text = rules_file(*(rule(f"r{i}", f"{{nope{i}: 1}}") for i in range(n)), CATCH_ALL)
    err = errors(write_pack(tmp_path / "p", rules=text))
    assert MAX_DIAGNOSTICS == 50
    assert err.total == n
    assert len(err.diagnostics) == 50
    assert all(d.code == "field.unknown" for d in err.diagnostics)
    lines = [d.line for d in err.diagnostics]
    assert lines == sorted(lines)
    assert lines[0] == line_of(text, "nope0:")  # the first 50 by location are kept
    assert err.diagnostics[-1].line == line_of(text, "nope49:")
    assert err.render().splitlines()[-1] == f"... and {n - 50} more"


# ---------------------------------------------------------------- stages


def test_until_load_does_not_typecheck(tmp_path: Path) -> None:
    text = rules_file(rule("blocked", "{flag: 1}"), CATCH_ALL)
    root = write_pack(tmp_path / "p", rules=text)
    run_stages(root, "load")  # the type error is not found yet
    run_stages(root, "resolve")
    with pytest.raises(PolicyError) as info:
        compile_pack(root)
    assert [d.code for d in info.value.diagnostics] == ["condition.type"]
    with pytest.raises(PolicyError):
        run_stages(root, "typecheck")


def test_until_unknown_stage(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="stage"):
        run_stages(write_pack(tmp_path / "p"), "nope")


def test_missing_pack_directory(tmp_path: Path) -> None:
    d = only(tmp_path / "absent")
    assert d.code == "pack.not_found"


# ---------------------------------------------------------------- digest


def digest(root: Path) -> str:
    return compile_pack(root).checked.digest


def test_digest_stable_across_whitespace_and_comments(tmp_path: Path) -> None:
    a = digest(write_pack(tmp_path / "a"))
    noisy_rules = "# a comment at the top\n\n" + RULES.replace("    priority: 10\n", "    priority:    10   # why\n\n")
    noisy_schema = SCHEMA.replace("turn: {type: int}", "turn:  { type: int }   # turns") + "\n\n# trailing\n"
    b = digest(write_pack(tmp_path / "b", schema=noisy_schema, rules=noisy_rules))
    assert noisy_rules != RULES
    assert a == b
    assert re.fullmatch(r"sha256:[0-9a-f]{64}", a)


def test_digest_changes_when_a_rule_changes(tmp_path: Path) -> None:
    a = digest(write_pack(tmp_path / "a"))
    b = digest(write_pack(tmp_path / "b", rules=rules_file(rule("blocked", priority=11), CATCH_ALL)))
    c = digest(write_pack(tmp_path / "c", rules=rules_file(rule("blocked", message="Other."), CATCH_ALL)))
    assert len({a, b, c}) == 3


# ---------------------------------------------------------------- stoprule check (real process)

DIAG_LINE = re.compile(r"^(?P<file>[\w.-]+\.yaml):(?P<line>\d+):(?P<col>\d+): (?P<code>[a-z_]+\.[a-z_]+): .+$")


def bad_pack(tmp_path: Path) -> tuple[Path, str]:
    text = rules_file(rule("blocked", "{flag: 1}"), rule("other", "{nope: 2}", message="Hi {zip}."), CATCH_ALL)
    return write_pack(tmp_path / "bad", rules=text), text


def test_check_bad_pack_prints_diagnostic_lines(tmp_path: Path, run_cli) -> None:
    root, text = bad_pack(tmp_path)
    proc = run_cli("check", "--policy", str(root), "--format", "pretty")
    assert proc.returncode == 2
    assert "Traceback" not in proc.stdout + proc.stderr
    lines = proc.stdout.strip().splitlines()
    parsed = [DIAG_LINE.match(ln) for ln in lines]
    assert all(parsed), lines
    got = [(m["file"], int(m["line"]), m["code"]) for m in parsed]
    assert got == [
        ("rules.yaml", line_of(text, "flag: 1"), "condition.type"),
        ("rules.yaml", line_of(text, "nope: 2"), "field.unknown"),
        ("rules.yaml", line_of(text, "{zip}"), "template.unknown_field"),
    ]
    assert "3 error(s)" in proc.stderr


def test_check_default_format_prints_diagnostic_lines(tmp_path: Path, run_cli) -> None:
    root, _ = bad_pack(tmp_path)
    proc = run_cli("check", "--policy", str(root))
    assert proc.returncode == 2
    lines = proc.stdout.strip().splitlines()
    assert lines and all(DIAG_LINE.match(ln) for ln in lines), lines


def test_check_bad_pack_json(tmp_path: Path, run_cli) -> None:
    root, text = bad_pack(tmp_path)
    proc = run_cli("check", "--policy", str(root), "--format", "json")
    assert proc.returncode == 2
    assert "Traceback" not in proc.stdout + proc.stderr
    out = json.loads(proc.stdout)
    assert out["ok"] is False and out["total"] == 3
    d0 = out["diagnostics"][0]
    assert set(d0) == {"file", "line", "column", "code", "message", "path"}
    assert (d0["file"], d0["line"], d0["code"], d0["path"]) == (
        "rules.yaml",
        line_of(text, "flag: 1"),
        "condition.type",
        "rules[0].when.flag",
    )


def test_check_json_reports_total_beyond_cap(tmp_path: Path, run_cli) -> None:
    text = rules_file(*(rule(f"r{i}", f"{{nope{i}: 1}}") for i in range(55)), CATCH_ALL)
    proc = run_cli("check", "--policy", str(write_pack(tmp_path / "p", rules=text)), "--format", "json")
    assert proc.returncode == 2
    out = json.loads(proc.stdout)
    assert out["total"] == 55 and len(out["diagnostics"]) == 50


def test_check_yaml_syntax_error_via_cli(tmp_path: Path, run_cli) -> None:
    text = rules_file(rule("blocked", verdict="stop: again"), CATCH_ALL)
    proc = run_cli("check", "--policy", str(write_pack(tmp_path / "p", rules=text)), "--format", "pretty")
    assert proc.returncode == 2
    assert "Traceback" not in proc.stdout + proc.stderr
    assert proc.stdout.startswith(f"rules.yaml:{line_of(text, 'verdict: stop: again')}:")
    assert "yaml.syntax" in proc.stdout


def test_check_missing_pack_dir(tmp_path: Path, run_cli) -> None:
    proc = run_cli("check", "--policy", str(tmp_path / "absent"), "--format", "pretty")
    assert proc.returncode == 2
    assert "pack.not_found" in proc.stdout
    assert "Traceback" not in proc.stdout + proc.stderr


def test_check_clean_pack_summary(tmp_path: Path, run_cli) -> None:
    root = write_pack(tmp_path / "p")
    want = digest(root)
    proc = run_cli("check", "--policy", str(root), "--format", "pretty")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 1
    line = lines[0]
    assert line.startswith(f"ok: tiny ({root}):")
    assert "2 files" in line and "2 rules" in line and "2 verdict kinds" in line
    assert line.endswith(want)


def test_check_clean_pack_json_summary(tmp_path: Path, run_cli) -> None:
    root = write_pack(tmp_path / "p")
    proc = run_cli("check", "--policy", str(root), "--format", "json")
    assert proc.returncode == 0
    out = json.loads(proc.stdout)
    assert out["ok"] is True
    assert (out["files"], out["rules"], out["verdicts"]) == (2, 2, 2)
    assert out["digest"] == digest(root)


def test_check_default_pack_is_clean(run_cli, default_pack: Path) -> None:
    proc = run_cli("check", "--policy", str(default_pack), "--format", "json")
    assert proc.returncode == 0, proc.stdout
    assert json.loads(proc.stdout)["digest"] == digest(default_pack)
