"""``sessionMode``: detected from what the harness says, overridden by config and by the user's
switch, never by the agent's declaration; in an interactive session the default pack does not
push back a question, the standing instructions do not say "nobody will answer", and
permission triage stays off."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from blocker_helpers import DEFAULT_PACK
from stoprule.agent.hook.declare import set_facts
from stoprule.agent.hook.lifecycle import run_permission, run_session_start
from stoprule.agent.hook.mode import resolve
from stoprule.agent.hook.runner import run_hook

QUESTION = "The migration is ready. Should I apply it to staging?"


@pytest.mark.parametrize(
    ("harness", "raw", "env", "setting", "scan", "mode", "source"),
    [
        ("claude-code", {}, {"CLAUDE_CODE_ENTRYPOINT": "sdk-cli"}, "auto", None, "autonomous", "ENTRYPOINT=sdk-cli"),
        ("claude-code", {}, {"CLAUDE_CODE_ENTRYPOINT": "cli"}, None, None, "interactive", "ENTRYPOINT=cli"),
        (
            "claude-code",
            {},
            {"CLAUDE_CODE_SESSION_ATTENDED": "0", "CLAUDE_CODE_ENTRYPOINT": "cli"},
            None,
            None,
            "autonomous",
            "ATTENDED=0",
        ),
        ("claude-code", {"permission_mode": "bypassPermissions"}, {}, None, None, "autonomous", "bypassPermissions"),
        ("claude-code", {"permission_mode": "default"}, {}, None, None, "interactive", "says nothing"),
        ("codex", {}, {}, None, {"mode_signal": ["autonomous", "source=exec"]}, "autonomous", "source=exec"),
        ("opencode", {"session_mode": "autonomous"}, {}, None, None, "autonomous", "OpenCode plugin"),
        ("gemini", {}, {}, None, None, "interactive", "says nothing"),
        # config beats the harness; the user's switch beats config
        ("claude-code", {}, {"CLAUDE_CODE_ENTRYPOINT": "sdk-cli"}, "interactive", None, "interactive", "config"),
        ("codex", {}, {}, "autonomous", {"mode_switch": "interactive"}, "interactive", "switch"),
    ],
)
def test_the_mode_and_where_it_came_from(
    harness: str, raw: dict[str, Any], env: dict[str, str], setting: str | None, scan: Any, mode: str, source: str
) -> None:
    got, why = resolve(harness, raw, env, setting, scan)
    assert got == mode and source in why


def _project(tmp_path: Path, mode: str | None = None) -> Path:
    (tmp_path / ".stoprule").mkdir(exist_ok=True)
    config = "hook:\n  log: false\n  permission_triage: true\n" + (f"session:\n  mode: {mode}\n" if mode else "")
    (tmp_path / ".stoprule" / "config.yaml").write_text(config)
    return tmp_path


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {
        "STOPRULE_POLICY": str(DEFAULT_PACK),
        "STOPRULE_CACHE_DIR": str(tmp_path / ".cache"),
        "HOME": str(tmp_path),
        **extra,
    }


def _stop(tmp_path: Path, env: dict[str, str], **payload: Any) -> Any:
    data = {"session_id": "s1", "cwd": str(tmp_path), "hook_event_name": "Stop", "stop_hook_active": False,
            "transcript_path": None, "last_assistant_message": QUESTION, **payload}  # fmt: skip
    return run_hook("claude-code", None, json.dumps(data).encode(), cwd=str(tmp_path), env=env)


def test_the_same_question_is_pushed_back_only_when_the_session_is_autonomous(tmp_path: Path) -> None:
    _project(tmp_path)
    headless = _stop(tmp_path, _env(tmp_path, CLAUDE_CODE_ENTRYPOINT="sdk-cli"))
    assert headless.decision.block and headless.entry["verdict"]["reason"] == "unlogged_question"
    assert headless.entry["fact"]["sessionMode"] == "autonomous"
    assert headless.entry["provenance"]["fields"]["sessionMode"]["source"] == "CLAUDE_CODE_ENTRYPOINT=sdk-cli"
    attended = _stop(tmp_path, _env(tmp_path, CLAUDE_CODE_ENTRYPOINT="cli"), session_id="s2")
    assert not attended.decision.block and attended.entry["fact"]["sessionMode"] == "interactive"
    assert attended.entry["fact"]["questionAsked"] is True  # still observed, just not pushed back


def test_a_declared_interactive_mode_does_not_free_an_autonomous_session(tmp_path: Path) -> None:
    project = _project(tmp_path)
    set_facts(str(project / ".stoprule"), "s1", {"sessionMode": "interactive"})
    out = _stop(tmp_path, _env(tmp_path, CLAUDE_CODE_ENTRYPOINT="sdk-cli"))
    assert out.decision.block and out.entry["fact"]["sessionMode"] == "autonomous"
    conflict = out.entry["provenance"]["conflicts"][0]
    assert conflict["field"] == "sessionMode" and conflict["ignored"]["provider"] == "state"


def test_the_users_switch_in_a_prompt_decides_this_session(tmp_path: Path) -> None:
    _project(tmp_path, "autonomous")
    transcript = tmp_path / "t.jsonl"
    lines = [
        {"type": "user", "message": {"role": "user", "content": "Fix the bug.\nstoprule: mode=interactive"}},
        {"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": QUESTION}]}},
    ]
    transcript.write_text("".join(json.dumps(x) + "\n" for x in lines))
    out = _stop(tmp_path, _env(tmp_path), transcript_path=str(transcript))
    assert not out.decision.block
    assert out.entry["provenance"]["fields"]["sessionMode"]["source"].startswith("the user's switch")


def test_interactive_sessions_get_instructions_without_nobody_will_answer_and_no_permission_triage(
    tmp_path: Path,
) -> None:
    _project(tmp_path)
    payload = json.dumps({"session_id": "s1", "cwd": str(tmp_path), "hook_event_name": "SessionStart"}).encode()
    auto = run_session_start("claude-code", payload, env=_env(tmp_path, CLAUDE_CODE_ENTRYPOINT="sdk-cli"))
    person = run_session_start("claude-code", payload, env=_env(tmp_path, CLAUDE_CODE_ENTRYPOINT="cli"))
    assert auto is not None and person is not None
    auto_text = auto["hookSpecificOutput"]["additionalContext"]
    person_text = person["hookSpecificOutput"]["additionalContext"]
    assert "nobody will answer" in auto_text and "nobody will answer" not in person_text
    assert "`blocker`" in person_text
    ask = json.dumps(
        {"session_id": "s1", "cwd": str(tmp_path), "hook_event_name": "PermissionRequest", "tool_name": "Bash"}
    ).encode()
    denied = run_permission("claude-code", ask, env=_env(tmp_path, CLAUDE_CODE_ENTRYPOINT="sdk-cli"))
    assert denied is not None and denied["hookSpecificOutput"]["decision"]["behavior"] == "deny"
    assert run_permission("claude-code", ask, env=_env(tmp_path, CLAUDE_CODE_ENTRYPOINT="cli")) is None
