"""Shared fixtures: the default pack, a compiled evaluator, and the CLI run in process (``run_cli``)."""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

# Some tests start `python -m stoprule` where the process boundary is the point (the docs' shell
# blocks, cold-start import checks, the hook through a harness's shell form, racing processes).
# Where PYTHONDONTWRITEBYTECODE is set (it keeps __pycache__ out of the tree), each of them, and
# each test process itself (its src/ modules, and the test modules pytest rewrites for assert),
# would compile from source again on every run; they write and read their bytecode in a cache
# outside the tree instead. Set before the first import of stoprule or of a test module.
if os.environ.get("PYTHONDONTWRITEBYTECODE") and not os.environ.get("PYTHONPYCACHEPREFIX"):
    del os.environ["PYTHONDONTWRITEBYTECODE"]
    os.environ["PYTHONPYCACHEPREFIX"] = os.path.join(tempfile.gettempdir(), "stoprule-tests-pycache")
if sys.dont_write_bytecode and sys.pycache_prefix is None and os.environ.get("PYTHONPYCACHEPREFIX"):
    sys.pycache_prefix = os.environ["PYTHONPYCACHEPREFIX"]
    sys.dont_write_bytecode = False
# No test reaches a resident process the machine's user may have running (stoprule resident):
# the runtime directory it would listen in is a private one of this test run (empty).
os.environ["XDG_RUNTIME_DIR"] = tempfile.mkdtemp(prefix="stoprule-tests-run-")
atexit.register(shutil.rmtree, os.environ["XDG_RUNTIME_DIR"], True)

# The user's state directory (stoprule's state where no project is found: session links, declared
# facts, refused attempts) is a fresh one per test process: nothing a test does there reaches the
# machine's, nor another test run's (a session link there makes the CLI refuse its mutating commands).
os.environ["XDG_STATE_HOME"] = tempfile.mkdtemp(prefix="stoprule-tests-state-")
os.environ.pop("STOPRULE_STATE_DIR", None)

from clirunner import invoke  # noqa: E402 - after the bytecode set-up above
from stoprule import Evaluator, load_policy  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
DEFAULT_PACK = REPO / "policies"


@pytest.fixture(autouse=True)
def _same_working_directory() -> Iterator[None]:
    """Every test ends where it started: one that changes directory (or removes the one it is
    in) never leaves the next test of the same process in a folder that is gone."""
    start = os.getcwd()
    yield
    try:
        now: str | None = os.getcwd()
    except FileNotFoundError:
        now = None
    if now != start:
        os.chdir(start)


@pytest.fixture(scope="session")
def default_pack() -> Path:
    return DEFAULT_PACK


@pytest.fixture(scope="session")
def evaluator() -> Evaluator:
    return load_policy(DEFAULT_PACK, cache=False)


@pytest.fixture(scope="session")
def pack_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A compiled-pack cache shared by a test process's ``run_cli`` calls: a pack is compiled
    once, not once per test (the cache's entries are keyed by the pack's content and path)."""
    return tmp_path_factory.mktemp("pack-cache")


@pytest.fixture
def run_cli(tmp_path: Path, pack_cache: Path) -> Callable[..., subprocess.CompletedProcess]:
    """``stoprule ARGS`` in process (:func:`clirunner.invoke`): cwd ``tmp_path``, the shared
    compiled-pack cache (``env`` may name another)."""

    def run(
        *args: str,
        input: str | bytes | None = None,
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
    ) -> subprocess.CompletedProcess:
        full_env = {k: v for k, v in os.environ.items() if k != "STOPRULE_POLICY"}
        full_env["STOPRULE_CACHE_DIR"] = str(pack_cache)
        full_env.update(env or {})
        return invoke(args, input=input, env=full_env, cwd=cwd or tmp_path)

    return run


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:  # noqa: ANN001
    """Say how to run what the default ``-m`` left out of the torture and integration tiers (see
    pyproject.toml)."""
    deselected = terminalreporter.stats.get("deselected", [])
    for tier in ("torture", "integration"):
        count = sum(1 for item in deselected if item.get_closest_marker(tier) is not None)
        if count:
            terminalreporter.write_line(f"{count} {tier} test(s) deselected: `python -m pytest -m {tier}` runs them")
