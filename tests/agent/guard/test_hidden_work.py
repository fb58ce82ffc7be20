""" "Could not observe" is not "clean": git runs without the file-system monitor and the untracked
cache; work the session hid from ``git status`` (ignored by an ignore file it added or changed,
flagged assume-unchanged or skip-worktree, stashed) counts as its work; build output a committed
``.gitignore`` already ignored does not; a git that fails takes the fail path."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from clirunner import invoke
from hookharness import payload, run_hook
from tiers import first_by_default

GIT = ["git", "-c", "user.email=t@e.invalid", "-c", "user.name=t"]


def _git(root: Path, *args: str) -> None:
    subprocess.run([*GIT, *args], cwd=root, check=True, capture_output=True)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("STOPRULE_", "CLAUDE_", "GIT_"))}
    full.update(
        HOME=str(tmp_path / "home"),
        XDG_STATE_HOME=str(tmp_path / "state"),
        XDG_CONFIG_HOME=str(tmp_path / "xdg"),
        STOPRULE_CACHE_DIR=str(tmp_path / "cache"),
    )
    return full


@pytest.fixture
def project(tmp_path: Path, env: dict[str, str]) -> Path:
    root = tmp_path / "p"
    root.mkdir()
    _git(root, "init", "-q", "-b", "main")
    (root / "README.md").write_text("# r\n")
    (root / ".gitignore").write_text("build/\n*.log\n")
    assert invoke(["init", "--harness", "claude-code", "--no-mcp"], env=env, cwd=root).returncode == 0
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "start")
    return root


def _session_start(project: Path, env: dict[str, str]) -> None:
    data = payload("claude-code", session_id="sess-h", cwd=str(project), hook_event_name="SessionStart")
    run_hook("claude-code", data, project, env, ("--event", "session-start"))


def _stop(project: Path, env: dict[str, str]) -> tuple[dict, object]:
    out = run_hook("claude-code", payload("claude-code", session_id="sess-h", cwd=str(project)), project, env)
    entry = json.loads((project / ".stoprule" / "hook.log").read_text().splitlines()[-1])
    return entry, out


def _exclude(p: Path) -> None:
    (p / "secret.txt").write_text("work\n")
    with open(p / ".git" / "info" / "exclude", "a") as fh:
        fh.write("secret.txt\n")


def _assume(p: Path) -> None:
    (p / "README.md").write_text("# changed\n")
    _git(p, "update-index", "--assume-unchanged", "README.md")


def _skip(p: Path) -> None:
    (p / "README.md").write_text("# changed\n")
    _git(p, "update-index", "--skip-worktree", "README.md")


def _stash(p: Path) -> None:
    (p / "new.txt").write_text("work\n")
    (p / "README.md").write_text("# changed\n")
    _git(p, "stash", "-u", "-q")


def _self_ignoring(p: Path) -> None:
    (p / "sub").mkdir()
    (p / "sub" / ".gitignore").write_text("*\n")
    (p / "sub" / "work.txt").write_text("work\n")


def _excludes_file(p: Path) -> None:
    (p.parent / "ignore-all").write_text("*.txt\n")
    _git(p, "config", "core.excludesFile", str(p.parent / "ignore-all"))
    (p / "a.txt").write_text("work\n")


def _fsmonitor(p: Path) -> None:
    (p.parent / "fsmon.sh").write_text("#!/bin/sh\nsleep 30\n")
    (p.parent / "fsmon.sh").chmod(0o755)
    _git(p, "config", "core.fsmonitor", str(p.parent / "fsmon.sh"))
    (p / "README.md").write_text("# changed\n")


HIDDEN: list[tuple[str, Callable[[Path], None], str, str]] = [
    ("info/exclude", _exclude, "secret.txt", "newly ignored"),
    ("assume-unchanged", _assume, "README.md", "assume-unchanged"),
    ("skip-worktree", _skip, "README.md", "skip-worktree"),
    ("stash -u", _stash, "new.txt", "stashed"),
    ("a .gitignore that ignores itself", _self_ignoring, "sub/", "newly ignored"),
    ("core.excludesFile", _excludes_file, "a.txt", "newly ignored"),
    ("core.fsmonitor", _fsmonitor, "README.md", ""),
]


@pytest.mark.parametrize(("how", "hide", "path", "noted"), first_by_default(HIDDEN, 2), ids=[h[0] for h in HIDDEN])
def test_work_hidden_from_git_status_counts(
    how: str, hide: Callable[[Path], None], path: str, noted: str, project: Path, env: dict[str, str]
) -> None:
    _session_start(project, env)
    hide(project)
    entry, out = _stop(project, env)
    assert entry.get("verdict", {}).get("reason") == "uncommitted_work", entry
    assert any(f.startswith(path) for f in entry["fact"]["uncommittedFiles"]), entry["fact"]
    assert path in (out.instruction or "")
    if noted:
        assert noted in " ".join(entry["provenance"]["notes"]["git"])


def test_output_a_committed_gitignore_already_ignored_is_not_work(project: Path, env: dict[str, str]) -> None:
    _session_start(project, env)
    (project / "build").mkdir()
    (project / "build" / "out.o").write_text("x")
    (project / "run.log").write_text("x")
    entry, out = _stop(project, env)
    assert entry["verdict"]["reason"] == "ok" and out.stops, entry


@pytest.mark.parametrize("fail", ["open", "closed"])
def test_a_git_that_fails_takes_the_fail_path(fail: str, project: Path, env: dict[str, str]) -> None:
    cfg = project / ".stoprule" / "config.yaml"
    cfg.write_text(cfg.read_text().replace("fail: open", f"fail: {fail}"))
    _session_start(project, env)
    (project / "README.md").write_text("# changed\n")
    (project / ".git" / "index").write_bytes(b"DIRC garbage")  # git status cannot read the index
    entry, out = _stop(project, env)
    assert "could not observe" in entry["error"] and "git" in entry["error"]
    if fail == "open":
        assert out.stops and "could not decide" in (out.user_sees or "")
    else:
        assert not out.stops
