"""The web console under ``/console`` of ``stoprule serve``: the server's ledger, the team's
blockers and blocked reports (the PostgreSQL team store; none with a file ledger), the pack the
server serves. Signed in with the server's bearer tokens; every token reads, the tokens the
config lists under ``console.resolve`` may resolve blockers (:mod:`stoprule.console.access`).
"""

from __future__ import annotations

import json
import os
import threading
from contextlib import suppress
from typing import Any

from starlette.routing import Mount

from stoprule import codes
from stoprule._util.redact import redact
from stoprule.agent.blockers.store import Blocker, render_markdown
from stoprule.agent.hook.runner import user_state_dir
from stoprule.console.board import NoBoard, report_view
from stoprule.console.policy import PACKS_DIR, PolicyView
from stoprule.console.runs import Runs
from stoprule.ledger.backend import is_url
from stoprule.ledger.errors import LedgerError
from stoprule.project import find_project
from stoprule.serve.team import TeamStore

__all__ = ["TeamBoard", "console_routes"]


class TeamBoard:
    """The team store as the console's board (its own connection, made on first use). Every wait is
    bounded by ``timeout_ms``, as the server's own database work is: connecting, each statement and
    lock, an unanswered socket (the connection's limits, ``stoprule.ledger.postgres.connect``), and
    the turn at the one connection; past it the page says the store is unavailable."""

    team = True

    def __init__(self, url: str, timeout_ms: int) -> None:
        self.url = url
        self.timeout_ms = timeout_ms
        self._store: Any = None
        self._lock = threading.Lock()

    def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        # one connection, one caller at a time (each bounded, so the wait for a turn is too); a broken one is made again
        if not self._lock.acquire(timeout=self.timeout_ms / 1000.0):
            raise LedgerError(codes.LEDGER_UNAVAILABLE, "the team's store is busy: try again")
        try:
            if self._store is None:
                self._store = TeamStore(self.url, self.timeout_ms)
            try:
                return getattr(self._store, method)(*args, **kwargs)
            except Exception:
                with suppress(Exception):  # a connection cut or timed out may fail to close: it is gone either way
                    self._store.close()
                self._store = None
                raise
        finally:
            self._lock.release()

    def close(self) -> None:
        """Close the connection (at the server's shutdown; a caller still waiting gets a fresh one)."""
        with self._lock:
            if self._store is not None:
                with suppress(Exception):
                    self._store.close()
                self._store = None

    def blockers(self) -> list[dict[str, Any]]:
        return [dict(b) for b in self._call("list", "blocker", only_open=False, project=None)]

    def reports(self) -> list[dict[str, Any]]:
        out = []
        for r in self._call("list", "report", only_open=False, project=None):
            report = r.get("report") if isinstance(r.get("report"), dict) else {}
            meta = {k: r.get(k) for k in ("session", "filed_at", "turn", "max_turns")}
            out.append(report_view(str(r.get("task_id")), str(r.get("project")), {**report, "_meta": meta}))
        return sorted(out, key=lambda r: str(r.get("filed_at") or ""), reverse=True)

    def resolve(self, project: str, blocker_id: str, note: str | None, by: str) -> dict[str, Any] | None:
        found: dict[str, Any] | None = self._call("resolve", project, blocker_id, redact(note) if note else None, by)
        return found

    def export(self, fmt: str) -> str:
        items = self.blockers()
        if fmt != "md":
            return "".join(json.dumps(b, ensure_ascii=False) + "\n" for b in items)

        parts = []
        for project in sorted({str(b.get("project")) for b in items}):
            mine = [_blocker(b, Blocker) for b in items if str(b.get("project")) == project]
            parts.append(f"<!-- project {project} -->\n" + render_markdown(mine))
        return "\n".join(parts)

    def version(self) -> str:
        try:
            return str(self._call("stamp"))
        except Exception as exc:  # noqa: BLE001 - the event stream goes on; the pages say what is wrong
            return type(exc).__name__


def _blocker(d: dict[str, Any], cls: Any) -> Any:
    return cls(
        id=str(d.get("id")),
        session=str(d.get("session") or "?"),
        at=str(d.get("at") or ""),
        ts=0.0,
        hash="",
        category=str(d.get("category") or "?"),
        soft=d.get("kind") == "soft",
        question=str(d.get("question")),
        context=str(d.get("context") or ""),
        blocksProgress=bool(d.get("blocksProgress")),
        options=[str(o) for o in d.get("options") or []],
        chosenOption=d.get("chosenOption"),
        chosenReasoning=d.get("chosenReasoning"),
        resolved_at=d.get("resolved_at"),
        resolution=d.get("resolution"),
    )


def console_routes(svc: Any) -> list[Any]:
    """``/console`` for the service ``svc`` (a starlette ``Mount``; none if the console's libraries
    are not installed)."""
    try:
        from stoprule.console.access import TokenGate
        from stoprule.console.app import create_console
    except ImportError:
        return []

    config = svc.config
    board = TeamBoard(config.ledger, config.limits.ledger_timeout_ms) if is_url(config.ledger) else NoBoard()
    if isinstance(board, TeamBoard):
        svc.closing.append(board.close)
    root = svc.pack.root
    policy = PolicyView(lambda: root, find_project(root), os.path.join(user_state_dir(os.environ), PACKS_DIR))
    gate = TokenGate(config.console_reader, config.console_resolvers, open=not config.auth)  # (the tokens' scopes)
    app = create_console(runs=Runs(config.ledger), board=board, policy=policy, gate=gate, title="team")
    return [Mount("/console", app=app)]
