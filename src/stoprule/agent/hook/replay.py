"""Replay a recorded transcript: the fact each stop would have seen, boundary by boundary.

A boundary is the end of a turn: just before each new user turn, and the end of the file.
Each stop's fact is made by the hook's own fact path (:func:`stoprule.agent.hook.providers.gather`)
with the ``hook``, ``transcript`` and ``closure`` providers — the closure trailer, the
question to the user, the session mode — the transcript provider given the reader's state at
that point instead of the file. ``state`` and ``git`` are not in a transcript. A final
record without its newline is read (the file is complete when it is replayed).
"""

from __future__ import annotations

from typing import Any

from stoprule.agent.hook.event import HookEvent
from stoprule.agent.hook.providers import Context, Provenance, gather
from stoprule.agent.hook.transcripts.scan import Scan, records

__all__ = ["Boundary", "boundaries", "stop_fact"]

FORMAT_HARNESS = {"claude": "claude-code", "codex": "codex", "gemini": "gemini", "copilot": "copilot",
                  "cursor": "cursor", "antigravity": "antigravity"}  # fmt: skip
REPLAY_PROVIDERS = ("hook", "transcript", "closure")


class Boundary:
    def __init__(self, index: int, line: int, fact: dict[str, Any], provenance: Provenance) -> None:
        self.index, self.line, self.fact, self.provenance = index, line, fact, provenance


def stop_fact(
    scan: dict[str, Any],
    fmt: str,
    mapping: dict[str, str | None],
    *,
    pack: str | None = None,
    mode_setting: str | None = None,
    path: str | None = None,
) -> tuple[dict[str, Any], Provenance]:
    """The fact the hook would build at a stop whose transcript reads as ``scan`` (a reader's
    state) and whose payload carries nothing but the stop."""
    event = HookEvent(harness=FORMAT_HARNESS[fmt], event="stop", transcript_path=path)
    settings = {"enabled": list(REPLAY_PROVIDERS), "fields": mapping, "timeout_ms": 600000}
    ctx = Context(None, "", "", settings, {})
    ctx.pack, ctx.scan, ctx.mode_setting = pack, scan, mode_setting
    return gather(event, ctx)


def boundaries(
    path: str, fmt: str, mapping: dict[str, str | None], *, pack: str | None = None, mode_setting: str | None = None
) -> list[Boundary]:
    """Every stop of the transcript at ``path`` (OSError if unreadable)."""
    out: list[Boundary] = []
    scan = Scan(fmt, full=True)
    line_no = start = 0

    def at(s: Scan) -> None:  # before the record that starts the next turn: the stop's last line is before it
        fact, prov = stop_fact(s.state(), fmt, mapping, pack=pack, mode_setting=mode_setting, path=path)
        out.append(Boundary(len(out) + 1, start, fact, prov))

    scan.on_turn = at
    with open(path, "rb") as fh:
        data = fh.read()
    if data and not data.endswith(b"\n"):
        data += b"\n"  # the last record is complete: the file is no longer being written
    line_no = prev = start = 0
    for record, end in records(data):  # the hook's reader: pretty-printed records too
        start = line_no
        line_no += data.count(b"\n", prev, end)
        prev = end
        if record.strip():
            scan.feed(record)
    start = data.count(b"\n")
    if scan.turns:
        at(scan)
    return out
