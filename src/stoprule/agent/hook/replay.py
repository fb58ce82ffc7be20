"""Replay a recorded transcript: the fact each stop would have seen, boundary by boundary.

A boundary is the end of a turn: just before each new user turn, and the end of the file.
The fact is built as the hook builds it, from what a transcript can tell: the ``hook``
observations of a stop, the ``closure`` trailer of the last assistant text, and the
``transcript`` observations up to that point (no ``state``, no ``git``: they are not
recorded in a transcript), mapped by the same ``providers.fields``.
"""

from __future__ import annotations

from typing import Any

from stoprule.agent.hook.providers import Provenance, merge
from stoprule.agent.hook.providers.closure_provider import parse_trailer
from stoprule.agent.hook.transcripts import Scan, observations, records

__all__ = ["Boundary", "boundaries"]

FORMAT_HARNESS = {"claude": "claude-code", "codex": "codex", "gemini": "gemini", "copilot": "copilot",
                  "cursor": "cursor"}  # fmt: skip


class Boundary:
    def __init__(self, index: int, line: int, fact: dict[str, Any], provenance: Provenance) -> None:
        self.index, self.line, self.fact, self.provenance = index, line, fact, provenance


def _fact(scan: Scan, fmt: str, mapping: dict[str, str | None]) -> tuple[dict[str, Any], Provenance]:
    hook = {"harness": FORMAT_HARNESS[fmt], "event": "stop", "stop_hook_active": False, "stopping": True}
    closure, cnotes = parse_trailer(scan.last_text)
    return merge([("hook", hook, []), ("closure", closure, cnotes),
                  ("transcript", observations(scan.state()), [])], mapping)  # fmt: skip


def boundaries(path: str, fmt: str, mapping: dict[str, str | None]) -> list[Boundary]:
    """Every stop of the transcript at ``path`` (OSError if unreadable)."""
    out: list[Boundary] = []
    scan = Scan(fmt, full=True)
    line_no = 0

    def at_turn(s: Scan) -> None:
        fact, prov = _fact(s, fmt, mapping)
        out.append(Boundary(len(out) + 1, line_no, fact, prov))

    scan.on_turn = at_turn
    with open(path, "rb") as fh:
        data = fh.read()
    line_no = prev = 0
    for record, end in records(data):  # the hook's reader: pretty-printed records too
        line_no += data.count(b"\n", prev, end)
        prev = end
        if record.strip():
            scan.feed(record)
    line_no = data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
    if scan.turns:
        fact, prov = _fact(scan, fmt, mapping)
        out.append(Boundary(len(out) + 1, line_no, fact, prov))
    return out
