"""A project recorded by real hook runs (recorded.py), once per test module, and the console's
application over it in process (starlette's TestClient)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from consolehelp import KEY, PORT, console, project_env
from recorded import Project, record

from clirunner import process_env


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


@pytest.fixture
def client(project: Project) -> Iterator[object]:
    from starlette.testclient import TestClient

    with process_env(project.env, project.root), TestClient(console(project), base_url=f"http://127.0.0.1:{PORT}") as c:
        c.cookies.set(f"stoprule_console_{PORT}", KEY)
        yield c


from pgcluster import pg, pg_url  # noqa: E402,F401 - the PostgreSQL cluster for the tests marked postgres
