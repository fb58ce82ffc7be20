"""Nothing an agent or a file sends turns the gate off; every write is normalised and redacted.

One test (or more) per finding of the hook/blocker/state fuzzing campaign: each failed
before the fix. The hypothesis campaign over the same inputs is in test_security_torture.py.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from blocker_helpers import DEFAULT_PACK, make_project
from hookharness import payload
from stoprule._util.files import NotRegular, atomic_write, read_bounded
from stoprule._util.redact import REDACTED, redact
from stoprule._util.redact import redact_obj as R_obj
from stoprule.agent.blockers.facts import blockers_facts
from stoprule.agent.blockers.reports import check_task_id
from stoprule.agent.hook import runner as runner_mod
from stoprule.agent.hook.declare import set_facts
from stoprule.agent.hook.runner import MAX_PAYLOAD_BYTES, run_hook
from stoprule.agent.hook.state import read_session, session_file
from stoprule.agent.hook.transcripts.scan import scan_file
from stoprule.cli.main import run as cli_run

HARD = {"category": "missing_dependency", "question": "Which auth framework?", "context": "login",
        "blocksProgress": True}  # fmt: skip
NO_GIT = "providers:\n  enabled: [hook, state, blockers, closure, transcript]\n"
SECRET = "password=Hunter2-Sup3rSecret"
SECRET_VALUE = "Hunter2-Sup3rSecret"


def _project(tmp_path: Path, config: str = NO_GIT) -> Path:
    root = tmp_path / "proj"
    (root / ".stoprule").mkdir(parents=True)
    if config:
        (root / ".stoprule" / "config.yaml").write_text(config)
    return root


def _env(tmp_path: Path) -> dict[str, str]:
    return {"STOPRULE_POLICY": str(DEFAULT_PACK), "STOPRULE_NO_CACHE": "1", "STOPRULE_STATE_DIR": str(tmp_path / "u")}


def _stop(root: Path, harness: str = "claude-code", **changes: Any) -> bytes:
    data = payload(harness)
    data["cwd"] = str(root)
    data.update(changes)
    return json.dumps(data).encode()


def _hook(tmp_path: Path, root: Path, data: bytes, harness: str = "claude-code") -> runner_mod.HookResult:
    return run_hook(harness, None, data, cwd=str(root), env=_env(tmp_path))


def _blocks(res: runner_mod.HookResult) -> bool:
    """A continuation: codex's block, Claude Code's Stop additionalContext (or its block)."""
    out = res.output or {}
    return out.get("decision") == "block" or bool((out.get("hookSpecificOutput") or {}).get("additionalContext"))


def _log(root: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (root / ".stoprule" / "hook.log").read_text(encoding="utf-8").splitlines()]


def _dirty(root: Path, session: str = "cc-session-1") -> None:
    """A fact that makes the default pack block (as a dirty tree would)."""
    set_facts(str(root / ".stoprule"), session, {"uncommittedWork": True})


# ------------------------------------------------------------------ 1. a NUL disables the gate


def test_a_nul_in_a_blocker_is_normalised_and_never_fails_later_stops(tmp_path: Path, evaluator) -> None:  # noqa: ANN001
    svc = make_project(tmp_path)
    svc._evaluator = evaluator
    r = svc.log_blocker("cc-session-1", {**HARD, "question": "which\x00db\ud800 now\x1b[31m?"})
    assert r.ok and r.data["status"] == "logged"
    record = (tmp_path / ".stoprule" / "blockers" / "blockers.jsonl").read_text(encoding="utf-8")
    assert "\\u0000" not in record and "\\ud800" not in record and "\\u001b" not in record
    facts = blockers_facts(str(tmp_path), "cc-session-1", svc.settings)
    evaluator.evaluate(facts)  # no FactError: the stop check works
    assert svc.report_status("cc-session-1", {"status": "implemented"}).ok


def test_a_damaged_record_entry_is_normalised_or_skipped_never_fatal(tmp_path: Path) -> None:
    root = _project(tmp_path)
    store = root / ".stoprule" / "blockers"
    store.mkdir()
    bad = [
        {"op": "add", "id": "b-1", "session": "cc-session-1", "category": "missing_dependency", "question": "a\x00b",
         "context": "c", "blocksProgress": True, "ts": 1},
        {"op": "add", "id": "b-2", "session": "cc-session-1", "category": 7, "question": ["x"], "ts": "never"},
        {"op": "add", "id": "b-3", "session": "cc-session-1", "question": "q", "options": {"not": "a list"}},
        "just a string",
    ]  # fmt: skip
    lines = [json.dumps(b) for b in bad] + ['{"op": "add", "id": "b-4", ' + "[" * 5000, "\ufffd\x00garbage"]
    (store / "blockers.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    res = _hook(tmp_path, root, _stop(root))
    assert "error" not in res.entry, res.entry.get("error")
    open_ = res.entry["fact"]["openBlockers"]
    assert [b["question"] for b in open_ if b["id"] == "b-1"] == ["ab"]
    notes = " ".join(res.entry["provenance"]["notes"]["blockers"])
    assert "skipped: not JSON" in notes and "skipped: a malformed entry" in notes


# ------------------------------------------------------------------ 2. a lone surrogate drops the decision


@pytest.mark.parametrize("fail", ["open", "closed"])
def test_a_lone_surrogate_in_the_payload_keeps_the_decision_and_the_log_line(tmp_path: Path, fail: str) -> None:
    root = _project(tmp_path, NO_GIT + f"hook:\n  fail: {fail}\n")
    _dirty(root)
    res = _hook(tmp_path, root, _stop(root, last_assistant_message="ok \ud800 \udfff end"))
    assert _blocks(res), res.entry  # the policy's block, not an allow
    (line,) = _log(root)
    assert line["decision"]["block"] is True and "error" not in line


def test_an_internal_error_with_surrogates_still_writes_its_log_line(tmp_path: Path) -> None:
    root = _project(tmp_path, NO_GIT + "hook:\n  fail: closed\n")
    res = _hook(tmp_path, root, b'{"cwd": "' + str(root).encode() + b'", "session_id": "\\ud800", "x": \xff}')
    assert _blocks(res)
    (line,) = _log(root)
    assert line["fail"] == "closed" and "PayloadError" in line["error"]


# ------------------------------------------------------------------ 3. quadratic redaction


def test_redaction_of_the_reported_inputs_is_linear() -> None:
    # 47.5 s before for "a-" * 5000; the adversarial 1 MB inputs per pattern are in test_redact.py
    for text in ("a-" * 5000, "a." * 8000, "x-" * 16000):
        assert redact(text) == text


# ------------------------------------------------------------------ 4. rotation storm


def test_open_blockers_beyond_rotate_entries_do_not_rotate_on_every_add(tmp_path: Path, evaluator) -> None:  # noqa: ANN001
    s = make_project(tmp_path, "blockers:\n  rotate_entries: 5\n  cooldown_seconds: 0\n  max_per_run: 500\n")
    s._evaluator = evaluator
    for i in range(60):
        assert s.log_blocker("s1", {**HARD, "question": f"open {i}?"}).data["status"] == "logged"
    d = tmp_path / ".stoprule" / "blockers"
    assert list(d.glob("blockers-*.jsonl")) == [] and list((tmp_path / ".stoprule").glob("blockers-*.md")) == []
    assert len(s.store.blockers()) == 60  # nothing open is lost


def test_rotation_keeps_a_bounded_number_of_files(tmp_path: Path, evaluator) -> None:  # noqa: ANN001
    from stoprule.agent.blockers.store import MAX_ROTATED

    s = make_project(tmp_path, "blockers:\n  rotate_entries: 4\n  cooldown_seconds: 0\n  max_per_run: 1000\n")
    s._evaluator = evaluator
    soft = {"category": "timeout", "question": "x?", "context": "c", "blocksProgress": False, "options": ["a"],
            "chosenOption": "a", "chosenReasoning": "r"}  # fmt: skip
    s.log_blocker("s1", HARD)  # one open blocker, carried through every rotation
    for i in range(120):
        s.log_blocker("s1", {**soft, "question": f"soft {i}?"})
    d = tmp_path / ".stoprule" / "blockers"
    assert 1 <= len(list(d.glob("blockers-*.jsonl"))) <= MAX_ROTATED
    assert 1 <= len(list((tmp_path / ".stoprule").glob("blockers-*.md"))) <= MAX_ROTATED
    assert [b.question for b in s.store.blockers() if b.open] == [HARD["question"]]


# ------------------------------------------------------------------ 5. secrets reach disk in clear


def test_no_secret_reaches_the_hook_log_session_state_or_ledger(tmp_path: Path) -> None:
    root = _project(tmp_path, NO_GIT + "hook:\n  ledger: true\n")
    transcript = root / "t.jsonl"
    lines = [
        {"type": "user", "message": {"role": "user", "content": "go"}},
        {"type": "assistant", "message": {"content": [{"type": "text", "text": f"done; {SECRET}"},
                                                      {"type": "tool_use", "id": "t1", "name": "Bash"}]}},
        {"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "t1", "is_error": True,
                                                  "content": f"export {SECRET} failed"}]}},
    ]  # fmt: skip
    transcript.write_text("".join(json.dumps(x) + "\n" for x in lines))
    secret_session = "sess-" + SECRET
    _dirty(root, secret_session)
    data = _stop(
        root, session_id=secret_session, transcript_path=str(transcript), last_assistant_message=f"stop now {SECRET}"
    )
    from stoprule.cli.hook_cmd import record

    res = run_hook("claude-code", None, data, cwd=str(root), env=_env(tmp_path), record=record)
    assert _blocks(res) and res.entry.get("ledger_journal"), res.entry
    journaled = [p for p in (root / ".stoprule").rglob("*") if p.is_file()]
    assert any(p.name == "ledger.db.journal" for p in journaled)
    from stoprule.ledger import Ledger

    with Ledger.open(str(root / ".stoprule" / "ledger.db")) as led:  # folds the journal in
        (run,) = led.runs()
        assert run.decisions == 1 and SECRET_VALUE not in run.run
    written = [p for p in (root / ".stoprule").rglob("*") if p.is_file()]
    assert any(p.name == "ledger.db" for p in written) and any("sessions" in p.parts for p in written)
    for p in journaled + written:
        assert not p.exists() or SECRET_VALUE.encode() not in p.read_bytes(), p


def test_facts_set_and_eval_run_redact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    root = _project(tmp_path)
    monkeypatch.chdir(root)
    monkeypatch.setenv("STOPRULE_POLICY", str(DEFAULT_PACK))
    out, err = io.StringIO(), io.StringIO()
    code = cli_run(["facts", "set", "--session", "s", f"review_reason=deploy with {SECRET}"], io.BytesIO(), out, err)
    assert code == 0, err.getvalue()
    stored = (root / ".stoprule" / "state" / "facts" / "s.json").read_text()
    assert SECRET_VALUE not in stored and SECRET_VALUE not in out.getvalue() and REDACTED in stored
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    code = cli_run(["facts", "set", f"oops {token}"], io.BytesIO(), out, err)
    assert code == 2 and token not in err.getvalue()
    fact = {"taskBoundaryStop": True, "replyClosureState": f"implemented {SECRET}"}
    (root / "f.json").write_text(json.dumps(fact))
    ledger = root / ".stoprule" / "ledger.db"
    cli_run(["eval", "--run", "r1", "--ledger", str(ledger), str(root / "f.json")], io.BytesIO(), out, err)
    assert ledger.exists() and SECRET_VALUE.encode() not in ledger.read_bytes()


def test_a_state_change_redacts_what_it_adds_even_in_place(tmp_path: Path) -> None:
    """The session record is written redacted; a change redacts what it adds or changes, also
    when it changes the record it was given in place (what the file held is kept as written:
    it was redacted then, and is not redacted again at every stop)."""
    from stoprule.agent.hook.state import update_session

    project = str(tmp_path / ".stoprule")
    os.makedirs(project)

    def add(key: str, value: Any) -> Any:
        def change(cur: dict[str, Any]) -> dict[str, Any]:
            cur.setdefault("history", []).append(value)  # in place, as the loop guard's record grows
            cur[key] = value
            return cur

        return change

    update_session(project, "s", add("first", f"note {SECRET}"))
    update_session(project, "s", add("second", {"nested": f"and {SECRET}", "n": 1}))
    update_session(project, "s", add("first", "plain"))
    text = Path(session_file(project, "s")).read_text(encoding="utf-8")
    assert SECRET_VALUE not in text and text.count(REDACTED) == 3, text
    stored = json.loads(text)
    assert stored["first"] == "plain" and stored["second"]["n"] == 1 and len(stored["history"]) == 3
    assert stored == json.loads(json.dumps(R_obj(stored)))  # nothing left to redact


def test_the_session_id_is_redacted_in_the_blockers_files(tmp_path: Path, evaluator) -> None:  # noqa: ANN001
    svc = make_project(tmp_path)
    svc._evaluator = evaluator
    assert svc.log_blocker(f"run {SECRET}", HARD).ok
    for f in (".stoprule/blockers.md", ".stoprule/blockers/blockers.jsonl"):
        assert SECRET_VALUE not in (tmp_path / f).read_text(), f


# ------------------------------------------------------------------ 6. fail: closed holds


@pytest.mark.parametrize(
    "config",
    [
        '{"hook": {"fail": "closed", "nonsense": 1}}',  # JSON
        "hook: {fail: closed, nonsense: 1}\n",  # YAML flow style
        "hook:\n  fail: 'closed'\n  nonsense: 1\n",  # block style (worked before)
    ],
)
def test_fail_closed_holds_for_a_config_that_does_not_load(tmp_path: Path, config: str) -> None:
    root = _project(tmp_path, config)
    res = _hook(tmp_path, root, _stop(root))
    assert _blocks(res) and res.entry["fail"] == "closed", res.entry


def test_fail_closed_holds_for_bad_stdin(tmp_path: Path) -> None:
    root = _project(tmp_path, NO_GIT + "hook:\n  fail: closed\n")
    res = run_hook("claude-code", None, b"{not json", cwd=str(root), env=_env(tmp_path))
    assert _blocks(res) and "PayloadError" in res.entry["error"]


@pytest.mark.parametrize("fail", ["open", "closed"])
def test_an_unwritable_state_keeps_a_policy_block(tmp_path: Path, fail: str) -> None:
    root = _project(tmp_path, NO_GIT + f"hook:\n  fail: {fail}\n")
    _dirty(root)
    (root / ".stoprule" / "state" / "sessions").write_text("a file where the folder should be")
    res = _hook(tmp_path, root, _stop(root))
    assert _blocks(res) and res.entry["state_error"], res.entry
    # the harness's flag says this stop follows a block: allowed, so the agent cannot loop forever
    again = _hook(tmp_path, root, _stop(root, stop_hook_active=True))
    assert not _blocks(again) and "cannot be written" in again.decision.notice


def test_a_corrupt_session_file_is_quarantined_and_rebuilt(tmp_path: Path) -> None:
    root = _project(tmp_path)
    _dirty(root)
    path = Path(session_file(str(root / ".stoprule"), "cc-session-1"))
    path.parent.mkdir(parents=True)
    path.write_text("{torn")
    res = _hook(tmp_path, root, _stop(root))
    assert _blocks(res) and "error" not in res.entry and "moved aside" in res.entry["state_notes"][0]
    assert json.loads(path.read_text())["guard"]["blocks"] == 1  # rebuilt
    assert len(list(path.parent.glob("*.corrupt-*"))) == 1
    notes: list[str] = []
    path.write_text("[1, 2]")
    assert read_session(str(root / ".stoprule"), "cc-session-1", notes) == {} and notes


# ------------------------------------------------------------------ 7. hangs


def test_a_fifo_config_is_refused_without_blocking(tmp_path: Path) -> None:
    root = _project(tmp_path, "")
    os.mkfifo(root / ".stoprule" / "config.yaml")
    with pytest.raises(NotRegular):
        read_bounded(str(root / ".stoprule" / "config.yaml"), 1024)
    box: list[runner_mod.HookResult] = []
    t = threading.Thread(target=lambda: box.append(_hook(tmp_path, root, _stop(root))), daemon=True)
    t.start()
    t.join(60)  # before: blocked forever on open()
    assert box and "not a regular file" in box[0].entry["error"]


def test_a_fifo_anywhere_the_hook_reads_never_blocks_it(tmp_path: Path) -> None:
    root = _project(tmp_path)
    set_facts(str(root / ".stoprule"), None, {"uncommittedWork": True})  # project-wide: the policy blocks
    st = root / ".stoprule"
    for rel in (
        "reports/T-1/blocked_report.json",
        "blockers/blockers.jsonl",
        "blockers/switch.json",
        "state/sessions/cc-session-1.json",
        "state/facts/cc-session-1.json",
    ):
        (st / rel).parent.mkdir(parents=True, exist_ok=True)
        os.mkfifo(st / rel)
    os.mkfifo(root / "t.jsonl")
    box: list[runner_mod.HookResult] = []
    data = _stop(root, transcript_path=str(root / "t.jsonl"))
    t = threading.Thread(target=lambda: box.append(_hook(tmp_path, root, data)), daemon=True)
    t.start()
    t.join(60)
    assert box and _blocks(box[0]), box and box[0].entry


def test_an_oversized_payload_is_refused_unparsed(tmp_path: Path) -> None:
    root = _project(tmp_path, NO_GIT + "hook:\n  fail: closed\n")
    big = _stop(root)[:-1] + b', "pad": "' + b"x" * MAX_PAYLOAD_BYTES + b'"}'
    res = _hook(tmp_path, root, big)
    assert _blocks(res) and "not parsed" in res.entry["error"]


# ------------------------------------------------------------------ 8. transcript state


def _claude_turns(n: int, pretty: bool = False, spaced: bool = False) -> str:
    rows = [{"type": "user", "message": {"role": "user", "content": f"turn {i}"}} for i in range(n)]
    if pretty:
        return "".join(json.dumps(r, indent=2) + "\n" for r in rows)
    sep = (", ", ": ") if spaced else (",", ":")
    return "".join(json.dumps(r, separators=sep) + "\n" for r in rows)


def test_a_transcript_replaced_in_place_is_read_again(tmp_path: Path) -> None:
    t = tmp_path / "t.jsonl"
    t.write_text(_claude_turns(5))
    state, _ = scan_file(str(t), "claude", None)
    assert state["scan"]["turns"] == 5
    with open(t, "r+") as fh:  # truncate and rewrite: same inode, longer, other first bytes
        fh.truncate(0)
        fh.write(_claude_turns(2).replace("turn", "TURN") + _claude_turns(5))
    state2, notes = scan_file(str(t), "claude", state)
    assert state2["scan"]["turns"] == 7 and any("replaced" in n for n in notes)
    state3, notes3 = scan_file(str(t), "claude", state2)  # unchanged: resumes, no note
    assert state3["scan"]["turns"] == 7 and not notes3


def test_a_deeply_nested_line_is_skipped_and_the_position_advances(tmp_path: Path) -> None:
    t = tmp_path / "t.jsonl"
    deep = '{"type": "user", "message": ' + "[" * 100_000 + "]" * 100_000 + "}\n"
    t.write_text(_claude_turns(1) + deep + _claude_turns(1))
    state, notes = scan_file(str(t), "claude", None)
    assert state["offset"] == t.stat().st_size and state["scan"]["turns"] == 2
    assert any("nested too deeply" in n or "not JSON" in n for n in notes)
    with open(t, "a") as fh:
        fh.write(_claude_turns(1))
    state2, _ = scan_file(str(t), "claude", state)
    assert state2["scan"]["turns"] == 3


@pytest.mark.parametrize("style", ["spaced", "pretty"])
def test_spaced_and_pretty_transcripts_are_read_and_agree_with_replay(tmp_path: Path, style: str) -> None:
    from stoprule.agent.hook.replay import boundaries
    from stoprule.config.fields import DEFAULT_FIELDS

    t = tmp_path / "t.jsonl"
    t.write_text(_claude_turns(4, pretty=style == "pretty", spaced=style == "spaced"))
    state, notes = scan_file(str(t), "claude", None)
    assert state["scan"]["turns"] == 4 and not notes
    assert len(boundaries(str(t), "claude", DEFAULT_FIELDS)) == 4


# ------------------------------------------------------------------ 9. minor


def test_a_task_id_with_a_trailing_newline_is_refused() -> None:
    assert check_task_id("abc") is None
    assert check_task_id("abc\n") and check_task_id("abc\n\n") and check_task_id("a/b")


def test_a_short_log_write_never_cuts_another_appenders_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _project(tmp_path)
    log = root / ".stoprule" / "hook.log"
    _hook(tmp_path, root, _stop(root))
    real, other = os.write, b'{"another": "appender"}\n'
    cut: list[bytes] = []

    def raced_then_short(fd: int, data: bytes) -> int:
        """Another process appends its line just before this one's write, which is then short."""
        if cut or len(data) < 2 or os.fstat(fd).st_ino != log.stat().st_ino:
            return real(fd, data)
        with open(log, "ab") as f:
            f.write(other)
        cut.append(data[: len(data) // 2])
        return real(fd, cut[0])

    monkeypatch.setattr(runner_mod.os, "write", raced_then_short)
    _hook(tmp_path, root, _stop(root))
    monkeypatch.setattr(runner_mod.os, "write", real)
    assert "short write" in capsys.readouterr().err
    _hook(tmp_path, root, _stop(root))
    lines = log.read_bytes().split(b"\n")
    assert lines[1] + b"\n" == other and lines[2] == cut[0] and lines[4] == b""  # reported, nothing cut back
    assert [json.loads(x)["harness"] for x in (lines[0], lines[3])] == ["claude-code"] * 2  # the next line parses


def test_a_log_line_past_the_file_size_limit_is_not_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    resource = pytest.importorskip("resource")
    home = tmp_path / ".stoprule"
    runner_mod._log(str(home), True, {"n": 1})
    before = (home / "hook.log").read_bytes()
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (len(before) + 100, hard))
    try:
        runner_mod._log(str(home), True, {"n": 2, "text": "x" * 500})  # a write would be cut at the limit
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    assert (home / "hook.log").read_bytes() == before and "file-size limit" in capsys.readouterr().err


def test_a_soft_choice_must_be_one_of_its_options(tmp_path: Path, evaluator) -> None:  # noqa: ANN001
    svc = make_project(tmp_path)
    svc._evaluator = evaluator
    soft = {"category": "timeout", "question": "Name?", "context": "c", "blocksProgress": False,
            "options": ["a", "b"], "chosenOption": "c", "chosenReasoning": "r"}  # fmt: skip
    r = svc.log_blocker("s1", soft)
    assert not r.ok and "not one of the options" in r.text
    assert svc.log_blocker("s1", {**soft, "chosenOption": "b"}).ok


def test_html_is_escaped_in_blockers_md(tmp_path: Path, evaluator) -> None:  # noqa: ANN001
    svc = make_project(tmp_path)
    svc._evaluator = evaluator
    svc.log_blocker("s<script>", {**HARD, "question": "<img src=x onerror=alert(1)> & <b>bold</b>?"})
    md = (tmp_path / ".stoprule" / "blockers.md").read_text()
    assert "<img" not in md and "<b>" not in md and "<script>" not in md and "&lt;img" in md


def test_mcp_refuses_a_non_boolean_and_never_echoes_rejected_values(tmp_path: Path, evaluator) -> None:  # noqa: ANN001
    pytest.importorskip("mcp")
    import anyio
    from mcp.server.mcpserver.exceptions import ToolError

    from stoprule.agent.blockers.mcp import build_server

    svc = make_project(tmp_path)
    svc._evaluator = evaluator
    server = build_server(svc)

    async def call(args: dict[str, Any]) -> str:
        try:
            await server.call_tool("blocker", args)
        except ToolError as exc:
            return str(exc)
        return ""

    text = anyio.run(call, {**HARD, "blocksProgress": "yes"})
    assert "blocksProgress" in text and not (tmp_path / ".stoprule" / "blockers.md").exists()
    text = anyio.run(call, {**HARD, "blocksProgress": {"k": SECRET}, "question": ["not a string", SECRET]})
    assert text and SECRET_VALUE not in text


# ------------------------------------------------------------------ one file helper


def test_atomic_write_replaces_or_creates_exclusively(tmp_path: Path) -> None:
    p = tmp_path / "d" / "f.json"
    assert atomic_write(str(p), "one") and p.read_text() == "one"
    assert atomic_write(str(p), b"two") and p.read_text() == "two"
    assert atomic_write(str(p), "three", exclusive=True) is False and p.read_text() == "two"
    assert [x.name for x in p.parent.iterdir()] == ["f.json"]  # no temp file left


def test_atomic_write_keeps_the_mode_of_the_file_it_replaces(tmp_path: Path) -> None:
    p = tmp_path / "f"
    atomic_write(str(p), "one", mode=0o600)
    assert p.stat().st_mode & 0o777 == 0o600
    p.chmod(0o750)
    atomic_write(str(p), "two", keep_mode=True)
    assert (p.read_text(), p.stat().st_mode & 0o777) == ("two", 0o750)
    atomic_write(str(p), "three")
    assert p.stat().st_mode & 0o777 == 0o644 & ~_umask()


def _umask() -> int:
    old = os.umask(0)
    os.umask(old)
    return old


def test_every_temp_then_rename_write_and_lock_goes_through_the_helper() -> None:
    src = Path(__file__).resolve().parents[2] / "src" / "stoprule"
    for f in src.rglob("*.py"):
        if f.relative_to(src).as_posix() == "_util/files.py":
            continue
        text = f.read_text()
        for needle in ("os.replace(", "mkstemp(", "flock(", "os.link("):
            allowed = f.name == "runner.py" and needle == "os.replace("  # the log's one rotation
            allowed |= f.relative_to(src).as_posix() == "_util/native.py" and needle == "flock("  # the call itself
            assert allowed or needle not in text, (f, needle)
