"""End to end: ``stoprule hook`` run as each harness runs it, read by its rules. In process,
except where the process boundary is the point (``shell=True``: the installed console script in
the harness's shell form: each harness once, raw bytes on stdin, a fail-closed hook that still
exits 0; and a fresh interpreter where the warm hook's imports are counted)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from clirunner import invoke
from hookharness import FIXTURES, HARNESSES, payload, run_hook
from tiers import first_by_default

CODEX_SCHEMAS = Path(__file__).resolve().parents[1] / "fixtures" / "codex-hooks"  # vendored: see its SOURCE.md
TRANSCRIPT = {"claude-code": "transcript.jsonl", "codex": "transcript.jsonl", "gemini": "transcript.jsonl"}


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / ".stoprule").mkdir(parents=True)
    (root / ".stoprule" / "config.yaml").write_text("hook:\n  loop_cap: 3\n", encoding="utf-8")
    (root / "sub" / "dir").mkdir(parents=True)
    return root


@pytest.fixture
def env(tmp_path: Path, cache_dir: Path) -> dict[str, str]:
    return {
        "STOPRULE_CACHE_DIR": str(cache_dir),
        "HOME": str(tmp_path / "home"),
        "XDG_STATE_HOME": str(tmp_path / "xs"),
    }


def _stop(harness: str, project: Path, transcript: str | None = None, **changes: object) -> dict:
    data = payload(harness)
    if "cwd" in data or harness != "cursor":
        data["cwd"] = str(project / "sub" / "dir")  # hooks run from subdirectories
    if harness == "cursor":
        data["workspace_roots"] = [str(project)]
    if transcript is not None:
        dst = project / "t.jsonl"
        shutil.copy(FIXTURES / harness / transcript, dst)
        data["transcript_path"] = str(dst)
    data.update(changes)
    return data


def _validate_codex(raw: dict | None) -> None:
    if raw is None:
        return
    jsonschema = pytest.importorskip("jsonschema")
    for name in ("stop.command.output.schema.json", "subagent-stop.command.output.schema.json"):
        schema = json.loads((CODEX_SCHEMAS / name).read_text(encoding="utf-8"))
        jsonschema.validate(raw, schema)


@pytest.mark.parametrize("harness", first_by_default(HARNESSES))
def test_allow_when_nothing_is_left(harness: str, project: Path, env: dict[str, str]) -> None:
    out = run_hook(harness, _stop(harness, project), project / "sub" / "dir", env, shell=True)
    assert out.stops and out.instruction is None
    assert "pack" in out.stderr and str(project / ".stoprule") in out.stderr


@pytest.mark.parametrize("harness", first_by_default(["claude-code", "codex", "gemini"]))
def test_open_tasks_in_the_transcript_keep_the_agent_working(harness: str, project: Path, env: dict[str, str]) -> None:
    out = run_hook(harness, _stop(harness, project, TRANSCRIPT[harness]), project, env)
    assert not out.stops
    assert out.instruction is not None and "Tasks remain available" in out.instruction
    if harness == "codex":
        _validate_codex(out.raw)


@pytest.mark.parametrize("harness", ["cursor", "copilot"])
def test_declared_state_blocks_in_cursor_and_copilot(harness: str, project: Path, env: dict[str, str]) -> None:
    from stoprule.agent.hook.declare import set_facts

    set_facts(str(project / ".stoprule"), None, {"status": "partial"})
    out = run_hook(harness, _stop(harness, project), project, env)
    assert not out.stops and out.instruction is not None and "Soft blocker" in out.instruction


ROWS = [
    # (declared facts, closure trailer, transcript, stops, instruction or user text contains)
    ({"requires_user_review": True, "review_reason": "Pick a license"}, None, None, True, "Pick a license"),
    ({}, "stoprule: review=I need the production credential", None, True, "production credential"),
    ({"max_turns": 1}, None, "transcript.jsonl", True, "Human intervention"),
    ({"errors": [{"type": "missing_dependency"}]}, None, None, True, "missing_dependency"),
    ({"status": "blocked"}, None, None, True, "review"),
    ({"sameApprovedPlan": True, "planId": "p-7"}, None, "transcript.jsonl", False, "Auto-dispatch the next task"),
    ({"status": "failed"}, None, None, True, "failed"),
    ({"status": "partial"}, None, None, False, "Soft blocker"),
    ({}, None, "transcript.jsonl", False, "Tasks remain available (Write tests)"),
    ({}, "stoprule: closure=waiting_user", None, True, None),
]


@pytest.mark.parametrize(("declared", "trailer", "transcript", "stops", "says"), ROWS)
def test_default_pack_rows_from_providers(
    declared: dict,
    trailer: str | None,
    transcript: str | None,
    stops: bool,
    says: str | None,
    project: Path,
    env: dict[str, str],
) -> None:
    from stoprule.agent.hook.declare import set_facts

    if declared:
        set_facts(str(project / ".stoprule"), "cc-session-1", declared)
    data = _stop("claude-code", project, transcript)
    if trailer:
        data["last_assistant_message"] = f"Done for now.\n\n{trailer}\n"
    out = run_hook("claude-code", data, project, env)
    assert out.stops is stops, out
    if says is not None:
        assert says in ((out.instruction or "") + (out.user_sees or "")), out


def test_uncommitted_work_from_git(project: Path, env: dict[str, str]) -> None:
    if shutil.which("git") is None:
        pytest.skip("no git")
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    (project / ".stoprule" / "state").mkdir()  # the hook's own files never count as work
    out = run_hook("codex", _stop("codex", project), project, env)
    assert out.stops
    (project / "new.py").write_text("x = 1\n")
    out = run_hook("codex", _stop("codex", project, turn_id="turn-2"), project, env)
    assert not out.stops and out.instruction and "Uncommitted work" in out.instruction
    _validate_codex(out.raw)


# Gemini's flag rule: test_hooks.py
@pytest.mark.parametrize("harness", first_by_default(["claude-code", "codex", "cursor"]))
def test_an_agent_that_never_complies_is_let_go_after_the_cap(harness: str, project: Path, env: dict) -> None:
    """The agent answers every block by trying to stop again; after 3 blocks the stop is allowed."""
    from stoprule.agent.hook.declare import set_facts

    set_facts(str(project / ".stoprule"), None, {"status": "partial"})
    answers = []
    for attempt in range(5):
        changes: dict = {}
        if harness == "cursor":
            changes["loop_count"] = min(attempt, 2)  # Cursor counts its own follow-ups
        elif attempt:
            changes["stop_hook_active"] = True
        out = run_hook(harness, _stop(harness, project, **changes), project, env)
        answers.append(out)
        if harness == "codex":
            _validate_codex(out.raw)
        if out.stops:
            break
    assert [a.stops for a in answers] == [False, False, False, True]
    if harness != "cursor":  # Cursor's stop hook has no user channel (the log says it)
        assert "loop cap 3" in (answers[-1].user_sees or "")
    log = (project / ".stoprule" / "hook.log").read_text().splitlines()
    assert json.loads(log[-1])["loop"]["capped"] is True


@pytest.mark.parametrize("harness", first_by_default(HARNESSES))
def test_garbage_stdin_fails_open_without_a_traceback(harness: str, project: Path, env: dict[str, str]) -> None:
    out = run_hook(harness, b"\x00not json{{", project, env, shell=True)
    assert out.stops and "Traceback" not in out.stdout + out.stderr


def test_fail_closed_blocks_with_the_fixed_instruction_and_still_ends(project: Path, env: dict[str, str]) -> None:
    (project / ".stoprule" / "config.yaml").write_text("hook:\n  fail: closed\n  loop_cap: 1\n")
    pol = project / ".stoprule" / "policies"
    pol.mkdir()
    (pol / "broken.yaml").write_text("rules: [this is: not a pack\n")
    first = run_hook("codex", _stop("codex", project), project, env, shell=True)
    assert not first.stops and first.instruction and "could not decide" in first.instruction
    _validate_codex(first.raw)
    second = run_hook("codex", _stop("codex", project, stop_hook_active=True), project, env, shell=True)
    assert second.stops and "loop cap 1" in (second.user_sees or "")


@pytest.mark.parametrize("harness", ["claude-code", "gemini"])
def test_a_pack_that_does_not_compile_fails_open(harness: str, project: Path, env: dict[str, str]) -> None:
    pol = project / ".stoprule" / "policies"
    pol.mkdir()
    (pol / "broken.yaml").write_text("rules:\n  - id: x\n    when: {nosuchfield: 1}\n")
    out = run_hook(harness, _stop(harness, project), project, env)
    assert out.stops and "fail open" in (out.user_sees or "")
    assert "Traceback" not in out.stdout + out.stderr


def test_unreadable_transcript_is_a_note_not_a_failure(project: Path, env: dict[str, str]) -> None:
    bad = project / "t.jsonl"
    bad.write_bytes(b'\xff\xfe garbage\n{"type": 3}\n')
    bad.chmod(0)
    data = _stop("claude-code", project, transcript_path=str(bad))
    out = run_hook("claude-code", data, project, env, extra=("--explain-facts",))
    assert out.stops and out.user_sees is None
    assert '"transcript"' in out.stderr  # the note, in the --explain-facts provenance on stderr


def test_observe_mode_records_but_never_blocks(project: Path, env: dict[str, str]) -> None:
    (project / ".stoprule" / "config.yaml").write_text("hook:\n  mode: observe\n  ledger: true\n")
    out = run_hook("claude-code", _stop("claude-code", project, "transcript.jsonl"), project, env)
    assert out.stops and out.instruction is None
    entry = json.loads((project / ".stoprule" / "hook.log").read_text().splitlines()[-1])
    assert entry["would"] == "block" and entry["verdict"]["reason"] == "available_tasks"
    assert entry.get("ledger_journal"), entry  # recorded: journaled, folded in when the ledger is next opened


def test_a_warm_hook_imports_neither_pydantic_nor_yaml(project: Path, env: dict[str, str]) -> None:
    (project / ".stoprule" / "config.yaml").write_text("hook:\n  loop_cap: 4\nproviders:\n  timeout_ms: 900\n")
    run_hook("claude-code", _stop("claude-code", project), project, env)  # fills the caches
    code = (
        "import io, json, sys; from stoprule.cli.main import run; out = io.StringIO();"
        f"run(['hook', 'claude-code'], io.BytesIO({json.dumps(_stop('claude-code', project)).encode()!r}), out,"
        " io.StringIO()); print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('pydantic', 'yaml'))))"
    )
    full = {**{k: v for k, v in os.environ.items() if not k.startswith("STOPRULE_")}, **env}
    p = subprocess.run([sys.executable, "-c", code], cwd=project, env=full, capture_output=True, text=True, check=True)
    assert json.loads(p.stdout.splitlines()[-1]) == []


@pytest.mark.integration
def test_a_warm_hook_in_an_init_project_imports_only_what_a_stop_needs(tmp_path: Path, env: dict[str, str]) -> None:
    """A project as ``stoprule init`` leaves it (ledger on, every provider) in a git repository:
    a warm stop records the decision (in the ledger's journal) and reads git, but imports nothing
    it does not need (the hook's cold start: no typing, argparse, subprocess, OpenSSL, SQLite,
    ledger verification, YAML)."""
    if shutil.which("git") is None:
        pytest.skip("no git")
    root = tmp_path / "wired"
    root.mkdir()
    full = {**{k: v for k, v in os.environ.items() if not k.startswith("STOPRULE_")}, **env}
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    assert invoke(["init", "--harness", "claude-code"], cwd=root, env=full).returncode == 0
    stop = _stop("claude-code", root, "transcript.jsonl")
    run_hook("claude-code", stop, root, env)  # fills the caches
    code = (
        "import io, json, sys; from stoprule.cli.main import main;"
        f"sys.stdin = io.TextIOWrapper(io.BytesIO({json.dumps(stop).encode()!r}));"
        "code = main(['hook', 'claude-code']); sys.stderr.write(json.dumps([code, sorted(sys.modules)]))"
    )
    p = subprocess.run([sys.executable, "-c", code], cwd=root, env=full, capture_output=True, text=True, check=True)
    code_, modules = json.loads(p.stderr.splitlines()[-1])
    out = json.loads(p.stdout)  # the transcript's open task continues the session
    assert code_ == 0 and out["hookSpecificOutput"]["additionalContext"], out
    assert {"stoprule.ledger.journal", "stoprule.agent.hook.providers.git_provider"} <= set(modules)
    log = [json.loads(line) for line in (root / ".stoprule" / "hook.log").read_text().splitlines()]
    assert log[-1]["ledger_journal"] and "git" in log[-1]["provenance"]["timings_ms"]
    assert "uncommittedWork" in log[-1]["fact"]
    unneeded = {"typing", "argparse", "gettext", "locale", "subprocess", "selectors", "hashlib", "hmac", "_hashlib",
                "dataclasses", "pathlib", "yaml", "pydantic", "sqlite3", "pickle", "stoprule.ledger.store",
                "stoprule.ledger.verification", "stoprule.ledger.runcheck",
                "stoprule.language.compiler", "stoprule.config.loader", "stoprule.config.sections"}  # fmt: skip
    assert not unneeded & set(modules), sorted(unneeded & set(modules))


@pytest.mark.integration
def test_doctor_checks_the_opencode_plugin(project: Path, env: dict[str, str]) -> None:
    """OpenCode has no hook entry: doctor reads the generated plugin's command, runs a synthetic
    ``session.idle`` through it, and fails a plugin that is not the one this stoprule generates."""
    full = {**{k: v for k, v in os.environ.items() if not k.startswith("STOPRULE_")}, **env, "HOME": str(project)}
    full["PATH"] = str(Path(sys.executable).parent) + os.pathsep + full.get("PATH", "")
    assert invoke(["init", "--harness", "opencode", "--no-mcp"], cwd=project, env=full).returncode == 0
    p = invoke(["doctor"], cwd=project, env=full)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "ok   opencode: synthetic stop: allow: {}" in p.stdout
    assert "no harness has stoprule's hook" not in p.stdout
    plugin = project / ".opencode" / "plugins" / "stoprule.js"
    plugin.write_text(plugin.read_text().replace("LOOP_CAP = 8", "LOOP_CAP = 80"))  # edited by hand
    p = invoke(["doctor"], cwd=project, env=full)
    assert p.returncode == 1
    assert "FAIL opencode: plugin differs from the one this stoprule generates" in p.stdout
    plugin.write_text("export const X = 1\n")
    p = invoke(["doctor"], cwd=project, env=full)
    assert p.returncode == 1 and "is not the plugin stoprule generates" in p.stdout
