"""Antigravity CLI (``agy``) ``Stop`` (its published hook notes; no binary run here).

Its hooks file (``.agents/hooks.json``, ``~/.gemini/config/hooks.json``) maps a hook *name* to
events, ``Stop`` a flat list of handlers. The payload is camelCase: ``conversationId`` (the
session), ``transcriptPath``, ``workspacePaths``, ``modelName``, ``artifactDirectoryPath``;
``Stop`` adds ``terminationReason``, ``fullyIdle``, ``executionNum``, ``error`` (agy 1.1.27). No
``stop_hook_active`` and no turn id: the loop guard ends a series only on an allowed stop.

Continue: ``{"decision":"continue","reason":M}`` (agy 1.2.6's own hook notes; a third party
says ``"block"``: UNCONFIRMED either way, and a wrong value only lets the stop through); allow:
``{}``. A stop whose turn ended in an ``error`` is let go (no continuation into a failing
model call). There is no user channel: notes go to stderr and the log. No session-start hook
is wired (its answer's shape is unpublished), so the first stop's dirty files are the baseline.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

from stoprule.agent.hook.adapters._common import as_str
from stoprule.agent.hook.event import Decision, HookEvent

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["SESSION_START", "parse", "render"]

# no session-start hook is wired: the first stop's dirty files are the session's baseline
SESSION_START = False


def parse(payload: dict[str, Any], event: str | None = None) -> HookEvent:
    roots = payload.get("workspacePaths")
    cwd = as_str(payload.get("cwd")) or (as_str(roots[0]) if isinstance(roots, list) and roots else None)
    error = payload.get("error")
    return HookEvent(
        harness="antigravity",
        event=event or "stop",
        session_id=as_str(payload.get("conversationId")) or as_str(payload.get("session_id")),
        turn_id=None,
        cwd=cwd,
        transcript_path=as_str(payload.get("transcriptPath")) or as_str(payload.get("transcript_path")),
        flag_known=False,
        last_message=as_str(payload.get("last_assistant_message")),
        status="error" if error not in (None, "", False, {}) else None,
        raw=payload,
    )


def render(decision: Decision, event: HookEvent) -> dict[str, Any] | None:
    if decision.block and event.status is None:
        return {"decision": "continue", "reason": decision.message or "Continue working."}
    return {}
