"""The default pack's table-driven cases (policies/tests/*.yaml), and the case runner itself."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from stoprule import Evaluator, PolicyError
from stoprule.analysis.cases import Case, Mismatch, check_case, format_mismatches, load_cases

CASE_DIR = Path(__file__).resolve().parents[2] / "policies" / "tests"
CASES = load_cases([CASE_DIR])

# DESIGN.md's decision table: (verdict, reason) of each of the 15 rows.
DECISION_TABLE = {
    ("user_review", "agent_requested_review"),
    ("user_review", "hard_blocker"),
    ("user_review", "agent_blocked"),
    ("user_review", "max_turns_exceeded"),
    ("escape_hatch", "invalid_blocked_report"),
    ("escape_hatch", "blocked_report_required"),
    ("user_review", "unclassified_blocker"),
    ("continuity_failure", "missing_auto_next_dispatch"),
    ("continuity_failure", "missing_dispatch_receipt"),
    ("pass", "high_risk_stop"),
    ("failed", "unrecoverable_failure"),
    ("auto_continue", "soft_blocker"),
    ("auto_continue", "uncommitted_work"),
    ("auto_continue", "available_tasks"),
    ("pass", "ok"),
}


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_default_pack_case(evaluator: Evaluator, case: Case) -> None:
    mismatches = check_case(evaluator, case)
    if mismatches:
        pytest.fail(format_mismatches(case, mismatches), pytrace=False)


def test_case_files_cover_every_row_of_the_decision_table(evaluator: Evaluator) -> None:
    winners = set()
    for case in CASES:
        if case.expect is None:
            continue
        for fact in case.facts:
            v = evaluator.evaluate(fact)
            winners.add((v.verdict, v.reason))
    assert winners >= DECISION_TABLE, f"rows never winning: {sorted(DECISION_TABLE - winners)}"


def test_case_files_are_grouped_and_non_trivial() -> None:
    names = {Path(c.file).name for c in CASES}
    assert {
        "decision_table.yaml",
        "priority.yaml",
        "blockers_000.yaml",
        "escape_hatch_001.yaml",
        "continuity_002.yaml",
        "aliases.yaml",
        "facts_invalid.yaml",
    } <= names
    assert len(CASES) >= 150
    assert sum(1 for c in CASES if c.expect_error is not None) >= 20


# --- the runner itself ---------------------------------------------------------------------------


def _write(tmp_path: Path, text: str, name: str = "cases.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def _load_error(path: Path) -> PolicyError:
    with pytest.raises(PolicyError) as info:
        load_cases([path])
    return info.value


def test_load_merges_base_and_removes_without(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        """
        base: {status: partial, turn: 1, max_turns: 5}
        cases:
          - name: one
            fact: {turn: 3}
            without: [status]
            expect: {verdict: escape_hatch}
          - name: two
            facts: [{}, {status: failed}]
            expect_error: {code: fact.enum}
        """,
    )
    one, two = load_cases([path])
    assert one == Case("one", str(path), 3, [{"turn": 3, "max_turns": 5}], {"verdict": "escape_hatch"}, None)
    assert one.id == "cases.yaml::one"
    assert two.line == 7
    assert two.facts == [
        {"status": "partial", "turn": 1, "max_turns": 5},
        {"status": "failed", "turn": 1, "max_turns": 5},
    ]
    assert two.expect is None and two.expect_error == {"code": "fact.enum"}


def test_directory_means_its_yaml_files_sorted(tmp_path: Path) -> None:
    _write(tmp_path, "cases: [{name: b, fact: {}, expect: {ok: true}}]", "b.yaml")
    _write(tmp_path, "cases: [{name: a, fact: {}, expect: {ok: true}}]", "a.yaml")
    _write(tmp_path, "not: a case file", "notes.txt")
    assert [c.name for c in load_cases([tmp_path])] == ["a", "b"]


def test_malformed_case_file_names_file_and_line(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        """
        cases:
          - name: fine
            fact: {}
            expect: {verdict: pass}
          - name: typo in expect
            fact: {}
            expect:
              verdict: pass
              reasn: ok
        """,
    )
    err = _load_error(path)
    assert len(err.diagnostics) == 1
    d = err.diagnostics[0]
    assert (d.file, d.line, d.code) == (str(path), 9, "cases.unknown_key")
    assert d.path == "cases[1].expect.reasn"
    assert f"{path}:9:" in str(err)


@pytest.mark.parametrize(
    ("text", "code", "line"),
    [
        ("cases:\n  - name: x\n    fact: {\n", "yaml.syntax", 4),
        ("- just a list\n", "cases.type", 1),
        ("cases: []\n", "cases.missing", 1),
        ("bases: {}\ncases: [{name: x, fact: {}, expect: {ok: true}}]\n", "cases.unknown_key", 1),
        ("cases:\n  - fact: {}\n    expect: {ok: true}\n", "cases.missing", 2),
        ("cases:\n  - name: x\n    fact: {}\n    facts: [{}]\n    expect: {ok: true}\n", "cases.conflict", 2),
        ("cases:\n  - name: x\n    expect: {ok: true}\n", "cases.conflict", 2),
        ("cases:\n  - name: x\n    fact: {}\n", "cases.conflict", 2),
        (
            "cases:\n  - name: x\n    fact: {}\n    expect: {ok: true}\n    expect_error: {code: c}\n",
            "cases.conflict",
            2,
        ),
        ("cases:\n  - name: x\n    fact: []\n    expect: {ok: true}\n", "cases.type", 3),
        ("cases:\n  - name: x\n    facts: []\n    expect: {ok: true}\n", "cases.type", 3),
        ("cases:\n  - name: x\n    fact: {}\n    expect: {ok: 'yes'}\n", "cases.type", 4),
        ("cases:\n  - name: x\n    fact: {}\n    expect: {matched: rule}\n", "cases.type", 4),
        ("cases:\n  - name: x\n    fact: {}\n    expect: {}\n", "cases.type", 4),
        ("cases:\n  - name: x\n    fact: {}\n    expect_error: {field: status}\n", "cases.missing", 4),
        ("cases:\n  - name: x\n    fact: {}\n    expect_error: {code: c, line: 3}\n", "cases.unknown_key", 4),
        ("cases:\n  - name: x\n    fact: {}\n    without: status\n    expect: {ok: true}\n", "cases.type", 4),
        ("cases:\n  - name: x\n    fact: {}\n    expected: {ok: true}\n", "cases.unknown_key", 4),
    ],
)
def test_malformed_case_files(tmp_path: Path, text: str, code: str, line: int) -> None:
    path = _write(tmp_path, text)
    err = _load_error(path)
    assert any(d.code == code and d.line == line and d.file == str(path) for d in err.diagnostics), err.render()


def test_duplicate_case_name_points_at_the_second(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        """
        cases:
          - {name: same, fact: {}, expect: {ok: true}}
          - {name: other, fact: {}, expect: {ok: true}}
          - {name: same, fact: {}, expect: {ok: true}}
        """,
    )
    [d] = _load_error(path).diagnostics
    assert (d.code, d.line) == ("cases.duplicate_name", 4)
    assert "line 2" in d.message


def test_missing_path_is_an_error(tmp_path: Path) -> None:
    [d] = _load_error(tmp_path / "nope.yaml").diagnostics
    assert d.code == "cases.not_found"


def _case(facts: list[dict], expect: dict | None = None, expect_error: dict | None = None) -> Case:
    return Case("t", "t.yaml", 1, facts, expect, expect_error)


def test_wrong_expectation_is_a_mismatch(evaluator: Evaluator) -> None:
    fact = {"planId": "p", "taskState": "complete", "derivedAction": {"type": "x"}}
    case = _case([{}, fact], {"verdict": "pass", "ok": True})
    assert check_case(evaluator, case) == [
        Mismatch(1, "verdict", "pass", "continuity_failure"),
        Mismatch(1, "ok", True, False),
    ]
    report = format_mismatches(case, check_case(evaluator, case))
    assert "t.yaml:1: case 't' failed" in report
    assert "fact[1] verdict: expected 'pass', got 'continuity_failure'" in report


def test_every_expect_key_is_checked(evaluator: Evaluator) -> None:
    wrong = {
        "verdict": "x",
        "reason": "x",
        "rule": "x",
        "stop": "x",
        "message": "x",
        "review_reason": "x",
        "high_risk_stop": "x",
        "ok": False,
        "requires_user_review": True,
        "matched": ["progress.ok", "review.nope"],
        "not_matched": ["progress.ok"],
        "message_contains": ["Nothing", "nope"],
        "review_reason_contains": "nope",
    }
    got = check_case(evaluator, _case([{}], wrong))
    assert {m.key for m in got} == set(wrong)
    by_key = {m.key: m for m in got}
    assert by_key["matched"] == Mismatch(0, "matched", ["review.nope"], ["progress.ok"])
    assert by_key["not_matched"] == Mismatch(0, "not_matched", ["progress.ok"], ["progress.ok"])
    assert by_key["message_contains"].expected == "nope"
    assert by_key["review_reason_contains"].actual == ""


def test_expect_error_mismatches(evaluator: Evaluator) -> None:
    # a valid fact where an error was expected
    [m] = check_case(evaluator, _case([{}], expect_error={"code": "fact.enum"}))
    assert (m.key, m.actual) == ("error", "pass/ok")
    # an invalid fact where a verdict was expected
    [m] = check_case(evaluator, _case([{"status": "weird"}], {"verdict": "pass"}))
    assert m.key == "error" and "fact.enum" in m.actual
    # the wrong code, field and message
    got = check_case(
        evaluator,
        _case([{"status": "weird"}], expect_error={"code": "fact.type", "field": "turn", "message_contains": "zzz"}),
    )
    assert [(m.key, m.expected, m.actual) for m in got][:2] == [
        ("error.code", "fact.type", "fact.enum"),
        ("error.field", "turn", "status"),
    ]
    assert got[2].key == "error.message_contains"
    # and the right ones
    ok = _case(
        [{"status": "weird"}], expect_error={"code": "fact.enum", "field": "status", "message_contains": "weird"}
    )
    assert check_case(evaluator, ok) == []
