"""The team's blockers and blocked reports, from every machine, in the server's PostgreSQL database.

Clients mirror their project's blockers (the whole list after each change: idempotent, resolved
ones included) and each blocked report they file; ``GET /v1/blockers`` lists them across
machines. These rows are a shared view, not a record of decisions: they are upserted by
``(project, kind, id)`` (a blocker's status moves from open to resolved), in one table beside the
ledger's, which the ledger's guards and ``log verify`` do not cover. The table is made by
``stoprule serve migrate`` (:data:`DDL`, as the database's owner); the service only reads and
writes rows (:data:`GRANTS`).
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["DDL", "GRANTS", "MAX_ITEMS", "TeamStore"]

DDL = """
CREATE TABLE IF NOT EXISTS team_items (
    project TEXT NOT NULL, kind TEXT NOT NULL CHECK (kind IN ('blocker', 'report')), id TEXT NOT NULL,
    machine TEXT NOT NULL, session TEXT, open BOOLEAN NOT NULL, body TEXT NOT NULL,
    updated TIMESTAMPTZ NOT NULL DEFAULT now(), PRIMARY KEY (project, kind, id))
"""
GRANTS = """
REVOKE ALL ON team_items FROM {role};
GRANT SELECT, INSERT, UPDATE ON team_items TO {role};
"""
MAX_ITEMS = 10_000  # per request
_LABEL = "the team's store"


class TeamStore:
    """The ``team_items`` table over one connection (every wait bounded by ``timeout_ms``)."""

    def __init__(self, url: str, timeout_ms: int | None = None) -> None:
        import psycopg

        from stoprule.ledger.postgres import connect, pg_error

        try:
            self._conn = connect(url, timeout_ms)
        except psycopg.Error as exc:
            raise pg_error(exc, _LABEL) from None
        self.commits = 0

    def close(self) -> None:
        self._conn.close()

    @property
    def connection(self) -> Any:
        return self._conn

    def put(self, project: str, machine: str, kind: str, items: list[dict[str, Any]]) -> int:
        import psycopg

        from stoprule.ledger.postgres import pg_error

        rows = []
        for item in items[:MAX_ITEMS]:
            item_id = str(item.get("id") or item.get("task_id") or "")
            if not item_id:
                continue
            is_open = bool(item.get("open", item.get("status", "open") == "open")) if kind == "blocker" else True
            rows.append((project, kind, item_id, machine, item.get("session"), is_open, json.dumps(item)))
        try:
            self.commits += 1
            with self._conn.transaction(), self._conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO team_items (project, kind, id, machine, session, open, body) VALUES (%s, %s, %s, %s,"
                    " %s, %s, %s) ON CONFLICT (project, kind, id) DO UPDATE SET machine = EXCLUDED.machine,"
                    " session = EXCLUDED.session, open = EXCLUDED.open, body = EXCLUDED.body, updated = now()",
                    rows,
                )
        except psycopg.Error as exc:
            raise pg_error(exc, _LABEL) from None
        return len(rows)

    def list(self, kind: str, *, only_open: bool, projects: tuple[str, ...] | None) -> list[dict[str, Any]]:
        """The items of ``kind`` (of ``projects``; None: every project), most recently updated first."""
        import psycopg

        from stoprule.ledger.postgres import pg_error

        sql = "SELECT project, machine, body, updated FROM team_items WHERE kind = %s"
        args: list[Any] = [kind]
        if only_open:
            sql += " AND open"
        if projects is not None:
            sql += " AND project = ANY(%s)"
            args.append(list(projects))
        try:
            rows = self._conn.execute(sql + " ORDER BY updated DESC LIMIT 10000", args).fetchall()
        except psycopg.Error as exc:
            raise pg_error(exc, _LABEL) from None
        return [{"project": p, "machine": m, **json.loads(b), "updated": u.isoformat()} for p, m, b, u in rows]
