"""A project recorded by real hook runs (recorded.py), once per test module, and the console's
application over it in process (starlette's TestClient)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from recorded import Project, record

from clirunner import process_env

KEY = "test-key"
PORT = 8475


def project_env(tmp: Path, cache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STOPRULE_")}
    env.update(HOME=str(tmp / "home"), XDG_STATE_HOME=str(tmp / "xs"), XDG_CONFIG_HOME=str(tmp / "config"),
               STOPRULE_CACHE_DIR=str(cache))  # fmt: skip
    return env


@pytest.fixture(scope="module")
def recorded_project(tmp_path_factory: pytest.TempPathFactory, pack_cache: Path) -> Project:
    """The recorded project, kept pristine: tests that change it work on :func:`project`."""
    tmp = tmp_path_factory.mktemp("recorded")
    return record(tmp / "proj", project_env(tmp, pack_cache))


@pytest.fixture
def project(recorded_project: Project, tmp_path: Path) -> Project:
    """A copy of the recorded project this test may change."""
    root = tmp_path / "proj"
    shutil.copytree(recorded_project.root, root, symlinks=True)
    env = dict(recorded_project.env)
    return Project(root, env)


def console(pr: Project, *, read_only: str | None = None, key: str = KEY) -> object:
    """The console of ``pr`` as ``stoprule console`` composes it (without the server)."""
    from stoprule.console.access import KeyGate
    from stoprule.console.app import create_console
    from stoprule.console.board import LocalBoard
    from stoprule.console.hooklog import HookLog
    from stoprule.console.policy import PolicyView
    from stoprule.console.runs import Runs
    from stoprule.engine.packs import pack_path

    state = pr.root / ".stoprule"
    with process_env(pr.env, pr.root):
        pack = pack_path(None)
    return create_console(runs=Runs(str(state / "ledger.db"), HookLog(str(state / "hook.log"))),
                          board=LocalBoard(str(pr.root)), policy=PolicyView(lambda: pack, str(state), str(state / "packs")),
                          gate=KeyGate(key, PORT, read_only), title="proj", project="proj")  # fmt: skip


@pytest.fixture
def client(project: Project) -> Iterator[object]:
    from starlette.testclient import TestClient

    with process_env(project.env, project.root), TestClient(console(project), base_url=f"http://127.0.0.1:{PORT}") as c:
        c.cookies.set(f"stoprule_console_{PORT}", KEY)
        yield c
