"""The stop's ``git status`` starts before the pack loads and the providers read
(``git_provider.start_status``), and so does the listing of flagged files when the session's
start recorded them; the git provider collects those very commands, and a stop that fails
before the provider runs ends them: no git is left running or unreaped."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from stoprule._util import command
from stoprule.agent.hook.providers import git_provider
from stoprule.agent.hook.runner import run_hook

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="no git")


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    (root / ".stoprule").mkdir()
    (root / ".stoprule" / "config.yaml").write_text("hook:\n  log: false\n")
    (root / "work.py").write_text("x = 1\n")  # uncommitted: the provider must see it
    monkeypatch.setenv("STOPRULE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)
    return root


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[command.Running]:
    """Every command the stop started, in order."""
    made: list[command.Running] = []
    real = command.spawn

    def spawn(argv: list[str], env: Any = None) -> command.Running:
        running = real(argv, env)
        made.append(running)
        return running

    monkeypatch.setattr(command, "spawn", spawn)
    return made


def _stop(repo: Path) -> bytes:
    return json.dumps(
        {"session_id": "s1", "cwd": str(repo), "hook_event_name": "Stop", "stop_hook_active": False}
    ).encode()


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_the_provider_collects_the_git_started_early(repo: Path, started: list[command.Running]) -> None:
    result = run_hook("claude-code", None, _stop(repo), cwd=str(repo))
    statuses = [r for r in started if "status" in r.argv]
    assert len(statuses) == 1, [r.argv for r in started]  # started once, before the providers, collected
    assert result.entry["fact"]["uncommittedWork"] is True, result.entry.get("error")
    assert git_provider._EARLY == {}
    assert all(r.pid == 0 and r.fds == [] for r in started)


def test_a_stop_that_fails_before_git_ends_the_git_it_started(
    repo: Path, started: list[command.Running], monkeypatch: pytest.MonkeyPatch
) -> None:
    pids: list[int] = []
    real_run = git_provider.start_status

    def start_status(workdir: str, session: dict[str, Any] | None = None) -> None:
        real_run(workdir, session)
        pids.extend(r.pid for r in started)

    monkeypatch.setattr(git_provider, "start_status", start_status)
    pol = repo / ".stoprule" / "policies"
    pol.mkdir()
    (pol / "broken.yaml").write_text("rules:\n  - id: x\n    when: {nosuchfield: 1}\n")  # fails to load
    result = run_hook("claude-code", None, _stop(repo), cwd=str(repo))
    assert "error" in result.entry and not result.decision.block  # fail open, as before
    assert pids and all(_gone(pid) for pid in pids)  # killed and reaped
    assert git_provider._EARLY == {}


def test_after_a_session_start_the_flagged_listing_starts_early_too(
    repo: Path, started: list[command.Running], monkeypatch: pytest.MonkeyPatch
) -> None:
    from stoprule.agent.hook import providers
    from stoprule.agent.hook.lifecycle import run_session_start

    before_providers: list[list[str]] = []
    real_gather = providers.gather

    def gather(*args: Any) -> Any:
        before_providers.extend(r.argv for r in started)
        return real_gather(*args)

    monkeypatch.setattr(providers, "gather", gather)

    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "commit.gpgsign=false"]
    subprocess.run([*git, "add", "work.py"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "work"], cwd=repo, check=True)
    start = {"session_id": "s1", "cwd": str(repo), "hook_event_name": "SessionStart", "source": "startup"}
    run_session_start("claude-code", json.dumps(start).encode())
    (repo / "work.py").write_text("x = 2\n")  # the session's work, then hidden from git status
    subprocess.run(["git", "update-index", "--assume-unchanged", "work.py"], cwd=repo, check=True)
    started.clear()
    result = run_hook("claude-code", None, _stop(repo), cwd=str(repo))
    kinds = [next(a for a in argv if a in ("status", "ls-files")) for argv in before_providers]
    assert kinds == ["status", "ls-files"], before_providers  # both started before the providers
    assert len(started) == 2, [r.argv for r in started]  # and only then: the provider collected them
    assert result.entry["fact"]["uncommittedWork"] is True, result.entry.get("error")  # the hidden file counts
    assert git_provider._EARLY == {}
    assert all(r.pid == 0 and r.fds == [] for r in started)


def test_without_a_recorded_baseline_only_git_status_starts_early(repo: Path, started: list[command.Running]) -> None:
    run_hook("claude-code", None, _stop(repo), cwd=str(repo))
    assert [r for r in started if "ls-files" in r.argv] == []


def test_the_flagged_files_are_listed_again_only_when_the_index_changed(
    repo: Path, started: list[command.Running], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The index holds the flags: while its stamp is the one the last listing was taken with, the
    stop reuses that listing (no ``git ls-files``); a flag set since rewrites the index, and the
    next stop lists and counts it."""
    from stoprule._util import files
    from stoprule.agent.hook.lifecycle import run_session_start

    monkeypatch.setattr(files, "RACY_NS", 0)  # the index was written just now: let its stamp vouch
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "commit.gpgsign=false"]
    subprocess.run([*git, "add", "work.py"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "work"], cwd=repo, check=True)
    start = {"session_id": "s1", "cwd": str(repo), "hook_event_name": "SessionStart", "source": "startup"}
    run_session_start("claude-code", json.dumps(start).encode())

    def listings() -> int:
        return sum("ls-files" in r.argv for r in started)

    started.clear()
    first = run_hook("claude-code", None, _stop(repo), cwd=str(repo))
    assert listings() == 0 and first.entry["fact"]["uncommittedWork"] is False  # the start's listing holds
    (repo / "work.py").write_text("x = 2\n")
    subprocess.run(["git", "update-index", "--assume-unchanged", "work.py"], cwd=repo, check=True)
    second = run_hook("claude-code", None, _stop(repo), cwd=str(repo))
    assert listings() == 1 and second.entry["fact"]["uncommittedWork"] is True  # listed again, and counted
    third = run_hook("claude-code", None, _stop(repo), cwd=str(repo))
    assert listings() == 1 and third.entry["fact"]["uncommittedWork"] is True  # still counted, not listed again
    assert git_provider._EARLY == {}
