"""Antigravity CLI (``agy``): its hooks file checked as it loads it (one error drops the whole file,
silently), ``init`` wiring a named hook into ``.agents/hooks.json``, its ``Stop`` adapter, and the
plugin ``stoprule plugin antigravity`` writes (its manifest checked as Antigravity loads it).

No Antigravity binary installs from npm: the examples are the published ones, vendored in
``tests/fixtures/hooks/antigravity/`` (SOURCE.md names each source)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from clirunner import invoke
from hookharness import FIXTURES
from stoprule.agent.hook.adapters import adapter
from stoprule.agent.hook.agy_hooks import check_file, check_manifest, check_manifest_text, check_text
from stoprule.agent.hook.event import Decision
from stoprule.agent.hook.transcripts.scan import Scan, detect

AGY = FIXTURES / "antigravity"


def _stop(**changes: object) -> dict:
    data = json.loads((AGY / "stop.json").read_text(encoding="utf-8"))
    data.update(changes)
    return data


@pytest.mark.parametrize(
    ("fixture", "expected"),
    [
        ("hooks_good.json", []),
        ("hooks_named_enabled.json", []),
        ("hooks_bad_timeout.json", [(7, "shell-audit.PreToolUse[0].hooks[0].timeout", True)]),
        ("plugin_hooks_template.json", []),
        ("plugin_hooks_measured.json", []),  # a plugin's hooks file that fired on agy 1.3.1
    ],
)
def test_the_published_examples_load_or_are_dropped_as_antigravity_does(fixture: str, expected: list) -> None:
    findings = check_file(str(AGY / fixture))
    assert [(f.line, f.field, f.error) for f in findings] == expected
    assert all(f.path.endswith(fixture) for f in findings)


H = '{"h": {"Stop": [%s]}}'
G = '{"h": {"PreToolUse": [%s]}}'
CASES = [
    # (text, [(line, field, error)]): errors drop the whole file; warnings only when there is none
    ('{"h": {"Stop": []},}', [(1, "", True)]),  # trailing comma
    ('// mine\n{"h": {}}', [(1, "", True)]),  # a comment
    ('{"h": {"Stop": [{"command": "x", "timeout": NaN}]}}', [(1, "", True)]),
    ("[]", [(1, "", True)]),
    ('{"enabled": true, "h": {}}', [(1, "enabled", True)]),
    ('{"h": []}', [(1, "h", True)]),
    ('{"h": {"enabled": "yes"}}', [(1, "h.enabled", True)]),
    ('{"h": {"Stop": {}}}', [(1, "h.Stop", True)]),
    (H % '"x"', [(1, "h.Stop[0]", True)]),
    (H % '{"type": "COMMAND", "command": "x"}', [(1, "h.Stop[0].type", True)]),
    (H % '{"type": "command", "command": "x", "model": "m"}', [(1, "h.Stop[0].model", True)]),
    (H % '{"type": "prompt", "prompt": "p", "command": "x"}', [(1, "h.Stop[0].command", True)]),
    (H % '{"command": "x", "timeout": "5"}', [(1, "h.Stop[0].timeout", True)]),
    (H % '{"command": "x", "timeout": 2147483648}', [(1, "h.Stop[0].timeout", True)]),
    (H % '{"command": "x", "timeout": 5.0}', [(1, "h.Stop[0].timeout", True)]),
    (H % '{"command": "x", "timeout": -1}', []),  # a 32-bit integer: loads
    (G % '"x"', [(1, "h.PreToolUse[0]", True)]),
    (G % '{"matcher": 1, "hooks": []}', [(1, "h.PreToolUse[0].matcher", True)]),
    (G % '{"matcher": "", "hooks": {}}', [(1, "h.PreToolUse[0].hooks", True)]),
    ('{"h": {"pretooluse": [], "Stop": [{"type": "prompt"}]}}', []),  # names match case-insensitively
    ('{"h": {"SessionEnd": []}}', [(1, "h.SessionEnd", False)]),
    (H % '{"command": "x", "env": {}}', [(1, "h.Stop[0].env", False)]),
    (H % '{"command": ""}', [(1, "h.Stop[0].command", False)]),
    (G % '{"matcher": "*", "hooks": [], "name": "n"}', [(1, "h.PreToolUse[0].name", False)]),
    ('{"h": {"SessionEnd": [], "Stop": [{"command": "x", "timeout": 1.5}]}}', [(1, "h.Stop[0].timeout", True)]),
    ('{\n  "a": {"Stop": []},\n  "b": {\n    "Stop": [\n      {"type": "Prompt"}\n    ]\n  }\n}',
     [(5, "b.Stop[0].type", True)]),
]  # fmt: skip


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_every_load_error_is_named_by_line_and_field(text: str, expected: list) -> None:
    assert [(f.line, f.field, f.error) for f in check_text(text, "hooks.json")] == expected


def test_the_stop_payload_is_read_and_a_continuation_is_decision_continue() -> None:
    mod = adapter("antigravity")
    ev = mod.parse(_stop())
    assert (ev.session_id, ev.cwd, ev.turn_id, ev.flag_known) == ("agy-conv-1", "/work/proj", None, False)
    assert ev.transcript_path and ev.transcript_path.endswith("transcript.jsonl")
    assert mod.render(Decision(True, "M"), ev) == {"decision": "continue", "reason": "M"}
    assert mod.render(Decision(False, notice="R"), ev) == {}  # no user channel
    failed = mod.parse(_stop(error="quota exceeded"))
    assert mod.render(Decision(True, "M"), failed) == {}  # no continuation into a failing model call


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if not k.startswith("STOPRULE_")}
    mine = {"HOME": "home", "XDG_STATE_HOME": "xs", "STOPRULE_CACHE_DIR": "cache"}
    return {**keep, **{k: str(tmp_path / v) for k, v in mine.items()}}


def test_init_merges_a_named_hook_and_doctor_names_an_error_anywhere_in_the_file(
    tmp_path: Path, env: dict[str, str]
) -> None:
    project = tmp_path / "p"
    (project / ".agents").mkdir(parents=True)
    hooks = project / ".agents" / "hooks.json"
    theirs = {"lint": {"Stop": [{"type": "command", "command": "make lint", "timeout": 5}]}}
    hooks.write_text(json.dumps(theirs))
    p = invoke(["init", "--harness", "antigravity", "--shared"], env=env, cwd=project)
    assert p.returncode == 0, p.stderr
    wired = json.loads(hooks.read_text())
    assert wired["lint"] == theirs["lint"]
    assert wired["stoprule"] == {"Stop": [{"type": "command", "command": "stoprule hook antigravity", "timeout": 30}]}
    assert check_file(str(hooks)) == []
    again = invoke(["init", "--harness", "antigravity", "--shared"], env=env, cwd=project)
    assert "unchanged" in again.stdout and json.loads(hooks.read_text()) == wired
    # someone else's hook gets a fractional timeout: Antigravity would drop stoprule's too
    hooks.write_text(json.dumps({**wired, "lint": {"Stop": [{"command": "make lint", "timeout": 2.5}]}}, indent=2))
    p = invoke(["doctor"], env=env, cwd=project)
    assert p.returncode == 1
    assert f"FAIL antigravity: {hooks}:" in p.stdout and "lint.Stop[0].timeout" in p.stdout
    assert "synthetic stop" not in p.stdout  # nothing in the file would run


def _git_project(tmp_path: Path) -> Path:
    """A git repository with stoprule's loop cap at 3 (skips the test where git is missing)."""
    if shutil.which("git") is None:
        pytest.skip("no git")
    project = tmp_path / "p"
    (project / ".stoprule").mkdir(parents=True)
    (project / ".stoprule" / "config.yaml").write_text("hook:\n  loop_cap: 3\n", encoding="utf-8")
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    return project


def test_a_stop_over_new_work_continues_until_stoprules_own_cap(tmp_path: Path, env: dict[str, str]) -> None:
    project = _git_project(tmp_path)
    (project / "mine.txt").write_text("the user's work in progress\n")
    stop = json.dumps(_stop(workspacePaths=[str(project)]))
    first = invoke(["hook", "antigravity"], input=stop, env=env, cwd=project)
    assert json.loads(first.stdout) == {}  # the first stop's dirty files are the baseline: not the agent's
    (project / "new.py").write_text("x = 1\n")
    answers = [json.loads(invoke(["hook", "antigravity"], input=stop, env=env, cwd=project).stdout) for _ in range(4)]
    assert [a.get("decision") for a in answers] == ["continue", "continue", "continue", None]
    assert "Uncommitted work" in answers[0]["reason"] and "mine.txt" not in answers[0]["reason"]


@pytest.mark.parametrize(
    ("fixture", "expected"),
    [("plugin_good.json", []), ("plugin_template.json", []), ("plugin_bad_name_type.json", [(2, "name", True)])],
)
def test_the_published_plugin_manifests_load_or_are_refused_as_antigravity_does(fixture: str, expected: list) -> None:
    assert [(f.line, f.field, f.error) for f in check_manifest(str(AGY / fixture))] == expected


MANIFESTS = [
    # (text, [(line, field, error)]): one error and the folder is no plugin; warnings only without one
    ('{"name": "a", "name": "b"}', [(1, "name", True)]),  # protobuf JSON refuses a repeated key
    ('\ufeff{"name": "a"}', [(1, "", True)]),
    ('{"name": "a",}', [(1, "", True)]),
    ('["a"]', [(1, "", True)]),
    ('{"name": "a", "disabled": ""}', [(1, "disabled", True)]),
    ('{"name": "a",\n "description": 7}', [(2, "description", True)]),
    ('{"name": "a", "logo": null, "disabled": true}', []),  # null reads as absent; disabled is a switch
    ('{"description": "d"}', [(1, "name", False)]),  # the folder's name stands in; install refuses it
    ('{"name": ".hidden"}', [(1, "name", False)]),
    ('{"name": "Bad Name"}', [(1, "name", False)]),
    ('{"name": "a", "version": "1.0.0"}', [(1, "version", False)]),
    ('{"name": "Bad Name", "version": "1", "disabled": 0}', [(1, "disabled", True)]),
]  # fmt: skip


@pytest.mark.parametrize(("text", "expected"), MANIFESTS)
def test_every_manifest_error_is_named_by_line_and_field(text: str, expected: list) -> None:
    assert [(f.line, f.field, f.error) for f in check_manifest_text(text, "plugin.json")] == expected


def test_a_folder_without_a_manifest_is_no_plugin(tmp_path: Path) -> None:
    (finding,) = check_manifest(str(tmp_path / "plugin.json"))
    assert finding.error and "no plugin.json" in finding.message


def _plugin(tmp_path: Path, env: dict[str, str], out: Path) -> dict:
    p = invoke(["plugin", "antigravity", "--out", str(out)], env=env, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert f"agy plugin install {out}" in p.stdout and ".agents/plugins/stoprule" in p.stdout
    return json.loads((out / "hooks.json").read_text())


def test_the_plugin_is_inits_stop_hook_in_a_folder_antigravity_loads(tmp_path: Path, env: dict[str, str]) -> None:
    """``plugin.json`` and ``hooks.json`` at the root (a ``hooks/`` folder is not read), the manifest
    with only its schema's keys, init's ``Stop`` handler running the plugin's own script by a path
    relative to the plugin's folder (no plugin-root variable), nothing in ``bin/`` (on the agent's
    PATH since agy 1.3.2), no MCP server (started outside the project) and no command."""
    out = tmp_path / "agy"
    hooks = _plugin(tmp_path, env, out)
    files = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert files == ["hooks.json", "libexec/stoprule", "plugin.json"]
    assert check_manifest(str(out / "plugin.json")) == [] and check_file(str(out / "hooks.json")) == []
    assert set(json.loads((out / "plugin.json").read_text())) == {"name", "description"}
    handler = {"type": "command", "command": "sh ./libexec/stoprule hook antigravity", "timeout": 30}
    assert hooks == {"stoprule": {"Stop": [handler]}}


def test_the_plugins_hook_runs_from_its_folder_and_decides_for_the_workspace(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """As Antigravity runs it: ``sh`` in the plugin's folder (a copy in the project's
    ``.agents/plugins/``); the project is the payload's workspace, and nothing lands in the plugin."""
    project = _git_project(tmp_path)
    folder = project / ".agents" / "plugins" / "stoprule"
    command = _plugin(tmp_path, env, folder)["stoprule"]["Stop"][0]["command"]
    (project / ".git" / "info" / "exclude").write_text(".agents/plugins/stoprule/\n")
    stop = json.dumps(_stop(workspacePaths=[str(project)]))

    def run() -> dict:
        argv = ["sh", "-c", command]
        p = subprocess.run(argv, input=stop, capture_output=True, text=True, cwd=folder, env=env, timeout=60)
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout)

    assert run() == {}
    (project / "new.py").write_text("x = 1\n")
    answer = run()
    assert answer["decision"] == "continue" and "Uncommitted work" in answer["reason"]
    assert (project / ".stoprule" / "hook.log").read_text().count("\n") == 2
    assert sorted(p.name for p in folder.iterdir()) == ["hooks.json", "libexec", "plugin.json"]


def test_doctor_checks_the_plugin_whole_and_runs_its_stop_from_its_folder(tmp_path: Path, env: dict[str, str]) -> None:
    project = tmp_path / "p"
    (project / ".stoprule").mkdir(parents=True)
    folder = project / ".agents" / "plugins" / "stoprule"
    _plugin(tmp_path, env, folder)
    p = invoke(["doctor"], env=env, cwd=project)
    assert f"ok   antigravity: Stop hook in the plugin {folder}: sh ./libexec/stoprule hook antigravity" in p.stdout
    assert "ok   antigravity: synthetic stop: allow" in p.stdout, p.stdout
    # init's wiring beside the plugin: every stop would run twice
    assert invoke(["init", "--harness", "antigravity", "--no-mcp"], env=env, cwd=project).returncode == 0
    p = invoke(["doctor"], env=env, cwd=project)
    assert p.returncode == 1 and "every stop runs it 2 times" in p.stdout
    (project / ".agents" / "hooks.json").unlink()
    # a manifest Antigravity refuses: the folder is no plugin, none of its hooks run
    (folder / "plugin.json").write_text('{"name": "stoprule", "name": "stoprule"}')
    p = invoke(["doctor"], env=env, cwd=project)
    assert p.returncode == 1 and f"FAIL antigravity: {folder / 'plugin.json'}:1: name: a key written twice" in p.stdout
    assert f"FAIL antigravity: {folder} is not loaded as a plugin" in p.stdout
    assert "synthetic stop" not in p.stdout


# ------------------------------------------------------------------ the transcript

SESSION = Path(__file__).resolve().parent.parent / "fixtures" / "sessions" / "transcripts"
REAL = SESSION / "eyetracker_antigravity_cli.jsonl"  # a real agy CLI session (tests/fixtures/sessions/SOURCES.md)


def _scan(lines: list[bytes]) -> Scan:
    scan = Scan("antigravity")
    for line in lines:
        if line.strip():
            scan.feed(line)
    return scan


def test_a_real_transcript_is_read_turn_by_turn_with_its_failed_commands() -> None:
    """Turns are the user's ``USER_INPUT`` steps; a command that "failed with exit code" 1 (run
    directly, or in the background: its ``SYSTEM_MESSAGE``) and a refused tool call (``ERROR_MESSAGE``)
    are the turn's failed tools; the last message is the last ``PLANNER_RESPONSE`` with text."""
    lines = REAL.read_bytes().split(b"\n")
    assert detect(str(REAL)) == "antigravity" == detect(str(REAL), "antigravity")
    second = _scan(lines[:47])  # the second turn, up to its last reply
    assert second.turns == 2 and not second.skipped
    assert [f["tool"] for f in second.failed] == ["run_command", "error_message", "run_command", "run_command"]
    assert second.failed[0]["error"].startswith("The command failed with exit code: 1")
    assert second.last_text and second.last_text.startswith("The script ran, but macOS security blocked")
    whole = _scan(lines)
    assert whole.turns == 5 and whole.failed == []


def test_the_ide_writes_the_same_steps_and_ends_a_command_in_its_own_words() -> None:
    """Antigravity 2.0's transcript (a public session, September 2026): a prompt the model never
    answered is still a turn, steps come out of order, a command's result is a ``GENERIC`` step
    ending "exited with code 0." (the real one) or, with the code changed, a failed command."""
    lines = (SESSION / "tocsem3_antigravity_ide.jsonl").read_bytes().split(b"\n")
    scan = _scan(lines)
    assert (scan.turns, scan.failed, scan.skipped) == (2, [], {})
    assert scan.last_text == "All files confirmed. Now let me read them all in parallel:"
    ran = next(line for line in lines if b"The command exited with code 0." in line)
    failed = _scan([ran.replace(b"exited with code 0.", b"exited with code 2.")])
    assert [(f["tool"], f["error"][:30]) for f in failed.failed] == [("run_command", "The command exited with code 2")]
    assert _scan([ran.replace(b"code 0.", b"code 0.\\nOutput:\\nexit code 1")]).failed == []  # output, not its end


def test_only_the_users_own_input_is_a_turn_and_its_request_is_read_for_a_mode_switch() -> None:
    def step(source: str, words: str) -> bytes:
        content = f"<USER_REQUEST>\n{words}\n</USER_REQUEST>\n<ADDITIONAL_METADATA>\nstoprule: mode=interactive\n"
        return json.dumps({"step_index": 0, "source": source, "type": "USER_INPUT", "content": content}).encode()

    scan = _scan([step("USER_EXPLICIT", "go on\nstoprule: mode=autonomous"), step("SYSTEM_SDK", "injected")])
    assert scan.turns == 1 and scan.mode_switch == "autonomous"  # the metadata Antigravity adds is not the user's


def test_the_stop_reads_the_last_message_and_turns_from_antigravitys_transcript(tmp_path: Path) -> None:
    """agy's ``Stop`` payload carries no last message: the transcript gives it (here a request to
    try again, a question), and the turn count."""
    from stoprule.agent.hook.runner import run_hook

    transcript = tmp_path / "transcript.jsonl"
    transcript.write_bytes(b"\n".join(REAL.read_bytes().split(b"\n")[:53]) + b"\n")  # up to the third reply
    (tmp_path / ".stoprule").mkdir()
    stop = _stop(transcriptPath=str(transcript), workspacePaths=[str(tmp_path)])
    env = {"STOPRULE_NO_CACHE": "1", "STOPRULE_STATE_DIR": str(tmp_path / "u")}
    entry = run_hook("antigravity", None, json.dumps(stop).encode(), cwd=str(tmp_path), env=env).entry
    assert entry["fact"]["turn"] == 3 and entry["fact"]["questionAsked"] is True, entry["provenance"]
