"""A hypothesis campaign over what an agent or a file can send: MCP tool arguments, hook
payloads, config files, state files and transcripts (torture tier: `pytest -m torture`).

Properties: the hook never raises and always answers and logs one line; nothing written is
invalid UTF-8 or holds a NUL, control character or lone surrogate; a damaged state file
never changes a policy block into an allow; the transcript reader always moves past
every complete line; nothing sent poisons a later stop.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import string
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from blocker_helpers import DEFAULT_PACK, make_project
from hookharness import HARNESSES, payload
from stoprule import load_policy
from stoprule.agent.blockers.facts import blockers_facts
from stoprule.agent.hook.declare import set_facts
from stoprule.agent.hook.runner import run_hook
from stoprule.agent.hook.state import facts_file, session_file
from stoprule.agent.hook.transcripts.scan import scan_file

pytestmark = pytest.mark.torture

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
NO_GIT = "providers:\n  enabled: [hook, state, blockers, closure, transcript]\n"
BAD = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")
EVALUATOR = load_policy(DEFAULT_PACK, cache=False)

nasty_text = st.lists(
    st.one_of(
        st.text(st.characters(exclude_categories=()), max_size=12),
        st.sampled_from(
            [
                "\x00",
                "\ud800",
                "\udfff",
                "\x1b[31m",
                "\u202e",
                "<script>",
                "&amp;",
                "\n",
                "password=Hunter2-x9",
                "ghp_" + "a1B2" * 9,
                "[",
                "{",
                "abc\n",
            ]
        ),
    ),
    max_size=12,
).map("".join)
json_value = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), nasty_text),
    lambda kids: st.one_of(st.lists(kids, max_size=4), st.dictionaries(nasty_text, kids, max_size=4)),
    max_leaves=12,
)


def _all_written(root: Path) -> list[Path]:
    return [
        p
        for p in root.rglob("*")
        if p.is_file()
        and "ledger.db" not in p.name
        and ".lock" not in p.name
        and p.name != "config.yaml"
        and ".corrupt-" not in p.name
    ]


def _clean_on_disk(root: Path) -> None:
    for p in _all_written(root):
        text = p.read_bytes().decode("utf-8")  # valid UTF-8
        if p.suffix in (".json", ".jsonl", ".log"):
            for line in text.splitlines() if p.suffix != ".json" else [text]:
                if line.strip():
                    assert not _bad_strings(json.loads(line)), p
        else:
            assert not BAD.search(text.replace("\n", "").replace("\t", "").replace("\r", "")), p


def _bad_strings(value: Any) -> bool:
    if isinstance(value, str):
        return BAD.search(value) is not None
    if isinstance(value, dict):
        return any(_bad_strings(k) or _bad_strings(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_bad_strings(v) for v in value)
    return False


def _env(home: Path) -> dict[str, str]:
    return {"STOPRULE_POLICY": str(DEFAULT_PACK), "STOPRULE_NO_CACHE": "1", "STOPRULE_STATE_DIR": str(home / "u")}


def _decide(root: Path, data: bytes, harness: str = "claude-code") -> Any:
    res = run_hook(harness, None, data, cwd=str(root), env=_env(root))
    assert res.output is None or isinstance(res.output, dict)
    json.dumps(res.output, ensure_ascii=False).encode("utf-8")
    return res


@SETTINGS
@given(
    tool=st.sampled_from(["blocker", "report_status", "blocked_report"]),
    args=st.dictionaries(
        st.sampled_from(
            [
                "category",
                "question",
                "context",
                "blocksProgress",
                "options",
                "chosenOption",
                "chosenReasoning",
                "status",
                "errors",
                "turn",
                "max_turns",
                "task_id",
                "available_tasks",
                "closure_state",
                "blocking_issues",
                "attempts_made",
                "suggested_alternatives",
                "human_action_required",
            ]
        ),
        json_value,
        max_size=8,
    ),
    session=st.one_of(st.none(), nasty_text),
)
def test_mcp_arguments_never_poison_the_store_or_a_later_stop(
    tool: str, args: dict[str, Any], session: str | None
) -> None:
    tmp = Path(tempfile.mkdtemp())
    try:
        svc = make_project(tmp, NO_GIT + "blockers:\n  cooldown_seconds: 0\n")
        svc._evaluator = EVALUATOR
        base = {"category": "missing_dependency", "question": "q?", "context": "c", "blocksProgress": True}
        call = {"blocker": svc.log_blocker, "report_status": svc.report_status, "blocked_report": svc.file_report}
        call[tool](session, {**base, **args} if tool == "blocker" else args)
        _clean_on_disk(tmp)
        facts = blockers_facts(str(tmp), session, svc.settings)
        EVALUATOR.evaluate(facts)  # the stop check still works
        res = _decide(tmp, json.dumps({**payload("claude-code"), "cwd": str(tmp)}).encode())
        assert "error" not in res.entry, res.entry["error"]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@SETTINGS
@given(
    harness=st.sampled_from(HARNESSES),
    data=st.one_of(
        st.binary(max_size=400),
        json_value.map(lambda v: json.dumps(v).encode()),
        st.dictionaries(
            st.sampled_from(
                [
                    "session_id",
                    "cwd",
                    "transcript_path",
                    "stop_hook_active",
                    "last_assistant_message",
                    "turn_id",
                    "loop_count",
                    "hook_event_name",
                    "prompt_response",
                ]
            ),
            json_value,
            max_size=6,
        ).map(lambda d: json.dumps(d).encode()),
    ),
)
def test_hook_payloads_always_get_an_answer_and_one_log_line(harness: str, data: bytes) -> None:
    tmp = Path(tempfile.mkdtemp())
    try:
        (tmp / ".stoprule").mkdir()
        (tmp / ".stoprule" / "config.yaml").write_text(NO_GIT)
        os.chdir(tmp)
        _decide(tmp, data, harness)
        logs = list(tmp.rglob("hook.log"))
        assert len(logs) == 1 and len(logs[0].read_text(encoding="utf-8").splitlines()) == 1
        _clean_on_disk(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


CONFIGS = ["hook: {fail: closed, x: [", '{"hook": {"fail": "closed"}, "y": 1}',
           "hook:\n  fail: closed\n  budget_ms: -1\n", "- a\n- b\n", "&a [*a, *a]"]  # fmt: skip


@SETTINGS
@given(text=st.one_of(nasty_text, st.text(alphabet=string.printable, max_size=400), st.sampled_from(CONFIGS)))
def test_config_files_never_break_the_hook(text: str) -> None:
    tmp = Path(tempfile.mkdtemp())
    try:
        (tmp / ".stoprule").mkdir()
        (tmp / ".stoprule" / "config.yaml").write_text(text, encoding="utf-8", errors="surrogatepass")
        res = _decide(tmp, json.dumps({**payload("claude-code"), "cwd": str(tmp)}).encode())
        if res.entry.get("error") and re.search(r"fail['\"]?\s*:\s*['\"]?closed", text):
            assert res.decision.block  # fail closed meant: it holds
        _clean_on_disk(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@SETTINGS
@given(session_bytes=st.binary(max_size=300), facts_bytes=st.binary(max_size=300))
def test_damaged_state_files_never_turn_a_block_into_an_allow(session_bytes: bytes, facts_bytes: bytes) -> None:
    tmp = Path(tempfile.mkdtemp())
    try:
        (tmp / ".stoprule").mkdir()
        (tmp / ".stoprule" / "config.yaml").write_text(NO_GIT)
        set_facts(str(tmp / ".stoprule"), None, {"uncommittedWork": True})  # project-wide: the policy blocks
        for path, raw in (
            (session_file(str(tmp / ".stoprule"), "cc-session-1"), session_bytes),
            (facts_file(str(tmp / ".stoprule"), "cc-session-1"), facts_bytes),
        ):
            try:
                if isinstance(json.loads(raw), dict):
                    raw = b"{" + raw  # a damaged file, not a valid declaration
            except (ValueError, RecursionError):
                pass
            os.makedirs(os.path.dirname(path), exist_ok=True)
            Path(path).write_bytes(raw)
        res = _decide(tmp, json.dumps({**payload("claude-code"), "cwd": str(tmp)}).encode())
        assert res.decision.block and "error" not in res.entry, res.entry
        again = _decide(tmp, json.dumps({**payload("claude-code"), "cwd": str(tmp)}).encode())
        assert again.decision.block and "error" not in again.entry and "state_notes" not in again.entry
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@SETTINGS
@given(
    lines=st.lists(
        st.one_of(
            st.binary(max_size=200),
            json_value.map(lambda v: json.dumps(v).encode()),
            st.just(b"[" * 3000),
            st.just(b'{"type": "user", "message": {"content": "hi"}}'),
        ),
        max_size=20,
    ),
    tail=st.binary(max_size=50),
)
def test_the_transcript_reader_always_moves_past_complete_lines(lines: list[bytes], tail: bytes) -> None:
    tmp = Path(tempfile.mkdtemp())
    try:
        t = tmp / "t.jsonl"
        body = b"".join(line.replace(b"\n", b" ") + b"\n" for line in lines)
        t.write_bytes(body)
        state, _ = scan_file(str(t), "claude", None)
        assert state["offset"] <= len(body)
        pending = body[state["offset"] :]
        assert not pending or pending.lstrip().startswith(b"{")  # only an unfinished pretty object waits
        with open(t, "ab") as fh:
            fh.write(tail)
        state2, _ = scan_file(str(t), "claude", state)
        assert state2["offset"] >= state["offset"]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
