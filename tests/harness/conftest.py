"""Fixtures of the real-harness tier (marker ``harness``; ``python -m pytest -m harness -n 0``).

A harness that is not installed is skipped, unless ``STOPRULE_REQUIRE_HARNESSES=1`` (set by
``.ci/run``): then it fails.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harnesses import DRIVERS, TIMEOUT_S, Session, binary, harness_path  # noqa: E402
from model_servers import Script, Turn, serve  # noqa: E402

PROMPT = "Write notes.txt, then finish."


def require(harness: str) -> None:
    """Skip (fail in CI) when the harness or node is missing."""
    missing = [what for what, ok in (("node", shutil.which("node")), (str(binary(harness)), binary(harness).exists()))
               if not ok]  # fmt: skip
    if missing:
        why = f"{harness}: not installed ({', '.join(missing)}); run python tests/harness/install.py"
        if os.environ.get("STOPRULE_REQUIRE_HARNESSES") == "1":
            pytest.fail(why)
        pytest.skip(why)


def stoprule_exe() -> str:
    here = Path(sys.executable).parent / "stoprule"
    return str(here) if here.exists() else (shutil.which("stoprule") or "stoprule")


def make_project(root: Path, harness: str) -> Path:
    """A git project wired with ``stoprule init --harness H`` (run as a user would, from the
    venv), everything committed: a clean tree before the session."""
    project = root / "project"
    project.mkdir()
    git = ["git", "-c", "user.email=t@example.invalid", "-c", "user.name=t"]
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=project, check=True)
    subprocess.run(["git", "config", "user.email", "agent@example.invalid"], cwd=project, check=True)
    subprocess.run(["git", "config", "user.name", "agent"], cwd=project, check=True)
    (project / "README.md").write_text("# demo\n", encoding="utf-8")
    env = dict(os.environ, PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    env["HOME"] = str(root / "home")
    p = subprocess.run([stoprule_exe(), "init", "--harness", harness], cwd=project, env=env, capture_output=True,
                       text=True)  # fmt: skip
    assert p.returncode == 0, p.stderr
    subprocess.run([*git, "add", "-A"], cwd=project, check=True)
    subprocess.run([*git, "commit", "-qm", "wire stoprule"], cwd=project, check=True)
    return project


@pytest.fixture
def run_session(tmp_path: Path) -> Iterator[Callable[..., Session]]:
    """``run_session(harness, turns, default=None) -> Session``: a headless run to its end."""
    stack = ExitStack()

    def run(harness: str, turns: list[Turn], default: Turn | None = None, prompt: str = PROMPT) -> Session:
        require(harness)
        driver = DRIVERS[harness]
        home = tmp_path / "home"
        home.mkdir(exist_ok=True)
        project = make_project(tmp_path, harness)
        s = Session(harness, project, home, Script(turns, default))
        s.url = stack.enter_context(serve(s.script))
        driver.configure(s)
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("STOPRULE_", "ANTHROPIC_", "OPENAI_", "GEMINI_", "GOOGLE_", "CODEX_"))
        }
        env.update(HOME=str(home), PATH=harness_path(), NO_COLOR="1")
        env.update(driver.environment(s))
        s.env = env
        s.result = subprocess.run(driver.command(s, prompt), cwd=project, env=env, capture_output=True, text=True,
                                  timeout=TIMEOUT_S, stdin=subprocess.DEVNULL)  # fmt: skip
        return s

    with stack:
        yield run
