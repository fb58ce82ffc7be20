"""The throwaway PostgreSQL cluster for the tests marked ``postgres`` (see tests/pgcluster.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pgcluster import Cluster, cluster


@pytest.fixture(scope="session")
def pg() -> Iterator[Cluster]:
    with cluster() as c:
        yield c


@pytest.fixture
def pg_url(pg: Cluster) -> str:
    """A fresh empty database on the session's cluster."""
    return pg.new_database()
