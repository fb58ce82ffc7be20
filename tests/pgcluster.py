"""A throwaway PostgreSQL cluster on loopback for the tests marked ``postgres``.

``initdb`` and ``pg_ctl`` from the distribution's packages (``/usr/lib/postgresql/*/bin``, or on
PATH) in a temporary directory, on a free port, listening on 127.0.0.1 only, trust auth for
local connections; stopped (``pg_ctl stop -m immediate``) and removed at the end. As root the
cluster runs as the ``postgres`` user (PostgreSQL refuses to run as root).
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress

import pytest

__all__ = ["Cluster", "cluster", "find_bin", "pg", "pg_url"]


def find_bin(name: str) -> str | None:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), key=lambda p: int(p.split("/")[4]))
    return found[-1] if found else shutil.which(name)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Cluster:
    def __init__(self, root: str, port: int, as_user: list[str]) -> None:
        self.root, self.port, self._as = root, port, as_user
        self.data = os.path.join(root, "data")

    def url(self, db: str = "postgres", user: str = "postgres") -> str:
        return f"postgresql://{user}@127.0.0.1:{self.port}/{db}"

    def ctl(self, *args: str) -> None:
        pg_ctl = find_bin("pg_ctl")
        assert pg_ctl
        log = os.path.join(self.root, "server.log")
        subprocess.run(
            [*self._as, pg_ctl, "-D", self.data, "-l", log, "-w", *args], check=True, capture_output=True, timeout=60
        )

    def start(self) -> None:
        self.ctl("-o", f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=on", "start")

    def stop(self, mode: str = "fast") -> None:
        self.ctl("-m", mode, "stop")

    def new_database(self) -> str:
        """A fresh, empty database; its URL."""
        import psycopg

        name = "t_" + uuid.uuid4().hex[:12]
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return self.url(name)


@contextmanager
def cluster() -> Iterator[Cluster]:
    initdb = find_bin("initdb")
    if initdb is None:
        raise RuntimeError("PostgreSQL is not installed (apt-get install -y postgresql)")
    root = tempfile.mkdtemp(prefix="stoprule-pg-")
    as_user: list[str] = []
    if os.geteuid() == 0:
        os.chmod(root, 0o755)
        shutil.chown(root, "postgres", "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    c = Cluster(root, _free_port(), as_user)
    try:
        subprocess.run(
            [*as_user, initdb, "-D", c.data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync"],
            check=True,
            capture_output=True,
            timeout=120,
        )
        c.start()
        try:
            yield c
        finally:
            with suppress(subprocess.SubprocessError):
                c.stop("immediate")
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def pg() -> Iterator[Cluster]:
    """One cluster per test session (per xdist worker)."""
    with cluster() as c:
        yield c


@pytest.fixture
def pg_url(pg: Cluster) -> str:
    """A fresh empty database on the session's cluster."""
    return pg.new_database()
