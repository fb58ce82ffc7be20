"""Antigravity's ``brain/<conversation>/.system_generated/logs/transcript.jsonl`` (public sessions:
the CLI, 2026-07; the 2.0 desktop app, 2026-09): one step a line, ``{step_index, source, type,
status, created_at, content, ...}``.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

from stoprule._util.regex import lazy

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from stoprule.agent.hook.transcripts._common import ScanState

__all__ = ["read", "wanted"]

_WANTED = (b'"USER_INPUT"', b'"PLANNER_RESPONSE"', b'"error"', b'"ERROR"', b"exit code", b"exited with code")
# a command's end in an Antigravity step: the CLI's "failed with exit code: N", the IDE's "exited with code N."
_EXIT = lazy(r"(?m)^[ \t]*The command (?:failed with exit code:|exited with code)\s*(-?\d+)")
# the user's own words in an Antigravity USER_INPUT step (the rest is metadata Antigravity adds)
_REQUEST = lazy(r"(?s)<USER_REQUEST>\s*(.*?)\s*(?:</USER_REQUEST>|\Z)")


def wanted(scan: ScanState, line: bytes) -> bool:
    """A compact line worth decoding: a prompt, a response, an error or a command's end."""
    return any(k in line for k in _WANTED)


def read(scan: ScanState, obj: dict[str, Any]) -> None:
    """One step. A turn is a ``USER_INPUT`` the user sent (``source`` ``USER_EXPLICIT``; other
    sources are injected), its words inside ``<USER_REQUEST>``; the last message is the latest
    ``PLANNER_RESPONSE`` with text; a step with an ``error`` (or status ``ERROR``), or whose command
    ended with a code N other than 0 (a ``RUN_COMMAND`` or ``GENERIC`` step, or a background task's
    ``SYSTEM_MESSAGE``: "failed with exit code: N" in the CLI, "exited with code N." in the IDE), failed."""
    kind = obj.get("type")
    if not isinstance(kind, str):
        scan.skip("a step without a type")
        return
    text = obj["content"] if isinstance(obj.get("content"), str) else ""
    if kind == "USER_INPUT":
        if obj.get("source") == "USER_EXPLICIT":
            m = _REQUEST.search(text)
            scan.prompt(m.group(1) if m else text)
            scan.turn()
    elif kind == "PLANNER_RESPONSE":
        if text.strip():
            scan.last_text = text
    else:
        step, error = f"step-{obj.get('step_index')}", obj.get("error")
        m = _EXIT.search(text) if kind in ("RUN_COMMAND", "GENERIC", "SYSTEM_MESSAGE") else None
        if (isinstance(error, str) and error.strip()) or obj.get("status") == "ERROR":
            scan.fail(kind.lower(), error if isinstance(error, str) and error.strip() else text, step)
        elif m and int(m.group(1)) != 0:
            scan.fail("run_command", text[m.start() :], step)
