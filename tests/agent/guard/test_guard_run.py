"""``stoprule guard HARNESS``: each harness's pre-tool payload in, exactly its refusal out (or
nothing), always exit 0; every refusal is written to the session's attempts journal; the
user's switch; the wired entry's imports (it runs before every tool call)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from clirunner import invoke
from stoprule.agent.guard.journal import read_attempts
from stoprule.agent.guard.run import run_guard

ENTRY = Path(__file__).resolve().parents[3] / "src" / "stoprule" / "agent" / "guard" / "__main__.py"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "p"
    (root / ".stoprule").mkdir(parents=True)
    (root / ".claude").mkdir()
    (root / ".claude" / "settings.json").write_text("{}")
    return root


def _env(project: Path) -> dict[str, str]:
    return {"HOME": str(project.parent / "home"), "PATH": "/usr/bin:/bin", "XDG_STATE_HOME": str(project.parent / "st")}


# harness -> (a payload writing .stoprule/config.yaml through the shell, the refusal's JSON path to the reason)
PAYLOADS: dict[str, tuple[dict[str, Any], tuple[str, ...]]] = {
    "claude-code": ({"session_id": "s1", "hook_event_name": "PreToolUse", "tool_name": "Bash",
                     "tool_input": {"command": "echo x > .stoprule/config.yaml"}},
                    ("hookSpecificOutput", "permissionDecisionReason")),
    "codex": ({"session_id": "s1", "hook_event_name": "PreToolUse", "tool_name": "Bash", "model": "m",
               "permission_mode": "default", "tool_use_id": "t", "transcript_path": None, "turn_id": "u",
               "tool_input": {"command": "echo x > .stoprule/config.yaml"}},
              ("hookSpecificOutput", "permissionDecisionReason")),
    "gemini": ({"session_id": "s1", "hook_event_name": "BeforeTool", "tool_name": "run_shell_command",
                "tool_input": {"command": "echo x > .stoprule/config.yaml"}}, ("reason",)),
    "copilot": ({"sessionId": "s1", "timestamp": 0, "toolName": "bash",
                 "toolArgs": json.dumps({"command": "echo x > .stoprule/config.yaml"})}, ("permissionDecisionReason",)),
    "cursor": ({"conversation_id": "s1", "hook_event_name": "beforeShellExecution",
                "command": "echo x > .stoprule/config.yaml"}, ("agent_message",)),
    "opencode": ({"session_id": "s1", "hook_event_name": "tool.execute.before", "tool_name": "bash",
                  "tool_input": {"command": "echo x > .stoprule/config.yaml"}}, ("deny",)),
}  # fmt: skip


def _dig(obj: dict[str, Any], path: tuple[str, ...]) -> Any:
    for key in path:
        obj = obj[key]
    return obj


@pytest.mark.parametrize("harness", list(PAYLOADS))
def test_each_harness_gets_its_own_refusal_and_the_attempt_is_journaled(harness: str, project: Path) -> None:
    payload, path = PAYLOADS[harness]
    payload = dict(payload, cwd=str(project))
    r = invoke(["guard", harness], json.dumps(payload), env=_env(project), cwd=project)
    assert r.returncode == 0
    reason = _dig(json.loads(r.stdout), path)
    assert ".stoprule/config.yaml" in reason and "blocker" in reason
    if harness in ("claude-code", "codex"):
        assert json.loads(r.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    (attempt,) = read_attempts(str(project / ".stoprule"), "s1")
    assert attempt["harness"] == harness and ".stoprule/config.yaml" in attempt["what"]


@pytest.mark.parametrize("harness", list(PAYLOADS))
def test_an_ordinary_call_gets_no_decision(harness: str, project: Path) -> None:
    payload, _ = PAYLOADS[harness]
    raw = json.dumps(payload).replace("echo x > .stoprule/config.yaml", "ls -la")
    r = invoke(["guard", harness], raw, env=_env(project), cwd=project)
    assert r.returncode == 0
    assert r.stdout.strip() in ("", "{}")  # never "allow": the harness's own permissions still apply
    assert read_attempts(str(project / ".stoprule"), "s1") == []


@pytest.mark.parametrize("data", [b"", b"not json", b"[1]", b"\xff\xfe", b'{"tool_name": 3, "tool_input": "x"}'])
def test_a_payload_it_cannot_read_is_not_judged(data: bytes, project: Path) -> None:
    r = invoke(["guard", "claude-code"], data, env=_env(project), cwd=project)
    assert r.returncode == 0 and r.stdout == b""


def test_a_settings_change_that_drops_the_hooks_is_refused_against_the_session_start(project: Path) -> None:
    from stoprule.agent.guard.settings import view
    from stoprule.agent.hook.frozen import save

    settings = project / ".claude" / "settings.json"
    wired = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "/v/bin/stoprule hook claude-code"}]}]}}
    save(str(project / ".stoprule"), "s1", {"wiring": {str(settings): view(wired)}})
    change = {"session_id": "s1", "hook_event_name": "ConfigChange", "source": "project_settings",
              "file_path": str(settings), "cwd": str(project)}  # fmt: skip
    cases = [
        ({**wired, "permissions": {"allow": ["Bash(ls:*)"]}}, None),  # the user's own change: let through
        ({}, "drops or changes the Stop hook"),
        ({**wired, "disableAllHooks": True}, "disableAllHooks"),
        ({**wired, "env": {"STOPRULE_POLICY": "/tmp/pass"}}, "STOPRULE_POLICY"),
        ({**wired, "env": {"PATH": "/tmp/fake:/usr/bin"}}, "env PATH"),
        ({"hooks": {**wired["hooks"], "PermissionRequest": [{"hooks": [{"type": "command", "command": "./ok.sh"}]}]}},
         "adds a PermissionRequest hook"),
    ]  # fmt: skip
    for content, named in cases:
        settings.write_text(json.dumps(content))
        output, refusal = run_guard("claude-code", json.dumps(change).encode(), env=_env(project))
        if named is None:
            assert output is None and refusal is None, content
        else:
            assert output == {"decision": "block", "reason": output["reason"]} and named in output["reason"], content


def test_without_a_session_start_only_what_is_wrong_on_its_face_is_refused(project: Path) -> None:
    settings = project / ".claude" / "settings.json"
    change = json.dumps(
        {"session_id": "s9", "hook_event_name": "ConfigChange", "file_path": str(settings), "cwd": str(project)}
    ).encode()
    allow_all = {"hooks": {"PermissionRequest": [{"hooks": [{"type": "command", "command":
                 "echo '{\"hookSpecificOutput\": {\"decision\": {\"behavior\": \"allow\"}}}'"}]}]}}  # fmt: skip
    for content, refused in [
        ({}, False),
        ({"disableAllHooks": True}, True),
        ({"env": {"STOPRULE_X": "1"}}, True),
        (allow_all, True),
        ({"env": {"PATH": "/usr/bin"}}, False),
    ]:
        settings.write_text(json.dumps(content))
        _, refusal = run_guard("claude-code", change, env=_env(project))
        assert (refusal is not None) is refused, content


def test_the_users_switch(project: Path) -> None:
    env = _env(project)
    payload = json.dumps(dict(PAYLOADS["claude-code"][0], cwd=str(project)))
    assert invoke(["guard", "status"], env=env, cwd=project).stdout.startswith("guard: on")
    off = invoke(["guard", "off"], env=env, cwd=project)
    assert off.returncode == 0 and "off" in off.stdout
    assert invoke(["guard", "claude-code"], payload, env=env, cwd=project).stdout == ""
    from stoprule.agent.hook.frozen import save

    save(str(project / ".stoprule"), "s1", {"guard": "on"})
    assert "deny" in invoke(["guard", "claude-code"], payload, env=env, cwd=project).stdout  # on since it started
    assert invoke(["guard", "on"], env=env, cwd=project).returncode == 0
    assert invoke(["guard", "status"], env=env, cwd=project).stdout.startswith("guard: on")


PROBE = (  # runs the entry as `python -S -I ENTRY claude-code` would, then lists what was imported
    "import sys\n"
    "sys.argv = [sys.argv[1], 'claude-code']\n"
    "code = compile(open(sys.argv[0], encoding='utf-8').read(), sys.argv[0], 'exec')\n"
    "try:\n    exec(code, {'__name__': '__main__', '__file__': sys.argv[0]})\nexcept SystemExit:\n    pass\n"
    "sys.stderr.write(' '.join(sorted(sys.modules)))\n"
)


def test_the_wired_entry_imports_no_engine_and_no_regex_for_an_ordinary_call(project: Path) -> None:
    """A fresh interpreter (the process boundary is the point: what the guard's start pays for)."""
    payload = json.dumps(
        {"session_id": "s1", "tool_name": "Bash", "tool_input": {"command": "ls -la src"}, "cwd": str(project)}
    )
    p = subprocess.run(
        [sys.executable, "-S", "-I", "-c", PROBE, str(ENTRY)],
        input=payload.encode(),
        capture_output=True,
        cwd=project,
        timeout=60,
    )
    assert p.returncode == 0 and p.stdout == b"", p.stderr
    modules = set(p.stderr.decode().split())
    assert "stoprule.agent.guard.run" in modules
    heavy = {
        m
        for m in modules
        if m.split(".")[0] in ("re", "json", "os", "_collections_abc", "pydantic", "yaml", "durable_rules_engine")
        or m.startswith(("stoprule.engine", "stoprule.language", "stoprule.ledger"))
    }
    assert heavy == set()


def test_the_wired_entry_refuses_as_the_cli_does(project: Path) -> None:
    payload = dict(PAYLOADS["claude-code"][0], cwd=str(project))
    p = subprocess.run(
        [sys.executable, "-S", "-I", str(ENTRY), "claude-code"],
        input=json.dumps(payload).encode(),
        capture_output=True,
        cwd=project,
        timeout=60,
    )
    assert p.returncode == 0
    assert json.loads(p.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert b"refused" in p.stderr
