"""Blockers and blocked reports: store, redaction, limits, reports, provider, the blocker tool."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from blocker_helpers import DEFAULT_PACK, SECRETS, make_project, secret_values
from stoprule import load_policy
from stoprule._util.redact import REDACTED, redact
from stoprule.agent.blockers import store as store_mod
from stoprule.agent.blockers.facts import blockers_facts
from stoprule.agent.blockers.reports import render_report
from stoprule.agent.blockers.session import declare_session_facts, read_session_facts
from stoprule.agent.hook.state import facts_file
from stoprule.cli.blocker_cmd import record_in_ledger
from stoprule.config.loader import load_config
from stoprule.diagnostics import ConfigError

HARD = {
    "category": "missing_dependency",
    "question": "Which auth framework?",
    "context": "login",
    "blocksProgress": True,
}
SOFT = {"category": "timeout", "question": "getUserData or fetchUserData?", "context": "user endpoint",
        "blocksProgress": False, "options": ["getUserData", "fetchUserData", "retrieveUserData"],
        "chosenOption": "getUserData", "chosenReasoning": "matches 8 existing controllers"}  # fmt: skip
REPORT = {
    "blocking_issues": [{"issue": "Cannot mock Stripe webhook signatures", "location": "src/pay/webhook.py:78",
                         "category": "external_dependency", "details": "signed with the secret key"}],
    "attempts_made": [{"turn": 1, "action": "Used httpretty", "result": "Failed", "why_failed": "SDK bypasses HTTP"},
                      {"turn": 2, "action": "Mock client class", "result": "Success"}],
    "suggested_alternatives": ["Use Stripe test mode with real test API keys", "Split the task"],
    "human_action_required": "Provide Stripe test API keys in .env.test, or approve splitting the task.",
}  # fmt: skip


@pytest.fixture(scope="module")
def ev():
    return load_policy(DEFAULT_PACK, cache=False)


@pytest.fixture
def svc(tmp_path: Path, ev):
    s = make_project(tmp_path)
    s._evaluator = ev
    return s


# ----------------------------------------------------------------- config


def test_config_defaults_and_unknown_key(tmp_path: Path) -> None:
    cfg = tmp_path / "config.yaml"
    cfg.write_text("blockers:\n  max_per_run: 5\n")
    s = load_config(cfg, sections=("blockers",))["blockers"]
    assert (s.max_per_run, s.cooldown_seconds, s.rotate_entries, s.rotate_bytes, s.file) == (
        5,
        30,
        1000,
        10485760,
        ".stoprule/blockers.md",
    )
    cfg.write_text("blockers:\n  enabled: true\n  colour: red\n")
    with pytest.raises(ConfigError) as err:
        load_config(cfg, sections=("blockers",))
    assert ":3:" in err.value.render() and "colour" in err.value.render()


@pytest.mark.parametrize("bad", ["../outside.md", "/etc/blockers.md", "a/../../x.md"])
def test_blockers_file_outside_the_project_is_a_config_error(tmp_path: Path, bad: str) -> None:
    cfg = tmp_path / "config.yaml"
    cfg.write_text(f"blockers:\n  file: {bad}\n")
    with pytest.raises(ConfigError) as err:
        load_config(cfg, sections=("blockers",))
    assert "config.yaml:2:" in err.value.render()


def test_symlink_out_of_the_project_is_a_config_error(tmp_path: Path) -> None:
    proj, outside = tmp_path / "p", tmp_path / "outside"
    proj.mkdir()
    outside.mkdir()
    (proj / "docs").symlink_to(outside)
    with pytest.raises(ConfigError) as err:
        make_project(proj, "blockers:\n  file: docs/blockers.md\n")
    assert "outside the project" in err.value.render()


# ----------------------------------------------------------------- store


def test_hard_and_soft_render_in_seed_003_format(svc) -> None:
    assert svc.log_blocker("s1", HARD).data["status"] == "logged"
    assert svc.log_blocker("s1", SOFT).data["status"] == "logged"
    md = Path(svc.store.markdown_path).read_text()
    assert "## Session: s1 — " in md
    assert "### Hard Blockers (require user decision)\n- [ ] **[missing_dependency]** Which auth framework?" in md
    assert "  - **Context**: login\n  - **Blocks**: Yes" in md
    assert "### Soft Blockers (AI made choice)\n- [x] **[timeout]** getUserData or fetchUserData?" in md
    assert "    1. getUserData\n    2. fetchUserData\n    3. retrieveUserData\n  - **✓ Chosen**: getUserData" in md
    assert "  - **Reasoning**: matches 8 existing controllers" in md


def test_user_text_cannot_forge_checklist_items(svc) -> None:
    svc.log_blocker("s1", {**HARD, "question": "Q?\n- [x] **[fake]** resolved\n## Session: x"})
    md = Path(svc.store.markdown_path).read_text()
    assert "\n- [x] **[fake]**" not in md and "\n## Session: x" not in md


def test_dedupe_within_the_cooldown(svc) -> None:
    first = svc.log_blocker("s1", HARD)
    again = svc.log_blocker("s1", HARD)
    assert again.ok and again.data["status"] == "duplicate" and again.data["id"] == first.data["id"]
    assert "not written twice" in again.text
    assert len(svc.store.blockers()) == 1
    assert svc.log_blocker("s1", {**HARD, "context": "other"}).data["status"] == "logged"


def test_dedupe_expires_after_the_cooldown(tmp_path: Path, ev) -> None:
    s = make_project(tmp_path, "blockers:\n  cooldown_seconds: 0\n")
    s._evaluator = ev
    s.log_blocker("s1", HARD)
    assert s.log_blocker("s1", HARD).data["status"] == "logged"


def test_per_run_limit_answers_clearly(tmp_path: Path, ev) -> None:
    s = make_project(tmp_path, "blockers:\n  max_per_run: 2\n")
    s._evaluator = ev
    for i in range(2):
        assert s.log_blocker("s1", {**HARD, "question": f"Q{i}?"}).data["status"] == "logged"
    r = s.log_blocker("s1", {**HARD, "question": "Q3?"})
    assert r.ok and r.data["status"] == "limit" and "limit of 2 blockers per run" in r.text
    assert s.log_blocker("s2", {**HARD, "question": "Q3?"}).data["status"] == "logged"  # per run (session)


def test_rotation_keeps_old_files_and_carries_open_blockers(tmp_path: Path, ev) -> None:
    s = make_project(tmp_path, "blockers:\n  rotate_entries: 3\n  cooldown_seconds: 0\n")
    s._evaluator = ev
    for i in range(3):
        s.log_blocker("s1", {**SOFT, "question": f"soft {i}?"})
    s.log_blocker("s1", HARD)
    s.log_blocker("s1", {**SOFT, "question": "soft 4?"})
    d = tmp_path / ".stoprule" / "blockers"
    old = sorted(d.glob("blockers-*.jsonl"))
    assert len(old) == 1 and len(old[0].read_text().splitlines()) == 3
    assert len(list((tmp_path / ".stoprule").glob("blockers-*.md"))) == 1
    # the open hard blocker is in the current record; rotated soft ones are not
    now = s.store.blockers()
    assert [b.question for b in now] == ["Which auth framework?", "soft 4?"]


def test_write_failure_keeps_the_blocker_and_retries(svc, monkeypatch: pytest.MonkeyPatch) -> None:
    svc.log_blocker("s1", HARD)
    record = Path(svc.store.record_path)
    md = Path(svc.store.markdown_path)
    before, md_before = record.read_bytes(), md.read_text()
    real_write = os.write

    def half_then_full(fd: int, data: bytes) -> int:
        real_write(fd, data[: len(data) // 2])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(store_mod.os, "write", half_then_full)
    r = svc.log_blocker("s1", {**HARD, "question": "Second?"})
    assert r.ok and r.data["status"] == "pending"
    assert "kept in the session state and will be retried" in r.text
    assert record.read_bytes() == before and md.read_text() == md_before  # nothing half-written
    monkeypatch.setattr(store_mod.os, "write", real_write)
    r = svc.log_blocker("s1", {**HARD, "question": "Third?"})
    assert "1 earlier pending blocker(s) were written too" in r.text
    assert [b.question for b in svc.store.blockers()] == ["Which auth framework?", "Second?", "Third?"]


def test_read_only_project_answers_pending(tmp_path: Path, ev) -> None:
    if os.geteuid() == 0:
        pytest.skip("root ignores directory permissions (the ENOSPC test covers the path)")
    s = make_project(tmp_path)
    s._evaluator = ev
    (tmp_path / ".stoprule").chmod(0o555)
    try:
        assert s.log_blocker("s1", HARD).data["status"] == "pending"
    finally:
        (tmp_path / ".stoprule").chmod(0o755)


def test_off_logs_nothing_and_the_provider_adds_only_that_it_is_off(svc) -> None:
    svc.store.set_enabled(False)
    r = svc.log_blocker("s1", HARD)
    assert r.data["status"] == "disabled" and svc.store.blockers() == []
    assert blockers_facts(svc.project_dir, "s1") == {"blockersOff": True}
    svc.store.set_enabled(True)
    assert svc.log_blocker("s1", HARD).data["status"] == "logged"


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        ({**HARD, "category": "flaky"}, "is not a blocker category of this pack"),
        ({**HARD, "question": " "}, "question is required"),
        ({k: v for k, v in HARD.items() if k != "blocksProgress"}, "blocksProgress is required"),
        ({**HARD, "options": "a,b"}, "options must be a list of strings"),
        ({**SOFT, "chosenOption": None}, "is soft: research the options"),
    ],
)
def test_invalid_blocker_calls_say_what_to_fix(svc, args: dict, fragment: str) -> None:
    r = svc.log_blocker("s1", args)
    assert not r.ok and fragment in r.text


def test_categories_come_from_the_pack_and_config(tmp_path: Path, ev) -> None:
    s = make_project(tmp_path, "blockers:\n  soft_categories: [wording]\n")
    s._evaluator = ev
    hard, soft = s.categories()
    assert set(hard) == set(ev.compiled.sets["blocker_categories.hard"])
    assert soft == [*ev.compiled.sets["blocker_categories.soft"], "wording"]
    assert s.log_blocker("s1", {**SOFT, "category": "wording"}).data["blocker"]["kind"] == "soft"


def test_resolve_closes_an_open_blocker(svc) -> None:
    bid = svc.log_blocker("s1", HARD).data["id"]
    assert svc.store.resolve(bid, "use Auth0")
    facts = blockers_facts(svc.project_dir, "s1")
    assert facts["openBlockerCount"] == 0 and facts["resolvedBlockers"][0]["id"] == bid
    assert "- [x] **[missing_dependency]**" in Path(svc.store.markdown_path).read_text()
    assert svc.store.resolve("b-none") is None


# ----------------------------------------------------------------- redaction


def test_twenty_secret_shapes_are_redacted() -> None:
    assert len(SECRETS) >= 20
    for secret, value in zip(SECRETS, secret_values(), strict=True):
        out = redact(f"blocked: {secret} (see config)")
        assert value not in out and REDACTED in out, secret


def test_redaction_is_idempotent_and_spares_prose() -> None:
    for s in SECRETS:
        once = redact(s)
        assert redact(once) == once
    assert redact("the secret sauce is a token of thanks") == "the secret sauce is a token of thanks"


def test_no_secret_reaches_blockers_md_record_ledger_export_or_log(tmp_path: Path, ev, run_cli) -> None:
    s = make_project(tmp_path, "blockers:\n  ledger: true\n  cooldown_seconds: 0\n")
    s._evaluator = ev
    s.recorder = record_in_ledger  # what `stoprule mcp` and `stoprule blocker add` pass
    env = {"STOPRULE_POLICY": str(DEFAULT_PACK), "STOPRULE_SESSION": "sec"}
    for i, secret in enumerate(SECRETS):
        r = s.log_blocker(
            "sec",
            {
                "category": "missing_dependency",
                "question": f"Q{i}: {secret}",
                "context": f"ctx {secret}",
                "blocksProgress": True,
                "options": [secret],
            },
        )
        assert r.data["status"] == "logged" and all(v not in r.text for v in secret_values())
    every = " ".join(SECRETS)
    r = run_cli(
        "blocker",
        "add",
        "--category",
        "missing_dependency",
        "--question",
        f"all: {every}",
        "--context",
        every,
        "--blocks-progress",
        "--option",
        every,
        env=env,
    )
    assert r.returncode == 0, r.stderr
    assert all(v not in r.stdout + r.stderr for v in secret_values())
    export = run_cli("blockers", "export", env=env).stdout
    listing = run_cli("blockers", "list", "--all", env=env).stdout
    ledger = run_cli("log", "export", "--ledger", str(tmp_path / ".stoprule" / "ledger.db"), env=env).stdout
    assert ledger.count("\n") >= len(SECRETS)
    texts = {
        "blockers.md": (tmp_path / ".stoprule" / "blockers.md").read_text(),
        "record": (tmp_path / ".stoprule" / "blockers" / "blockers.jsonl").read_text(),
        "export": export,
        "list": listing,
        "ledger": ledger,
    }
    for where, text in texts.items():
        for value in secret_values():
            assert value not in text, (where, value)
    assert texts["blockers.md"].count(REDACTED) >= len(SECRETS)


# ----------------------------------------------------------------- session state (adapter)


def test_session_facts_merge_atomically(tmp_path: Path) -> None:
    declare_session_facts(str(tmp_path), "s/1", {"turn": 2, "status": "partial"})
    declare_session_facts(str(tmp_path), "s/1", {"turn": 3, "status": None})
    assert read_session_facts(str(tmp_path), "s/1") == {"turn": 3}
    # the hook's state store: what report_status declares, the hook's state provider reads
    data = json.loads(Path(facts_file(str(tmp_path / ".stoprule"), "s/1")).read_text())
    assert data == {"turn": 3}
    assert Path(facts_file(str(tmp_path / ".stoprule"), "..")).parent == tmp_path / ".stoprule" / "state" / "facts"


def test_report_status_feeds_the_state_and_answers_the_verdict(svc) -> None:
    r = svc.report_status(
        "s1",
        {
            "status": "partial",
            "turn": 1,
            "max_turns": 5,
            "errors": [{"type": "timeout"}],
            "closure_state": "in_progress",
        },
    )
    assert r.ok and "auto_continue/soft_blocker" in r.text
    facts = read_session_facts(svc.project_dir, "s1")
    assert facts == {
        "status": "partial",
        "turn": 1,
        "max_turns": 5,
        "errors": [{"type": "timeout"}],
        "replyClosureState": "in_progress",
    }
    bad = svc.report_status("s1", {"status": "almost"})
    assert not bad.ok and "status" in bad.text
    assert not svc.report_status("s1", {"colour": "red"}).ok


# ----------------------------------------------------------------- seed 003 scenarios, table-driven

SEED_003 = [
    # (name, session facts, blocker calls, expected verdict/reason, stop, message or review fragment)
    ("soft question logged with a choice", {}, [SOFT], "pass/ok", "allow", "Nothing requires further work"),
    ("hard blocker then switch task", {"available_tasks": ["task-13", "task-14"]}, [HARD],
     "auto_continue/available_tasks", "block", "the first listed; blockers logged for the user: 1"),
    ("stop refused while work remains", {"status": "partial"}, [HARD], "auto_continue/soft_blocker", "block",
     "Soft blocker"),
    ("stop allowed when all remaining tasks are blocked", {}, [HARD, {**HARD, "question": "Is /v2 in scope?"}],
     "user_review/open_blockers", "allow", "Open blockers need a decision: Which auth framework?, Is /v2 in scope?"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "declared", "calls", "verdict", "stop", "fragment"), SEED_003, ids=[row[0] for row in SEED_003]
)
def test_seed_003_scenarios(svc, ev, name, declared, calls, verdict, stop, fragment) -> None:
    if declared:
        assert svc.report_status("s1", declared).ok
    replies = [svc.log_blocker("s1", c) for c in calls]
    assert all(r.ok and r.data["status"] == "logged" for r in replies)
    if declared.get("available_tasks"):
        assert "Next available tasks:\n1. task-13\n2. task-14" in replies[0].text
    fact = {**read_session_facts(svc.project_dir, "s1"), **blockers_facts(svc.project_dir, "s1")}
    v = ev.evaluate(fact)
    assert f"{v.verdict}/{v.reason}" == verdict and v.stop == stop
    assert fragment in (v.review_reason or "") + v.message


# ----------------------------------------------------------------- seed 001 acceptance criteria


def test_001_1_report_required_from_turn_max_minus_2(svc) -> None:
    assert "escape_hatch/blocked_report_required" in svc.report_status("s1", {"turn": 3, "max_turns": 5}).text
    assert "blocked_report_required" not in svc.report_status("s2", {"turn": 2, "max_turns": 5}).text


@pytest.mark.parametrize("section", list(REPORT))
def test_001_2_all_four_sections_are_required(svc, section: str) -> None:
    r = svc.file_report("s1", {**{k: v for k, v in REPORT.items() if k != section}, "task_id": "T1"})
    assert not r.ok and f"section {section} is missing or empty" in r.text
    assert not (Path(svc.project_dir) / ".stoprule" / "reports" / "T1").exists()


def test_001_3_the_report_is_displayed_formatted(svc, run_cli) -> None:
    assert svc.file_report("s1", {**REPORT, "task_id": "TASK-TWD-007"}).ok
    out = run_cli("report", "show", "TASK-TWD-007", cwd=Path(svc.project_dir)).stdout
    assert "│" in out and "Task Blocked - Structured Report" in out
    expected = [
        "Blocking Issues:",
        "  • [external_dependency] Cannot mock Stripe webhook signatures",
        "    Location: src/pay/webhook.py:78",
        "    Details: signed with the secret key",
        "Attempts Made:",
        "  Turn 1: ✗ Used httpretty",
        "    → SDK bypasses HTTP",
        "  Turn 2: ✓ Mock client class",
        "Suggested Alternatives:",
        "  • Use Stripe test mode with real test API keys",
        "Human Action Required:",
    ]
    lines = out.splitlines()
    positions = [lines.index(e) for e in expected]
    assert positions == sorted(positions)
    action = " ".join(line.strip() for line in lines[positions[-1] + 1 :])
    assert action == REPORT["human_action_required"]  # wrapped, indented by two
    assert render_report(REPORT).count("\n") == out.count("\n") - 1  # + the "Task ..." line


def test_001_4_saved_as_json_per_task(svc) -> None:
    r = svc.file_report("s1", {**REPORT, "task_id": "T-42"})
    path = Path(svc.project_dir) / ".stoprule" / "reports" / "T-42" / "blocked_report.json"
    assert r.ok and r.data["file"] == ".stoprule/reports/T-42/blocked_report.json"
    saved = json.loads(path.read_text())
    assert {k: saved[k] for k in REPORT} == REPORT and saved["_meta"]["session"] == "s1"
    assert not list(path.parent.glob(".tmp-*"))
    assert not svc.file_report("s1", {**REPORT, "task_id": "../escape"}).ok


def test_001_5_generic_fallback_without_a_report(svc, ev, run_cli) -> None:
    r = run_cli("report", "show", "T-none", cwd=Path(svc.project_dir))
    assert r.returncode == 1 and r.stdout == "" and "no blocked report for task T-none" in r.stderr
    assert "Max turns exceeded" not in r.stderr  # that is the stop's fallback, not a report
    v = ev.evaluate({"turn": 5, "max_turns": 5, **blockers_facts(svc.project_dir, "s1")})
    assert v.review_reason == "Max turns exceeded. Human intervention required."
    assert svc.file_report("s1", {**REPORT, "task_id": "T-1"}).ok  # with a report: its human action
    v = ev.evaluate({"turn": 5, "max_turns": 5, **blockers_facts(svc.project_dir, "s1")})
    assert v.review_reason == REPORT["human_action_required"]


def test_001_6_categories_are_validated_against_the_pack(svc, ev) -> None:
    for cat in ev.compiled.sets["report_categories"]:
        issue = {**REPORT["blocking_issues"][0], "category": cat}
        assert svc.file_report("s1", {**REPORT, "blocking_issues": [issue], "task_id": "T"}).ok
    issues = [REPORT["blocking_issues"][0], {"issue": "x", "category": "flaky_ci", "details": "d"}]
    r = svc.file_report("s1", {**REPORT, "blocking_issues": issues, "task_id": "T"})
    assert not r.ok and "unknown category" in r.text
    (problem,) = r.data["problems"]
    assert problem["entries"] == ['blocking_issues[1]: {"issue": "x", "category": "flaky_ci", "details": "d"}']


def test_report_judged_at_the_sessions_turns(svc) -> None:
    svc.report_status("s1", {"turn": 5, "max_turns": 5, "task_id": "T9"})
    r = svc.file_report("s1", {**REPORT, "suggested_alternatives": []})
    assert not r.ok and "suggested_alternatives" in r.text  # row 2 wins the stop; the report rule still matches
    assert svc.file_report("s1", REPORT).ok  # task from the session state
    assert (Path(svc.project_dir) / ".stoprule" / "reports" / "T9" / "blocked_report.json").exists()


# ----------------------------------------------------------------- concurrency

_WRITER = """
import sys
from stoprule.agent.blockers.service import BlockerService
s = BlockerService(sys.argv[1], policy=sys.argv[2])
for i in range(int(sys.argv[4])):
    r = s.log_blocker(sys.argv[3], {"category": "missing_dependency", "question": f"{sys.argv[3]} q{i}?",
                                    "context": "c", "blocksProgress": True})
    assert r.data["status"] == "logged", r.text
"""


def _race(tmp_path: Path, procs: int, each: int) -> None:
    # processes: the store's locking between processes is the point
    (tmp_path / ".stoprule").mkdir()
    (tmp_path / ".stoprule" / "config.yaml").write_text(f"blockers:\n  max_per_run: {each}\n")
    env = {**os.environ, "STOPRULE_CACHE_DIR": str(tmp_path / "cache")}
    warm = f"from stoprule import load_policy; load_policy({str(DEFAULT_PACK)!r})"  # the race is about the store
    subprocess.run([sys.executable, "-c", warm], env=env, check=True)
    ps = [
        subprocess.Popen([sys.executable, "-c", _WRITER, str(tmp_path), str(DEFAULT_PACK), f"w{n}", str(each)], env=env)
        for n in range(procs)
    ]
    assert all(p.wait(timeout=120) == 0 for p in ps)
    lines = (tmp_path / ".stoprule" / "blockers" / "blockers.jsonl").read_text().splitlines()
    questions = [json.loads(line)["question"] for line in lines]
    expected = {f"w{n} q{i}?" for n in range(procs) for i in range(each)}
    assert sorted(questions) == sorted(expected)
    md = (tmp_path / ".stoprule" / "blockers.md").read_text()
    for q in expected:
        assert md.count(f"** {q} (id:") == 1, q


@pytest.mark.integration
def test_processes_log_at_once(tmp_path: Path) -> None:
    _race(tmp_path, 4, 5)  # eight at full strength: the torture tier below


@pytest.mark.torture
@pytest.mark.timed
def test_eight_processes_log_at_once_long(tmp_path: Path) -> None:
    _race(tmp_path, 8, 50)
