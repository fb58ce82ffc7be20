"""The team's blockers and blocked reports, from every machine, in the server's PostgreSQL database.

Clients mirror their project's blockers (the whole list after each change: idempotent, resolved
ones included) and each blocked report they file; ``GET /v1/blockers`` lists them across
machines. These rows are a shared view, not a record of decisions: they are upserted by
``(project, kind, id)`` (a blocker's status moves from open to resolved), in one table beside the
ledger's, which the ledger's guards and ``log verify`` do not cover.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["TeamStore"]

DDL = """
CREATE TABLE IF NOT EXISTS team_items (
    project TEXT NOT NULL, kind TEXT NOT NULL CHECK (kind IN ('blocker', 'report')), id TEXT NOT NULL,
    machine TEXT NOT NULL, session TEXT, open BOOLEAN NOT NULL, body TEXT NOT NULL,
    updated TIMESTAMPTZ NOT NULL DEFAULT now(), PRIMARY KEY (project, kind, id))
"""
MAX_ITEMS = 10_000  # per request


class TeamStore:
    def __init__(self, url: str) -> None:
        import psycopg

        self._conn = psycopg.connect(url, autocommit=True, connect_timeout=10)
        with self._conn.transaction():
            self._conn.execute("SELECT pg_advisory_xact_lock(1398034515)")
            self._conn.execute(DDL)

    def close(self) -> None:
        self._conn.close()

    def put(self, project: str, machine: str, kind: str, items: list[dict[str, Any]]) -> int:
        rows = []
        for item in items[:MAX_ITEMS]:
            item_id = str(item.get("id") or item.get("task_id") or "")
            if not item_id:
                continue
            is_open = bool(item.get("open", item.get("status", "open") == "open")) if kind == "blocker" else True
            rows.append((project, kind, item_id, machine, item.get("session"), is_open, json.dumps(item)))
        with self._conn.transaction(), self._conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO team_items (project, kind, id, machine, session, open, body) VALUES (%s, %s, %s, %s, %s,"
                " %s, %s) ON CONFLICT (project, kind, id) DO UPDATE SET machine = EXCLUDED.machine,"
                " session = EXCLUDED.session, open = EXCLUDED.open, body = EXCLUDED.body, updated = now()",
                rows,
            )
        return len(rows)

    def list(self, kind: str, *, only_open: bool, project: str | None) -> list[dict[str, Any]]:
        sql = "SELECT project, machine, body, updated FROM team_items WHERE kind = %s"
        args: list[Any] = [kind]
        if only_open:
            sql += " AND open"
        if project:
            sql += " AND project = %s"
            args.append(project)
        rows = self._conn.execute(sql + " ORDER BY updated DESC LIMIT 10000", args).fetchall()
        return [{"project": p, "machine": m, **json.loads(b), "updated": u.isoformat()} for p, m, b, u in rows]
