"""The team's blockers and blocked reports, from every machine, in the server's PostgreSQL database.

Clients mirror their project's blockers (the whole list after each change: idempotent, resolved
ones included) and each blocked report they file; ``GET /v1/blockers`` lists them across
machines. A blocker resolved here (in the console, by a token that may) stays resolved when the
project mirrors it as open again, and the answer to that mirror names it, so that the project
resolves it too (:class:`stoprule.agent.hook.remote.Mirror`). These rows are a shared view, not a
record of decisions: they are upserted by ``(project, kind, id)`` (a blocker's status moves from
open to resolved), in one table beside the ledger's, which the ledger's guards and ``log verify``
do not cover. The table is made by ``stoprule serve migrate`` (:data:`DDL`, as the database's
owner); the service only reads and writes rows (:data:`GRANTS`).
"""

from __future__ import annotations

import json
import time
from typing import Any

from stoprule.ledger.postgres import connect, pg_error

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
    """The ``team_items`` table over one connection (every wait bounded by ``timeout_ms``); a
    database error is a :class:`~stoprule.ledger.errors.LedgerError` that does not name the database."""

    def __init__(self, url: str, timeout_ms: int | None = None) -> None:
        import psycopg

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

    def _run(self, fn: Any) -> Any:
        """``fn()``, its database errors as LedgerError."""
        import psycopg

        try:
            return fn()
        except psycopg.Error as exc:
            raise pg_error(exc, _LABEL) from None

    def put(self, project: str, machine: str, kind: str, items: list[dict[str, Any]]) -> int:
        rows = []
        for item in items[:MAX_ITEMS]:
            item_id = str(item.get("id") or item.get("task_id") or "")
            if not item_id:
                continue
            is_open = bool(item.get("open", item.get("status", "open") == "open")) if kind == "blocker" else True
            rows.append((project, kind, item_id, machine, item.get("session"), is_open, json.dumps(item)))

        def store() -> None:
            self.commits += 1
            with self._conn.transaction(), self._conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO team_items (project, kind, id, machine, session, open, body) VALUES (%s, %s, %s, %s,"
                    " %s, %s, %s) ON CONFLICT (project, kind, id) DO UPDATE SET machine = EXCLUDED.machine,"
                    " session = EXCLUDED.session, open = team_items.open AND EXCLUDED.open,"
                    " body = CASE WHEN team_items.open OR NOT EXCLUDED.open THEN EXCLUDED.body ELSE team_items.body"
                    " END, updated = now()",
                    rows,
                )

        self._run(store)
        return len(rows)

    def resolved_here(self, project: str, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Of the blockers a project just mirrored as open, those resolved on the server."""
        sent = [str(i.get("id")) for i in items if i.get("status", "open") == "open" and i.get("id")]
        if not sent:
            return []
        rows = self._run(
            lambda: self._conn.execute(
                "SELECT body FROM team_items WHERE project = %s AND kind = 'blocker' AND NOT open AND id = ANY(%s)",
                (project, sent),
            ).fetchall()
        )
        return [json.loads(b) for (b,) in rows]

    def resolve(self, project: str, blocker_id: str, note: str | None, by: str) -> dict[str, Any] | None:
        """Mark a project's blocker resolved here (None: no such blocker); an already resolved one as it is."""

        def mark() -> dict[str, Any] | None:
            self.commits += 1
            with self._conn.transaction():
                row = self._conn.execute(
                    "SELECT body, open FROM team_items WHERE project = %s AND kind = 'blocker' AND id = %s FOR UPDATE",
                    (project, blocker_id),
                ).fetchone()
                if row is None:
                    return None
                item = {**json.loads(row[0]), "project": project}
                if not row[1]:
                    return item
                item.update(
                    status="resolved",
                    resolved_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    resolution=note,
                    resolved_by=by,
                )
                body = {k: v for k, v in item.items() if k != "project"}
                self._conn.execute(
                    "UPDATE team_items SET open = false, body = %s, updated = now() WHERE project = %s"
                    " AND kind = 'blocker' AND id = %s",
                    (json.dumps(body), project, blocker_id),
                )
            return item

        found: dict[str, Any] | None = self._run(mark)
        return found

    def stamp(self) -> str:
        """Changes whenever an item is stored or changed."""
        row = self._run(lambda: self._conn.execute("SELECT count(*), max(updated) FROM team_items").fetchone())
        return f"{row[0]}:{row[1].isoformat() if row and row[1] else ''}" if row else "0:"

    def list(
        self, kind: str, *, only_open: bool, project: str | None = None, projects: tuple[str, ...] | None = None
    ) -> list[dict[str, Any]]:
        """The items of ``kind`` (of ``project``, or of ``projects``; neither: every project), most
        recently updated first."""
        sql = "SELECT project, machine, body, updated FROM team_items WHERE kind = %s"
        args: list[Any] = [kind]
        if only_open:
            sql += " AND open"
        if project is not None:
            projects = (project,) if projects is None or project in projects else ()
        if projects is not None:
            sql += " AND project = ANY(%s)"
            args.append(list(projects))
        rows = self._run(lambda: self._conn.execute(sql + " ORDER BY updated DESC LIMIT 10000", args).fetchall())
        return [{"project": p, "machine": m, **json.loads(b), "updated": u.isoformat()} for p, m, b, u in rows]
