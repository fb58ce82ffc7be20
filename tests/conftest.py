"""Shared fixtures: the default pack, a compiled evaluator, and a real CLI runner."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from clirunner import invoke
from stoprule import Evaluator, load_policy

REPO = Path(__file__).resolve().parent.parent
DEFAULT_PACK = REPO / "policies"

# About a thousand tests start `python -m stoprule`. Where PYTHONDONTWRITEBYTECODE is set (it
# keeps __pycache__ out of the tree), each of them would compile its modules from source again
# (measured: 68 s for the suite instead of 55 on 2 cores). The processes the tests start write
# and read their bytecode in a cache outside the tree instead.
if os.environ.get("PYTHONDONTWRITEBYTECODE") and not os.environ.get("PYTHONPYCACHEPREFIX"):
    import tempfile

    del os.environ["PYTHONDONTWRITEBYTECODE"]
    os.environ["PYTHONPYCACHEPREFIX"] = os.path.join(tempfile.gettempdir(), "stoprule-tests-pycache")


@pytest.fixture(scope="session")
def default_pack() -> Path:
    return DEFAULT_PACK


@pytest.fixture(scope="session")
def evaluator() -> Evaluator:
    return load_policy(DEFAULT_PACK, cache=False)


def _cli_env(tmp_path: Path, env: dict[str, str] | None) -> dict[str, str]:
    full_env = {k: v for k, v in os.environ.items() if k != "STOPRULE_POLICY"}
    full_env["STOPRULE_CACHE_DIR"] = str(tmp_path / "cache")
    full_env.update(env or {})
    return full_env


@pytest.fixture
def run_cli(tmp_path: Path) -> Callable[..., subprocess.CompletedProcess]:
    """``stoprule ARGS`` in process (:func:`clirunner.invoke`): cwd ``tmp_path``, cache in a temp dir."""

    def run(
        *args: str,
        input: str | bytes | None = None,
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
    ) -> subprocess.CompletedProcess:
        return invoke(args, input=input, env=_cli_env(tmp_path, env), cwd=cwd or tmp_path)

    return run


@pytest.fixture
def run_cli_process(tmp_path: Path) -> Callable[..., subprocess.CompletedProcess]:
    """``python -m stoprule ARGS`` as a real subprocess, for tests where the process boundary is
    the point (each says why); otherwise as :func:`run_cli`."""

    def run(
        *args: str,
        input: str | bytes | None = None,
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
    ) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "stoprule", *args],
            input=input,
            capture_output=True,
            text=not isinstance(input, bytes),
            env=_cli_env(tmp_path, env),
            cwd=cwd or tmp_path,
            timeout=120,
        )

    return run


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:  # noqa: ANN001
    """Say how to run what the default ``-m 'not torture'`` left out (see pyproject.toml)."""
    deselected = terminalreporter.stats.get("deselected", [])
    torture = sum(1 for item in deselected if item.get_closest_marker("torture") is not None)
    if torture:
        terminalreporter.write_line(f"{torture} torture test(s) deselected: `python -m pytest -m torture` runs them")
