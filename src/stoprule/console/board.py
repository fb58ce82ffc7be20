"""The blockers board and the blocked reports: what the console shows and the user's actions on them.

A :class:`Board` is where they come from: :class:`LocalBoard` is one project's ``.stoprule/``
(the blocker service the CLI and the MCP tools use; resolving goes through the same
``BlockerService.resolve`` as ``stoprule blockers resolve``); ``stoprule serve`` gives the
console a board over the team's store (:mod:`stoprule.serve.console_mount`).

Blockers are the service's ``Blocker.to_dict()`` with ``project`` added; reports are
``{"task_id", "project", "session", "filed_at", "turn", "max_turns", "report": {sections}}``.
"""

from __future__ import annotations

import os
import threading
from contextlib import suppress
from typing import Any, Protocol

from stoprule._util.files import stamp
from stoprule.agent.blockers.reports import load_report, succeeded
from stoprule.agent.blockers.service import BlockerService
from stoprule.agent.blockers.store import StoreWriteError
from stoprule.agent.hook.remote import attach_mirror
from stoprule.config.fields import REPORT_SECTIONS

__all__ = ["Board", "LocalBoard", "NoBoard", "group_blockers", "report_view"]


class Board(Protocol):
    """Blockers and blocked reports of one project (local) or many (team)."""

    team: bool

    def blockers(self) -> list[dict[str, Any]]: ...

    def reports(self) -> list[dict[str, Any]]: ...

    def resolve(self, project: str, blocker_id: str, note: str | None, by: str) -> dict[str, Any] | None:
        """Mark an open blocker resolved (None: no such blocker). Raises OSError if it cannot be recorded."""
        ...

    def export(self, fmt: str) -> str: ...

    def version(self) -> str:
        """Changes whenever a blocker or report changes."""
        ...


class NoBoard:
    """Neither blockers nor reports (a ledger without a project)."""

    team = False

    def blockers(self) -> list[dict[str, Any]]:
        return []

    def reports(self) -> list[dict[str, Any]]:
        return []

    def resolve(self, project: str, blocker_id: str, note: str | None, by: str) -> dict[str, Any] | None:
        return None

    def export(self, fmt: str) -> str:
        return ""

    def version(self) -> str:
        return "none"


def _items(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def report_view(task: str, project: str, data: dict[str, Any]) -> dict[str, Any]:
    """A saved report (four sections and ``_meta``) as the console's panel shows it: sections as
    lists of dicts and strings, whatever shape the file has (it is the agent's writing)."""
    meta = data["_meta"] if isinstance(data.get("_meta"), dict) else {}
    issues, attempts, alternatives, action = (data.get(k) for k in REPORT_SECTIONS)
    return {
        "task_id": task,
        "project": project,
        "session": meta.get("session"),
        "filed_at": meta.get("filed_at"),
        "turn": meta.get("turn"),
        "max_turns": meta.get("max_turns"),
        "issues": [i if isinstance(i, dict) else {"issue": str(i)} for i in _items(issues)],
        "attempts": [
            {**a, "ok": succeeded(a.get("result"))} if isinstance(a, dict) else {"action": str(a), "ok": False}
            for a in _items(attempts)
        ],
        "alternatives": [str(a) for a in _items(alternatives)],
        "action": action if isinstance(action, str) and action.strip() else None,
    }


class LocalBoard:
    """The blockers and reports of the project at ``root`` (the directory holding ``.stoprule/``)."""

    team = False

    def __init__(self, root: str) -> None:
        self.root = os.path.abspath(root)
        self.name = os.path.basename(self.root)
        self._lock = threading.Lock()
        self._service: Any = None
        self._config: tuple[int, int] | None = None

    def service(self) -> Any:
        """The project's blocker service (made again when ``.stoprule/config.yaml`` changes)."""
        config = stamp(os.path.join(self.root, ".stoprule", "config.yaml"))
        with self._lock:
            if self._service is None or config != self._config:
                self._service, self._config = BlockerService(self.root), config
            return self._service

    def blockers(self) -> list[dict[str, Any]]:
        return [{**b.to_dict(), "project": self.name} for b in self.service().store.blockers()]

    def reports(self) -> list[dict[str, Any]]:
        base = os.path.join(self.root, ".stoprule", "reports")
        try:
            tasks = sorted(os.listdir(base))
        except OSError:
            return []
        out = []
        for task in tasks:
            found = load_report(self.root, task)
            if found is not None:
                out.append(report_view(found[0], self.name, found[1]))
        out.sort(key=lambda r: str(r.get("filed_at") or ""), reverse=True)
        return out

    def resolve(self, project: str, blocker_id: str, note: str | None, by: str) -> dict[str, Any] | None:
        if project != self.name:
            return None
        service = self.service()
        attach_mirror(service)  # a team server the project names sees it resolved, as after the CLI's
        try:
            hit = service.resolve(blocker_id, note)
        except StoreWriteError as exc:
            raise OSError(str(exc)) from None
        return None if hit is None else {**hit.to_dict(), "project": self.name}

    def export(self, fmt: str) -> str:
        return str(self.service().export(fmt))

    def version(self) -> str:
        store = self.service().store
        reports = os.path.join(self.root, ".stoprule", "reports")
        parts = [stamp(store.record_path), stamp(reports)]
        with suppress(OSError):
            parts += [stamp(os.path.join(reports, t)) for t in sorted(os.listdir(reports))]
        return str(hash(tuple(parts)))


def group_blockers(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Blockers by project, then session: ``[{project, sessions: [{session, hard, soft}]}]``; hard ones
    open first (those blocking progress first of all), soft ones as logged."""
    projects: dict[str, dict[str, dict[str, list[dict[str, Any]]]]] = {}
    for b in items:
        sessions = projects.setdefault(str(b.get("project") or "?"), {})
        s = sessions.setdefault(str(b.get("session") or "?"), {"hard": [], "soft": []})
        s["soft" if b.get("kind") == "soft" else "hard"].append(b)
    out = []
    for project, sessions in projects.items():
        rows = []
        for session, kinds in sessions.items():
            hard = sorted(
                kinds["hard"],
                key=lambda b: (b.get("status") != "open", not b.get("blocksProgress"), str(b.get("at") or "")),
            )
            rows.append(
                {
                    "session": session,
                    "hard": hard,
                    "soft": kinds["soft"],
                    "open": sum(b.get("status") == "open" for b in hard),
                }
            )
        rows.sort(key=lambda s: (-s["open"], s["session"]))
        out.append({"project": project, "sessions": rows})
    return out
