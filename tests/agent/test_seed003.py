"""Seed 003 complete: the tool's categories, the question at the stop, standing instructions,
permission triage, tasks and blockers agreeing, whose work is uncommitted, and the session
an MCP write lands in."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from blocker_helpers import DEFAULT_PACK
from stoprule.agent.blockers.service import BlockerService

HARD_003 = ["permission", "architecture", "security", "destructive", "question", "other"]
SOFT_003 = ["naming", "formatting", "style", "minor-refactor"]


@pytest.fixture()
def service(tmp_path: Path) -> BlockerService:
    (tmp_path / ".stoprule").mkdir()
    return BlockerService(str(tmp_path), policy=str(DEFAULT_PACK))


def test_the_default_pack_declares_seed_003s_categories(service: BlockerService) -> None:
    hard, soft = service.categories()
    assert set(HARD_003) <= set(hard) and set(SOFT_003) <= set(soft)
    assert "timeout" in soft and "missing_dependency" in hard  # seed 000's stay
    reply = service.log_blocker(
        "s1",
        {
            "category": "permission",
            "question": "May I read /mnt/backups?",
            "context": "backup check",
            "blocksProgress": True,
        },
    )
    assert reply.ok and "hard, blocks progress" in reply.text
    soft_reply = service.log_blocker(
        "s1",
        {
            "category": "naming",
            "question": "getUserData or fetchUserData?",
            "context": "c",
            "blocksProgress": False,
            "chosenOption": "getUserData",
        },
    )
    assert soft_reply.ok and "soft" in soft_reply.text


def test_the_mcp_tools_publish_an_enum_and_a_description_for_every_field(service: BlockerService) -> None:
    pytest.importorskip("mcp")
    from stoprule.agent.blockers.mcp import build_server

    server = build_server(service)
    hard, soft = service.categories()
    for name in ("blocker", "report_status", "blocked_report", "blockers_list"):
        schema: dict[str, Any] = server._tool_manager.get_tool(name).parameters
        assert "title" not in schema
        for field, prop in schema["properties"].items():
            assert prop.get("description"), (name, field)
            assert "title" not in prop, (name, field)
    category = server._tool_manager.get_tool("blocker").parameters["properties"]["category"]
    assert category["enum"] == [*hard, *soft] and category["type"] == "string"


# ---------------------------------------------------------------- the hook, in process

import json  # noqa: E402
import os  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402

from stoprule.agent.hook.runner import run_hook  # noqa: E402

QUESTION = "I prepared the migration script. Should I go ahead and apply it to staging?"


def _project(tmp_path: Path, config: str = "") -> Path:
    """A project whose sessions are autonomous (nobody answers: questions are pushed back),
    unless ``config`` says otherwise."""
    config = config or "hook:\n  log: false\n"
    if "session:" not in config:
        config += "session:\n  mode: autonomous\n"
    (tmp_path / ".stoprule").mkdir(exist_ok=True)
    (tmp_path / ".stoprule" / "config.yaml").write_text(config)
    return tmp_path


def _env(tmp_path: Path) -> dict[str, str]:
    return {"STOPRULE_POLICY": str(DEFAULT_PACK), "STOPRULE_CACHE_DIR": str(tmp_path / ".cache"), "HOME": str(tmp_path)}


def _stop(tmp_path: Path, harness: str = "claude-code", **payload: Any) -> Any:
    data = {"session_id": "s1", "cwd": str(tmp_path), "hook_event_name": "Stop", "stop_hook_active": False,
            "transcript_path": None, **payload}  # fmt: skip
    return run_hook(harness, None, json.dumps(data).encode(), cwd=str(tmp_path), env=_env(tmp_path))


def test_a_question_at_the_stop_is_pushed_back_once(tmp_path: Path) -> None:
    _project(tmp_path)
    first = _stop(tmp_path, last_assistant_message=QUESTION)
    assert first.decision.block
    assert "Should I go ahead and apply it to staging?" in first.decision.message
    assert "blocker" in first.decision.message and "permission" in first.decision.message
    # --explain-facts shows the matched sentence, and which provider found it
    assert first.entry["provenance"]["fields"]["questionText"] == {
        "provider": "closure",
        "key": "question",
        "value": "Should I go ahead and apply it to staging?",
    }
    again = _stop(tmp_path, last_assistant_message=QUESTION, stop_hook_active=True)
    assert not again.decision.block and again.entry["verdict"]["reason"] == "ok"
    # a new user turn: asked again, pushed back again
    assert _stop(tmp_path, last_assistant_message=QUESTION).decision.block


def test_no_question_no_push_back(tmp_path: Path) -> None:
    _project(tmp_path)
    for text in (
        "The parser is written and its tests pass.",
        "Done. What changed: `a?.b` is now `a && a.b`.",
        "Why did it fail? Because the cache was stale; fixed and committed.",
    ):
        out = _stop(tmp_path, last_assistant_message=text)
        assert not out.decision.block, text


def test_a_blocker_logged_this_turn_or_a_legal_closure_ends_the_push_back(tmp_path: Path) -> None:
    svc = BlockerService(str(_project(tmp_path)), policy=str(DEFAULT_PACK))
    assert _stop(tmp_path, last_assistant_message="All done.").decision.block is False  # the turn's baseline
    reply = svc.log_blocker(
        "s1",
        {
            "category": "destructive",
            "question": "Apply the migration to staging?",
            "context": "migration",
            "blocksProgress": True,
        },
    )
    assert reply.ok
    out = _stop(tmp_path, last_assistant_message=QUESTION)
    assert not out.decision.block and out.entry["fact"]["blockersThisTurn"] == 1
    # next turn: nothing logged in it, the question is pushed back again
    assert _stop(tmp_path, last_assistant_message=QUESTION).decision.block
    closed = _stop(tmp_path, last_assistant_message=QUESTION + "\n\nstoprule: closure=waiting_user")
    assert not closed.decision.block


def test_a_declared_closure_stops_the_push_to_available_tasks(tmp_path: Path) -> None:
    _project(tmp_path)
    from stoprule.agent.hook.declare import set_facts

    set_facts(str(tmp_path / ".stoprule"), "s1", {"availableTasks": ["Run the production migration"]})
    pushed = _stop(tmp_path, last_assistant_message="Staging is migrated.")
    assert pushed.decision.block and "Run the production migration" in pushed.decision.message
    held = _stop(tmp_path, last_assistant_message="Staging is migrated.\nstoprule: closure=waiting_user")
    assert not held.decision.block


def _typed(tmp_path: Path, line: str, session: str = "s1") -> dict[str, Any] | None:
    """The user types ``line`` in the session (Claude Code's UserPromptSubmit, stoprule's hook)."""
    from stoprule.agent.hook.controls import run_prompt

    data = {"session_id": session, "cwd": str(tmp_path), "hook_event_name": "UserPromptSubmit", "prompt": line}
    return run_prompt("claude-code", json.dumps(data).encode())


def test_blockers_off_typed_in_a_session_stops_diverting_in_that_session_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``/blockers off``: the answer tells the agent to ask the user, the blocker tool logs nothing
    and says the same, and the stop lets the question stand; another session still diverts."""
    monkeypatch.setenv("STOPRULE_POLICY", str(DEFAULT_PACK))
    svc = BlockerService(str(_project(tmp_path)), policy=str(DEFAULT_PACK))
    assert _typed(tmp_path, "Please fix the build") is None  # not the command: no answer
    answer = _typed(tmp_path, "/blockers off")
    assert answer is not None
    told = answer["hookSpecificOutput"]["additionalContext"]
    assert "ask them directly" in told and "this session" in answer["systemMessage"]
    here = _stop(tmp_path, last_assistant_message=QUESTION)  # before any blocker was logged here
    assert not here.decision.block and here.entry["fact"]["blockersOff"] is True
    args = {"category": "destructive", "question": "Apply it?", "context": "c", "blocksProgress": True}
    off = svc.log_blocker("s1", args)
    assert off.data == {"status": "disabled"} and "ask the user directly" in off.text
    assert svc.log_blocker("s2", args).data.get("status") != "disabled"
    there = _stop(tmp_path, session_id="s3", last_assistant_message=QUESTION)
    assert there.decision.block and there.entry["verdict"]["reason"] == "unlogged_question"
    assert "off for this session" in (_typed(tmp_path, "/stoprule:blockers status") or {})["systemMessage"]
    assert _typed(tmp_path, "/blockers on") is not None
    assert _stop(tmp_path, session_id="s1", last_assistant_message=QUESTION).decision.block
    assert "on | off" in (_typed(tmp_path, "/blockers sideways") or {})["systemMessage"]


def test_the_trailer_and_the_question_are_read_from_the_transcript_when_the_payload_has_none(tmp_path: Path) -> None:
    _project(tmp_path)
    lines = [
        {"sessionId": "s1", "type": "user", "uuid": "u1", "parentUuid": None,
         "message": {"role": "user", "content": "Migrate staging"}},
        {"sessionId": "s1", "type": "assistant", "uuid": "u2", "parentUuid": "u1",
         "message": {"id": "m1", "role": "assistant", "content": [{"type": "text", "text": QUESTION}]}},
    ]  # fmt: skip
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("".join(json.dumps(x, separators=(",", ":")) + "\n" for x in lines))
    payload = {"sessionId": "s1", "cwd": str(tmp_path), "transcriptPath": str(transcript), "stopReason": "end_turn"}
    out = run_hook("copilot", None, json.dumps(payload).encode(), cwd=str(tmp_path), env=_env(tmp_path))
    assert out.decision.block and out.entry["verdict"]["reason"] == "unlogged_question"
    lines[1]["message"]["content"][0]["text"] = QUESTION + "\nstoprule: closure=waiting_user"  # type: ignore[index]
    transcript.write_text("".join(json.dumps(x, separators=(",", ":")) + "\n" for x in lines))
    payload["sessionId"] = "s2"
    out = run_hook("copilot", None, json.dumps(payload).encode(), cwd=str(tmp_path), env=_env(tmp_path))
    assert not out.decision.block and out.entry["fact"]["replyClosureState"] == "waiting_user"


# ---------------------------------------------------------------- session start: whose work

from stoprule.agent.hook.lifecycle import run_permission, run_session_start  # noqa: E402


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@t"})  # fmt: skip


def _start(tmp_path: Path, harness: str = "claude-code", session: str = "s1") -> Any:
    data = {"session_id": session, "sessionId": session, "cwd": str(tmp_path), "hook_event_name": "SessionStart",
            "source": "startup"}  # fmt: skip
    return run_session_start(harness, json.dumps(data).encode(), cwd=str(tmp_path), env=_env(tmp_path))


def test_only_work_changed_since_the_session_started_counts_and_is_named(tmp_path: Path) -> None:
    _project(tmp_path)
    _git(tmp_path, "init", "-q")
    (tmp_path / "app.py").write_text("v1\n")
    _git(tmp_path, "add", "app.py")
    _git(tmp_path, "commit", "-qm", "init")
    (tmp_path / "notes.md").write_text("the user's own work in progress\n")  # dirty before the session
    (tmp_path / "app.py").write_text("v2 (the user's)\n")
    _start(tmp_path)
    assert not _stop(tmp_path, last_assistant_message="Done.").decision.block  # not the agent's work
    svc = BlockerService(str(tmp_path), policy=str(DEFAULT_PACK))  # the blockers view: stoprule's own file
    assert svc.log_blocker(
        "s1", {"category": "question", "question": "Which region?", "context": "c", "blocksProgress": False}
    ).ok
    assert (tmp_path / ".stoprule" / "blockers.md").exists()
    out = _stop(tmp_path, last_assistant_message="Done.")
    assert out.entry["fact"].get("uncommittedWork") is False
    for i in range(7):
        (tmp_path / f"new{i}.py").write_text("x\n")
    (tmp_path / "app.py").write_text("v3 (the agent's)\n")  # the user's file, changed again by the agent
    out = _stop(tmp_path, last_assistant_message="Done.")
    assert out.decision.block and out.entry["verdict"]["reason"] == "uncommitted_work"
    assert "(app.py, new0.py, new1.py, new2.py, new3.py; changed files in all: 8)" in out.decision.message
    assert "notes.md" not in out.decision.message


def test_session_start_answers_each_harness_with_the_instructions(tmp_path: Path) -> None:
    _project(tmp_path)
    for harness in ("claude-code", "codex", "gemini"):
        out = _start(tmp_path, harness)
        ctx = out["hookSpecificOutput"]
        assert ctx["hookEventName"] == "SessionStart"
        text = ctx["additionalContext"]
        assert "`blocker`" in text and "permission, architecture" in text and "minor-refactor" in text
        assert "stoprule: closure=" in text and "waiting_user" in text  # the trailer is announced
    assert "blocker" in _start(tmp_path, "copilot")["additionalContext"]
    assert "blocker" in _start(tmp_path, "opencode")["system"]


def test_permission_requests_are_denied_with_the_triage_only_when_opted_in(tmp_path: Path) -> None:
    _project(tmp_path)
    req = {"session_id": "s1", "cwd": str(tmp_path), "hook_event_name": "PermissionRequest", "tool_name": "Bash",
           "tool_input": {"command": "rm -rf build"}}  # fmt: skip
    raw = json.dumps(req).encode()
    assert run_permission("claude-code", raw, cwd=str(tmp_path), env=_env(tmp_path)) is None  # off: no decision
    _project(tmp_path, "hook:\n  log: false\n  permission_triage: true\n")
    out = run_permission("claude-code", raw, cwd=str(tmp_path), env=_env(tmp_path))
    decision = out["hookSpecificOutput"]["decision"]
    assert decision["behavior"] == "deny" and "Bash" in decision["message"] and "permission" in decision["message"]
    assert run_permission("copilot", raw, cwd=str(tmp_path), env=_env(tmp_path))["behavior"] == "deny"
    assert run_permission("opencode", raw, cwd=str(tmp_path), env=_env(tmp_path))["status"] == "deny"
    for harness in ("claude-code", "codex", "copilot", "opencode", "gemini", "cursor"):  # never an allow
        assert "allow" not in json.dumps(run_permission(harness, raw, cwd=str(tmp_path), env=_env(tmp_path)))


# ---------------------------------------------------------------- MCP writes land in the session


@pytest.mark.integration
def test_report_status_lands_in_the_session_the_hook_reads_and_two_sessions_never_mix(tmp_path: Path) -> None:
    """Two harness processes (here: two shells) in one project, each starting its session and then
    calling report_status the way its MCP server would (a child of the harness, no session given)."""
    _project(tmp_path)
    env = {**os.environ, **_env(tmp_path)}
    env.pop("STOPRULE_SESSION", None)
    declare = (
        "import sys; from stoprule.agent.blockers.service import BlockerService; "
        f"s = BlockerService({str(tmp_path)!r}, policy={str(DEFAULT_PACK)!r}); "
        "r = s.report_status(None, {'status': sys.argv[1]}); print(r.data['session'])"
    )
    sessions = {"sess-a": "failed", "sess-b": "partial"}
    for session, status in sessions.items():
        start = json.dumps({"session_id": session, "cwd": str(tmp_path), "hook_event_name": "SessionStart"})
        script = (
            f"echo '{start}' | {sys.executable} -m stoprule hook claude-code --event session-start >/dev/null"
            f' && {sys.executable} -c "{declare}" {status}'
        )
        proc = subprocess.run(["sh", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip() == session  # the server knew its session without being told
    a = _stop(tmp_path, session_id="sess-a", last_assistant_message="Done.")
    b = _stop(tmp_path, session_id="sess-b", last_assistant_message="Done.")
    assert a.entry["verdict"]["reason"] == "unrecoverable_failure"  # the declared status decides the stop
    assert b.decision.block and b.entry["verdict"]["reason"] == "soft_blocker"


# ---------------------------------------------------------------- OpenCode: the generated plugin

from stoprule.agent.guard.journal import read_attempts  # noqa: E402
from stoprule.agent.hook.wiring import opencode_plugin  # noqa: E402

DRIVER = Path(__file__).resolve().parent / "opencode" / "drive_plugin.mjs"


@pytest.mark.integration
@pytest.mark.skipif(not __import__("shutil").which("node"), reason="node is not installed")
def test_the_opencode_plugin_continues_idle_sessions_with_node_and_a_fake_client(tmp_path: Path) -> None:
    _project(tmp_path, "hook:\n  log: false\n  loop_cap: 3\n  permission_triage: true\n")
    plugin = tmp_path / "stoprule.mjs"
    plugin.write_text(opencode_plugin([sys.executable, "-m", "stoprule"]))
    env = {**os.environ, **_env(tmp_path), "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.run(
        ["node", str(DRIVER), str(plugin), str(tmp_path)], env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["system"][0] == "base prompt" and "`blocker`" in out["system"][1]  # the standing instructions
    assert out["after_child_idle"] == 0  # a subagent's idle is not a stop
    assert out["stray_idle_prompts"] == 0  # session.status seen: its session.idle is no second stop
    main = [p for p in out["prompts"] if p["id"] == "main"]
    # todos from todo.updated: the next task is pushed, 3 times in a row (loop_cap), then the stop is allowed
    assert len(main) == 4 and all("Run the production migration" in p["text"] for p in main[:3])
    assert "permission" in main[3]["text"]  # the permission triage (denied, then told why)
    assert out["tool_args"] == {"question": "q", "session": "main"}
    assert out["permission"] == "deny"
    # the guard before every tool call: the agent's `stoprule blockers off` throws with the reason
    assert "stoprule blockers off" in out["guard"]["refused"] and out["guard"]["ordinary"] is None
    # OpenCode 1.18's permission request (the event): rejected with the triage message, never approved
    [reply] = out["permission_replies"]
    assert reply["path"] == {"requestID": "per_1"} and reply["body"]["reply"] == "reject"
    assert "permission" in reply["body"]["message"].lower()
    # the user's /blockers: the plugin adds the command beside the project's; refused while a tool
    # call runs (it may be the agent's), else the command's text becomes stoprule's answer
    assert out["commands"] == ["blockers", "review"]
    assert "refused" in out["blockers_while_a_tool_runs"] and "template" not in out["blockers_while_a_tool_runs"]
    assert "ask them directly" in out["blockers_typed"] and "template" not in out["blockers_typed"]
    assert json.loads((tmp_path / ".stoprule" / "state" / "blockers" / "main.json").read_text())
    # the refused one, for the stop to name (beside the guard's refusal of the agent's command)
    [attempt] = [a for a in read_attempts(str(tmp_path / ".stoprule"), "main") if a["via"] == "/blockers"]
    assert "refused: it arrived while a tool call was running" in attempt["what"]


def test_init_writes_the_opencode_plugin_and_mcp_server(tmp_path: Path) -> None:
    import io
    from types import SimpleNamespace

    from stoprule.cli import init_cmd

    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        args = SimpleNamespace(
            harness="opencode",
            user=False,
            shared=False,
            local=False,
            dry_run=False,
            command="/opt/bin/stoprule",
            no_mcp=False,
            permission_triage=False,
            no_guard=False,
            managed=False,
        )
        for _ in range(2):
            out = io.StringIO()
            assert init_cmd.run(args, None, out, io.StringIO()) == 0  # type: ignore[arg-type]
    finally:
        os.chdir(cwd)
    text = (tmp_path / ".opencode" / "plugins" / "stoprule.js").read_text()
    assert 'const COMMAND = ["/opt/bin/stoprule"]' in text and "session.status" in text
    assert "the stoprule plugin is there; unchanged" in out.getvalue()
    server = json.loads((tmp_path / "opencode.json").read_text())["mcp"]["stoprule"]
    assert server["type"] == "local" and server["command"][-1] == "mcp" and server["enabled"] is True
    assert (tmp_path / ".stoprule" / "config.yaml").exists()


# ---------------------------------------------------------------- tasks and blockers agree


@pytest.mark.integration
def test_the_blocker_tool_and_the_hook_see_the_same_tasks_and_never_send_the_agent_to_a_blocked_one(
    tmp_path: Path,
) -> None:
    _project(tmp_path)
    todos = [{"content": "Migrate staging", "status": "completed"},
             {"content": "Run the production migration", "status": "in_progress"},
             {"content": "Write the release notes", "status": "pending"}]  # fmt: skip
    lines = [
        {"sessionId": "s1", "type": "user", "uuid": "u1", "parentUuid": None,
         "message": {"role": "user", "content": "Ship it"}},
        {"sessionId": "s1", "type": "assistant", "uuid": "u2", "parentUuid": "u1",
         "message": {"id": "m1", "role": "assistant", "content": [
             {"type": "tool_use", "id": "t1", "name": "TodoWrite", "input": {"todos": todos}},
             {"type": "text", "text": "Working on the production migration."}]}},
    ]  # fmt: skip
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("".join(json.dumps(x, separators=(",", ":")) + "\n" for x in lines))
    before = _stop(tmp_path, transcript_path=str(transcript), last_assistant_message="Working on it.")
    assert "Run the production migration" in before.decision.message  # the first open task
    svc = BlockerService(str(tmp_path), policy=str(DEFAULT_PACK))
    reply = svc.log_blocker(
        "s1",
        {
            "category": "permission",
            "question": "Production credentials?",
            "context": "migration",
            "blocksProgress": True,
        },
    )
    # the tool sees the transcript's todos, and not the task its blocker is about (the one in progress)
    assert "Next available tasks:\n1. Write the release notes" in reply.text
    assert "Run the production migration" not in reply.text.split("Next available tasks:")[1]
    after = _stop(tmp_path, transcript_path=str(transcript), last_assistant_message="Blocked; logged it.")
    assert after.decision.block and after.entry["fact"]["availableTasks"] == ["Write the release notes"]
    assert "Run the production migration" not in after.decision.message


@pytest.mark.integration
def test_a_stop_in_a_project_with_blockers_imports_neither_pydantic_nor_yaml(tmp_path: Path) -> None:
    svc = BlockerService(str(_project(tmp_path)), policy=str(DEFAULT_PACK))
    assert svc.log_blocker("s1", {"category": "question", "question": "Q?", "context": "c", "blocksProgress": True}).ok
    payload = json.dumps(
        {"session_id": "s1", "cwd": str(tmp_path), "hook_event_name": "Stop", "last_assistant_message": "Done."}
    )
    code = (
        "import io, sys; from stoprule.cli.main import run; out = io.StringIO();"
        f"run(['hook', 'claude-code'], io.BytesIO({payload.encode()!r}), out, io.StringIO());"  # warm the caches
        f"run(['hook', 'claude-code'], io.BytesIO({payload.encode()!r}), out, io.StringIO());"
        "print(sorted(m for m in ('pydantic', 'yaml') if m in sys.modules))"
    )
    env = {**os.environ, **_env(tmp_path)}
    first = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    warm = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert warm.stdout.strip().splitlines()[-1] == "[]", warm.stdout + warm.stderr


# ---------------------------------------------------------------- false positives, measured

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def _assistant_texts() -> list[str]:
    """Every assistant text of the hook fixtures (payload messages and transcript lines)."""
    out: list[str] = []

    def walk(x: Any, assistant: bool) -> None:
        if isinstance(x, dict):
            role = x.get("role") or x.get("type")
            mine = assistant or role in ("assistant", "gemini")
            for k, v in x.items():
                said = k in ("last_assistant_message", "prompt_response") or (mine and k in ("text", "content"))
                if said and isinstance(v, str):
                    out.append(v)
                else:
                    walk(v, mine)
        elif isinstance(x, list):
            for y in x:
                walk(y, assistant)

    for path in sorted((FIXTURES / "hooks").glob("*/*.json*")):
        for line in path.read_text().splitlines() if path.suffix == ".jsonl" else [path.read_text()]:
            try:
                walk(json.loads(line), False)
            except ValueError:
                continue
    return out


def test_question_patterns_measured_on_labelled_endings_and_the_fixture_transcripts() -> None:
    from stoprule.agent.hook.pack_data import pack_data
    from stoprule.agent.hook.providers.closure_provider import find_question

    spec = pack_data(str(DEFAULT_PACK))["question"]
    rows = [json.loads(x) for x in (FIXTURES / "questions" / "endings.jsonl").read_text().splitlines()]
    # a fixture text closing with a trailer hands over to the user on purpose: it may ask
    handover = [t for t in _assistant_texts() if "stoprule: closure=" in t]
    asks = [r["text"] for r in rows if r["asks"]]
    plain = [r["text"] for r in rows if not r["asks"]] + [t for t in _assistant_texts() if t not in handover]
    false_positives = [t for t in plain if find_question(t, spec)]
    missed = [t for t in asks if not find_question(t, spec)]
    assert len(plain) >= 40 and len(asks) >= 29
    assert false_positives == [] and missed == []
