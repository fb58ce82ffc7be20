"""The throwaway PostgreSQL cluster for the tests marked ``postgres`` (see tests/pgcluster.py)."""

from pgcluster import pg, pg_url

__all__ = ["pg", "pg_url"]
