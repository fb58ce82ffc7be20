"""A frozen session: every stop is decided with the config and pack as they were at session start,
whatever the agent writes meanwhile, and each change is named to the user at the next stop. And
observed beats declared: a declaration never overrides what a provider observed, and a stop a
declaration turns into review still names the work the gate saw."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from clirunner import invoke
from hookharness import FIXTURES, interpret
from stoprule.agent.hook.declare import set_facts
from tiers import first_by_default

GIT = ["git", "-c", "user.email=t@e.invalid", "-c", "user.name=t"]
PASS_RULE = (
    "rules:\n  - id: let_go\n    priority: 60000\n    when: true\n    verdict: pass\n    reason: ok\n"
    "    message: fine\n"
)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("STOPRULE_", "CLAUDE_", "GIT_"))}
    full.update(
        HOME=str(tmp_path / "home"),
        XDG_STATE_HOME=str(tmp_path / "state"),
        XDG_CONFIG_HOME=str(tmp_path / "xdg"),
        STOPRULE_CACHE_DIR=str(tmp_path / "cache"),
        CLAUDE_PROJECT_DIR=str(tmp_path / "p"),
    )
    return full


@pytest.fixture
def project(tmp_path: Path, env: dict[str, str]) -> Path:
    root = tmp_path / "p"
    root.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
    (root / "README.md").write_text("# r\n")
    assert invoke(["init", "--harness", "claude-code", "--no-mcp"], env=env, cwd=root).returncode == 0
    subprocess.run([*GIT, "add", "-A"], cwd=root, check=True)
    subprocess.run([*GIT, "commit", "-qm", "start"], cwd=root, check=True)
    return root


def _hook(
    project: Path, env: dict[str, str], cwd: Path | None = None, event: str | None = None, **changes: Any
) -> tuple[Any, dict[str, Any]]:
    data = json.loads((FIXTURES / "claude-code" / "stop.json").read_text())
    data.update(session_id="sess-f", cwd=str(cwd or project), **changes)
    extra = ["--event", event] if event else []
    r = invoke(["hook", "claude-code", *extra], json.dumps(data).encode(), env=env, cwd=cwd or project)
    entries = (project / ".stoprule" / "hook.log").read_text().splitlines()
    return interpret("claude-code", r.returncode, r.stdout.decode(), r.stderr.decode()), json.loads(entries[-1])


def _start(project: Path, env: dict[str, str]) -> None:
    _hook(project, env, event="session-start", hook_event_name="SessionStart")


def _config(text: str) -> Callable[[Path, dict[str, str]], None]:
    def change(p: Path, env: dict[str, str]) -> None:
        (p / ".stoprule" / "config.yaml").write_text(text)

    return change


def _project_pack(p: Path, env: dict[str, str]) -> None:
    shutil.copytree(Path(__file__).resolve().parents[3] / "policies", p / ".stoprule" / "policies")
    (p / ".stoprule" / "policies" / "zz_pass.yaml").write_text(PASS_RULE)


def _global_pack(p: Path, env: dict[str, str]) -> None:
    folder = Path(env["XDG_CONFIG_HOME"]) / "stoprule" / "policies"
    folder.mkdir(parents=True)
    (folder / "zz_pass.yaml").write_text(PASS_RULE)


def _nested(p: Path, env: dict[str, str]) -> None:
    (p / "sub" / ".stoprule").mkdir(parents=True)
    (p / "sub" / ".stoprule" / "config.yaml").write_text("hook:\n  mode: observe\n")


def _project_facts(p: Path, env: dict[str, str]) -> None:
    set_facts(str(p / ".stoprule"), None, {"requires_user_review": True, "review_reason": "let me go"})


def _settings(p: Path, env: dict[str, str]) -> None:
    settings = p / ".claude" / "settings.local.json"  # init's default wiring: this clone's own
    data = json.loads(settings.read_text())
    data["hooks"].pop("Stop")
    settings.write_text(json.dumps(data))


def _guard_off(p: Path, env: dict[str, str]) -> None:
    (p / ".stoprule" / "guard.off").write_text("off\n")


def _env_policy(p: Path, env: dict[str, str]) -> None:
    pack = p.parent / "passpack"
    shutil.copytree(Path(__file__).resolve().parents[3] / "policies", pack)
    (pack / "zz_pass.yaml").write_text(PASS_RULE)
    env["STOPRULE_POLICY"] = str(pack)


def _frozen_copy(p: Path, env: dict[str, str]) -> None:
    (copy,) = (p / ".stoprule" / "state" / "packs").iterdir()
    (copy / "zz_pass.yaml").write_text(PASS_RULE)


def _frozen_copy_elsewhere(p: Path, env: dict[str, str]) -> None:
    forged = p.parent / "forged"
    shutil.copytree(Path(__file__).resolve().parents[3] / "policies", forged)
    (forged / "zz_pass.yaml").write_text(PASS_RULE)
    (forged / "FROZEN").write_text("\n")
    path = p / ".stoprule" / "state" / "frozen" / "sess-f.json"
    record = json.loads(path.read_text())
    record["pack"]["copy"] = str(forged)
    path.write_text(json.dumps(record))


def _blockers_switch(p: Path, env: dict[str, str]) -> None:
    (p / ".stoprule" / "blockers").mkdir(exist_ok=True)
    (p / ".stoprule" / "blockers" / "switch.json").write_text('{"enabled": false}\n')


CHANGES: list[tuple[str, Callable[[Path, dict[str, str]], None], str]] = [
    ("observe mode", _config("hook:\n  mode: observe\n"), "config.yaml changed"),
    ("loop cap 0", _config("hook:\n  loop_cap: 0\n"), "config.yaml changed"),
    ("git provider off", _config("providers:\n  enabled: [hook, state]\n"), "config.yaml changed"),
    ("broken YAML, fail open", _config("hook: [\n"), "config.yaml changed"),
    ("a pass rule in the project pack", _project_pack, "the pack a stop selects"),
    ("a pass rule in the global pack", _global_pack, "global pack"),
    ("a .stoprule/ below the root", _nested, "sub/.stoprule"),
    ("project-wide facts", _project_facts, "project-wide declared facts"),
    ("settings.local.json without the stop hook", _settings, ".claude/settings.local.json"),
    ("the guard switched off", _guard_off, "guard was switched off"),
    ("STOPRULE_POLICY", _env_policy, "STOPRULE_POLICY"),
    ("a pass rule in the frozen pack copy", _frozen_copy, "frozen copy of the policy pack"),
    ("the frozen record pointing at another copy", _frozen_copy_elsewhere, "frozen copy of the policy pack"),
    ("blocker logging switched off by a file write", _blockers_switch, "blockers switch"),
]


@pytest.mark.parametrize(("what", "change", "named"), first_by_default(CHANGES, 6), ids=[c[0] for c in CHANGES])
def test_a_change_mid_session_leaves_the_decision_and_is_named(
    what: str, change: Callable[[Path, dict[str, str]], None], named: str, project: Path, env: dict[str, str]
) -> None:
    _start(project, env)
    (project / "notes.txt").write_text("work\n")  # the session's uncommitted work: the stop must block
    change(project, env)
    cwd = project / "sub" if (project / "sub").is_dir() else project
    out, entry = _hook(project, env, cwd=cwd)
    assert not out.stops, (what, entry.get("verdict"), entry.get("error"))
    assert "notes.txt" in (out.instruction or "")
    assert named in (out.user_sees or ""), out.user_sees
    again, _ = _hook(project, env, cwd=cwd)
    assert named not in (again.user_sees or "")  # named once


def test_a_harness_without_a_session_start_freezes_at_its_first_stop(project: Path, env: dict[str, str]) -> None:
    (project / "notes.txt").write_text("work\n")
    first, entry = _hook(project, env)
    assert not first.stops and entry["verdict"]["reason"] == "uncommitted_work"
    (project / ".stoprule" / "config.yaml").write_text("hook:\n  mode: observe\n")
    second, _ = _hook(project, env)
    assert not second.stops and "config.yaml changed" in (second.user_sees or "")


def test_a_declared_fact_never_overrides_an_observation(project: Path, env: dict[str, str]) -> None:
    _start(project, env)
    (project / "notes.txt").write_text("work\n")
    set_facts(str(project / ".stoprule"), "sess-f", {"uncommittedWork": False, "uncommittedFiles": []})
    out, entry = _hook(project, env)
    assert not out.stops and entry["fact"]["uncommittedWork"] is True
    conflict = next(c for c in entry["provenance"]["conflicts"] if c["field"] == "uncommittedWork")
    assert conflict["declared"] and conflict["kept"]["provider"] == "git"


REVIEWS: list[tuple[str, dict[str, Any], str]] = [
    ("requires_user_review", {"requires_user_review": True, "review_reason": "need a hand"}, "need a hand"),
    ("status blocked", {"status": "blocked", "task_id": "T1"}, "T1"),
    ("a hard error", {"errors": [{"type": "security", "message": "m"}]}, "security"),
    ("turn = max_turns", {"max_turns": 1, "turn": 1}, "Max turns"),
]


@pytest.mark.parametrize(("what", "declared", "reason"), REVIEWS, ids=[r[0] for r in REVIEWS])
def test_a_declaration_may_end_in_review_but_the_user_still_sees_the_work(
    what: str, declared: dict[str, Any], reason: str, project: Path, env: dict[str, str]
) -> None:
    _start(project, env)
    (project / "notes.txt").write_text("work\n")
    set_facts(str(project / ".stoprule"), "sess-f", declared)
    out, entry = _hook(project, env)
    assert out.stops and entry["verdict"]["verdict"] == "user_review", entry["verdict"]
    assert reason in out.user_sees and "the gate saw uncommitted work (notes.txt)" in out.user_sees


def test_a_closure_trailer_over_open_tasks_names_them(project: Path, env: dict[str, str]) -> None:
    _start(project, env)
    shutil.copy(FIXTURES / "claude-code" / "transcript_tasks.jsonl", project / "t.jsonl")
    subprocess.run([*GIT, "add", "-A"], cwd=project, check=True)
    subprocess.run([*GIT, "commit", "-qm", "t"], cwd=project, check=True)
    out, entry = _hook(
        project,
        env,
        transcript_path=str(project / "t.jsonl"),
        last_assistant_message="Over to you.\nstoprule: closure=waiting_user",
    )
    tasks = entry["fact"].get("availableTasks")
    assert tasks, entry["fact"]
    assert out.stops and "open tasks" in (out.user_sees or "") and str(tasks[0]) in out.user_sees


@pytest.mark.parametrize("also", ["nothing else", "its config copy too"])
def test_a_frozen_record_removed_mid_session_is_named(also: str, project: Path, env: dict[str, str]) -> None:
    _start(project, env)
    (project / "notes.txt").write_text("work\n")
    first, _ = _hook(project, env)
    assert not first.stops
    state = project / ".stoprule" / "state"
    (state / "frozen" / "sess-f.json").unlink()
    if also != "nothing else":
        (state / "config" / "sess-f.json").unlink()
    out, entry = _hook(project, env)
    assert not out.stops, entry.get("verdict")
    assert "frozen record was removed" in (out.user_sees or ""), out.user_sees
    again, _ = _hook(project, env)
    assert "frozen record was removed" not in (again.user_sees or "")  # named once


def test_a_first_freeze_names_nothing(project: Path, env: dict[str, str]) -> None:
    (project / "notes.txt").write_text("work\n")
    out, _ = _hook(project, env)
    assert not out.stops and "frozen" not in (out.user_sees or "")


def test_stamps_spare_reading_the_pack_and_an_edit_that_keeps_size_and_mtime_is_named(
    project: Path, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stop checks the pack and its frozen copy by their files' stats while the stamp frozen with
    them vouches (their bytes are not read); an edit of the copy that restores its size and mtime
    still changes its ctime, and is named."""
    from stoprule.agent.hook import frozen

    monkeypatch.setattr(frozen, "RACY_NS", 0)  # files written just now vouch at once
    _start(project, env)
    keyed: list[str] = []
    real_key = frozen.pack_key
    monkeypatch.setattr(frozen, "pack_key", lambda pack: keyed.append(pack) or real_key(pack))
    _hook(project, env)
    assert keyed == []  # the stamps vouched: no pack file read for its key
    (copy,) = (project / ".stoprule" / "state" / "packs").iterdir()
    target = copy / "continuity.yaml"
    before = target.stat()
    target.write_bytes(b"#" * before.st_size)  # same size
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))  # same mtime
    out, _ = _hook(project, env)
    assert "frozen copy of the policy pack" in (out.user_sees or ""), out.user_sees
    assert keyed  # read, and found altered


def test_a_racy_stamp_is_checked_by_content_then_taken_again(
    project: Path, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stamps taken within RACY_NS of a file's change do not vouch: the stop reads the bytes, finds
    them the same, and keeps a new stamp in the frozen record (not named: nothing changed)."""
    from stoprule.agent.hook import frozen

    _start(project, env)
    path = project / ".stoprule" / "state" / "frozen" / "sess-f.json"
    assert json.loads(path.read_text())["pack"]["copy_stamp"]["racy"] is True  # the copy was just made
    monkeypatch.setattr(frozen, "RACY_NS", 0)
    out, _ = _hook(project, env)
    assert "policy pack" not in (out.user_sees or "")
    record = json.loads(path.read_text())["pack"]
    assert record["copy_stamp"]["racy"] is False and record["stamp"]["racy"] is False
    assert frozen.RESTAMPED not in record
