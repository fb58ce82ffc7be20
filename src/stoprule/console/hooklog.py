"""The hook's log as the console reads it: which harness ran each session, and for each recorded
decision the log line that holds its facts' provenance and what the hook answered.

``stoprule hook`` writes one JSON line per stop (``.stoprule/hook.log``, rotated once to
``hook.log.1`` at 4 MiB); a line whose stop was recorded names its session (the run) and its
ledger node (``ledger_node``), or, for a stop journaled beside a ledger file
(:mod:`stoprule.ledger.journal`), the decision's time (``ledger_journal``: the node's ``at``).
The index keeps, per file (by inode, so a rotation is followed), how far it has read, and per
``(run, node)`` where the line is; a line is parsed again only when a decision is opened. The
log is written by a process the agent can reach: the console shows what it holds as the log's
account, checked against the fact the ledger recorded.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass
from typing import Any

__all__ = ["HookLog", "LogEntry"]

_MARK, _JOURNALED = b'"ledger_node"', b'"ledger_journal"'


@dataclass(frozen=True)
class LogEntry:
    """One stop as the hook logged it."""

    harness: str | None
    fact: dict[str, Any] | None
    provenance: dict[str, Any]
    decision: dict[str, Any]
    loop: dict[str, Any] | None
    mode: str | None
    pack: str | None
    ts: float | None
    ms: float | None


class HookLog:
    """An index over ``path`` and its rotated copy (``path + ".1"``); None: no log."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._read: dict[int, int] = {}  # inode -> bytes indexed
        # (run, node) -> (inode, offset, length); a journaled stop's by (run, "@" + its time)
        self._lines: dict[tuple[str, str], tuple[int, int, int]] = {}
        self._harness: dict[str, str] = {}  # run -> harness of its first logged stop

    def _files(self) -> list[tuple[str, int]]:
        out = []
        for p in (f"{self.path}.1", self.path) if self.path else ():
            try:
                out.append((p, os.stat(p).st_ino))
            except OSError:
                continue
        return out

    def refresh(self) -> None:
        """Index what was appended (or rotated) since the last call."""
        with self._lock:
            files = self._files()
            live = {ino for _, ino in files}
            for ino in [i for i in self._read if i not in live]:
                del self._read[ino]
            for path, ino in files:
                self._scan(path, ino)

    def _scan(self, path: str, ino: int) -> None:
        start = self._read.get(ino, 0)
        try:
            with open(path, "rb") as fh:
                if os.fstat(fh.fileno()).st_ino != ino:
                    return  # rotated between stat and open: the next refresh reads it
                fh.seek(start)
                data = fh.read()
        except OSError:
            return
        end = data.rfind(b"\n") + 1  # a line still being written is read next time
        offset = start
        for line in data[:end].split(b"\n")[:-1]:
            self._index(line, ino, offset)
            offset += len(line) + 1
        self._read[ino] = start + end

    def _index(self, line: bytes, ino: int, offset: int) -> None:
        if b'"session"' not in line:
            return
        try:
            entry = json.loads(line)
        except (ValueError, RecursionError):
            return  # a damaged line is skipped, as every reader of the log does
        if not isinstance(entry, dict) or not isinstance(entry.get("session"), str):
            return
        run = entry["session"]
        if isinstance(entry.get("harness"), str):
            self._harness.setdefault(run, entry["harness"])
        node = entry.get("ledger_node") if _MARK in line else None
        if isinstance(node, str):
            self._lines[(run, node)] = (ino, offset, len(line))
        at = entry.get("ledger_journal") if _JOURNALED in line else None
        if isinstance(at, str):
            self._lines[(run, "@" + at)] = (ino, offset, len(line))

    def harness(self, run: str) -> str | None:
        return self._harness.get(run)

    def entry(self, run: str, node: str, at: str | None = None) -> LogEntry | None:
        """The logged stop that recorded ``node`` of ``run``, decided at ``at`` (its ``at`` in the
        ledger: how a journaled stop is found); None: not in the log any more, or never."""
        self.refresh()
        where = self._lines.get((run, node))
        if where is None and at is not None:
            where = self._lines.get((run, "@" + at))
        if where is None:
            return None
        ino, offset, length = where
        for path, have in self._files():
            if have != ino:
                continue
            try:
                with open(path, "rb") as fh:
                    fh.seek(offset)
                    raw = json.loads(fh.read(length))
            except (OSError, ValueError, RecursionError):
                return None
            if not isinstance(raw, dict):
                return None
            return _entry(raw)
        return None


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _entry(raw: dict[str, Any]) -> LogEntry:
    ts, ms = raw.get("ts"), raw.get("ms")
    return LogEntry(
        harness=raw.get("harness") if isinstance(raw.get("harness"), str) else None,
        fact=raw.get("fact") if isinstance(raw.get("fact"), dict) else None,
        provenance=_dict(raw.get("provenance")),
        decision=_dict(raw.get("decision")),
        loop=raw.get("loop") if isinstance(raw.get("loop"), dict) else None,
        mode=raw.get("mode") if isinstance(raw.get("mode"), str) else None,
        pack=raw.get("pack") if isinstance(raw.get("pack"), str) else None,
        ts=float(ts) if isinstance(ts, (int, float)) and not isinstance(ts, bool) else None,
        ms=float(ms) if isinstance(ms, (int, float)) and not isinstance(ms, bool) else None,
    )
