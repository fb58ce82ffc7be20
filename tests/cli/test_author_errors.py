"""A policy author's mistakes: one error each, in our words, with a did-you-mean and the right place.

Through ``stoprule check`` / ``test`` / ``facts set`` in process (``stoprule.cli.main.run``).
"""

from __future__ import annotations

import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from clirunner import invoke


def cli(*argv: str, stdin: bytes = b"") -> subprocess.CompletedProcess:
    """``stoprule ARGV`` in process, in this test's environment and working directory."""
    return invoke(argv, input=stdin.decode())


VOCAB = """\
schema:
  fields:
    status: {type: enum, values: [implemented, partial, failed]}
    uncommittedWork: {type: bool, default: false}
    turn: {type: int, default: 0}
sets:
  final_states: [implemented, failed]
verdicts:
  pass: {ok: true, stop: allow}
  auto_continue: {ok: true, stop: block}
"""

RULES = """\
rules:
  - id: commit
    priority: 10
    when: {uncommittedWork: true}
    verdict: auto_continue
    reason: uncommitted
    message: commit first
  - id: ok
    priority: 0
    when: true
    verdict: pass
    reason: ok
    message: ok
"""


def _pack(tmp_path: Path, rules: str = RULES, vocab: str = VOCAB) -> Path:
    pack = tmp_path / "pack"
    pack.mkdir(exist_ok=True)
    (pack / "vocab.yaml").write_text(vocab)
    (pack / "rules.yaml").write_text(textwrap.dedent(rules))
    return pack


def _check(pack: Path) -> list[str]:
    r = cli("check", "--policy", str(pack))
    assert r.returncode == (0 if not r.stdout.strip() or r.stdout.startswith("ok:") else 2)
    return r.stdout.strip().splitlines() if r.returncode else []


# (what is wrong, the edit to RULES, the one expected line (its start), text that must not appear)
MISTAKES = [
    (
        "misspelt key: one error, no 'missing' cascade",
        ("priority: 10", "prority: 10"),
        "rules.yaml:3:5: policy.unknown_key: unknown key 'prority' (did you mean 'priority'?)",
    ),
    (
        "an integer written as text",
        ("priority: 10", "priority: ten"),
        "rules.yaml:3:5: policy.type: must be an integer, not the string 'ten'",
    ),
    (
        "misspelt field",
        ("{uncommittedWork: true}", "{uncomittedWork: true}"),
        "rules.yaml:4:12: field.unknown: unknown field 'uncomittedWork' (did you mean 'uncommittedWork'?)",
    ),
    (
        "misspelt operator",
        ("{uncommittedWork: true}", "{turn: {gtee: 3}}"),
        "rules.yaml:4:19: condition.unknown_operator: unknown operator 'gtee' (did you mean 'gte'?)",
    ),
    (
        "misspelt verdict",
        ("verdict: auto_continue", "verdict: auto_contine"),
        "rules.yaml:5:5: verdict.unknown: unknown verdict 'auto_contine' (did you mean 'auto_continue'?)",
    ),
    (
        "misspelt set",
        ("{uncommittedWork: true}", "{status: {in: final_state}}"),
        "rules.yaml:4:21: set.unknown: unknown set 'final_state' (did you mean 'final_states'?)",
    ),
    (
        "a duplicate rule id names both places",
        ("id: ok", "id: commit"),
        "rules.yaml:8:5: duplicate.rule: rule id 'rules.commit' is not unique (first at rules.yaml:2:5)",
    ),
    (
        "an unclosed { is reported where it opens",
        ("{uncommittedWork: true}", "{uncommittedWork: true"),
        "rules.yaml:4:11: yaml.syntax: unclosed '{': no '}' before line 5",
    ),
    (
        "a bad choice",
        ("priority: 10", "priority: 10\n    verdicts: 3"),
        "rules.yaml:4:5: policy.unknown_key: unknown key 'verdicts' (did you mean 'verdict'?)",
    ),
]


@pytest.mark.parametrize(("what", "edit", "expected"), MISTAKES, ids=[m[0] for m in MISTAKES])
def test_one_error_per_mistake(tmp_path: Path, what: str, edit: tuple[str, str], expected: str) -> None:
    assert edit[0] in RULES
    lines = _check(_pack(tmp_path, RULES.replace(edit[0], edit[1], 1)))
    assert len(lines) == 1, lines
    assert lines[0].startswith(expected), lines[0]


def test_our_own_wording(tmp_path: Path) -> None:
    vocab = VOCAB.replace("stop: allow}", "stop: halt, requires_user_review: maybe}").replace(
        "[implemented, failed]", "[implemented, 1.5]"
    )
    r = cli("check", "--policy", str(_pack(tmp_path, vocab=vocab)), "--format", "json")
    assert r.returncode == 2
    assert "must be 'allow' or 'block', not the string 'halt'" in r.stdout
    assert "must be true or false, not the string 'maybe'" in r.stdout
    assert "must be a string or an integer, not the number 1.5" in r.stdout
    for leaked in ("Input should", "Field required", "pydantic", "[type=", ".str)", ".int)"):
        assert leaked not in r.stdout


def test_duplicate_declarations_name_the_first(tmp_path: Path) -> None:
    pack = _pack(tmp_path)
    (pack / "zz.yaml").write_text("verdicts:\n  pass: {ok: true, stop: allow}\n")
    assert _check(pack) == [
        "zz.yaml:2:3: duplicate.verdict: verdict 'pass' already declared at vocab.yaml:9:3 (at verdicts.pass)"
    ]


CASES = """\
cases:
  - name: typo in a fact
    fact: {uncomittedWork: true}
    expect: {verdict: auto_continue}
  - name: typo in without
    fact: {}
    without: [stauts]
    expect: {verdict: pass}
  - name: typo in the expectation
    fact: {uncommittedWork: true}
    expect: {verdict: auto_contine, rule: rules.comit, matched: [rules.ok]}
  - name: typo in a case key
    fact: {}
    expct: {verdict: pass}
    expect: {verdict: pass}
  - name: an unknown field on purpose
    fact: {nope: 1}
    expect_error: {code: fact.unknown_field}
"""


def test_case_files_are_checked_against_the_pack(tmp_path: Path) -> None:
    pack = _pack(tmp_path)
    (pack / "tests").mkdir()
    (pack / "tests" / "cases.yaml").write_text(CASES)
    r = cli("test", "--policy", str(pack))
    assert r.returncode == 2 and r.stdout == ""
    lines = [ln.split(": ", 1)[1] for ln in r.stderr.splitlines()[:-1]]
    assert lines == [
        "cases.unknown_field: fact field uncomittedWork: not a field of the schema"
        " (did you mean 'uncommittedWork'?) (at cases[0].fact.uncomittedWork)",
        "cases.unknown_field: 'stauts' is not a field of the schema (did you mean 'status'?) (at cases[1].without[0])",
        "cases.unknown_name: verdict kind 'auto_contine' is not in the pack (did you mean 'auto_continue'?)"
        " (at cases[2].expect.verdict)",
        "cases.unknown_name: rule 'rules.comit' is not in the pack (did you mean 'rules.commit'?)"
        " (at cases[2].expect.rule)",
        "cases.unknown_key: unknown key 'expct' in a case (did you mean 'expect'?) (at cases[3].expct)",
    ]
    assert r.stderr.splitlines()[-1] == "stoprule: 5 error(s) in the case files"


def test_facts_set_refuses_what_eval_refuses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / ".stoprule").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("STOPRULE_POLICY", raising=False)
    monkeypatch.setenv("STOPRULE_NO_CACHE", "1")
    bad = cli("facts", "set", "--session", "s", "turn=abc", "uncomittedWork=true")
    assert bad.returncode == 2 and bad.stdout == ""
    ev = cli("eval", stdin=b'{"turn": "abc"}')
    eval_reason = ev.stderr.strip().split("line 1: ", 1)[1]
    assert bad.stderr.splitlines() == [
        f"stoprule: {eval_reason}",
        "stoprule: fact.unknown_field: uncomittedWork: not a field of the schema (did you mean 'uncommittedWork'?)",
        "stoprule: nothing set (the pack's fact schema refuses these values)",
    ]
    assert cli("facts", "show", "--session", "s").stdout.strip() == "{}"
    good = cli("facts", "set", "--session", "s", "turn=3")
    assert good.returncode == 0 and '"turn": 3' in good.stdout
    shutil.rmtree(tmp_path / ".stoprule")
