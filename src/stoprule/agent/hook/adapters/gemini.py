"""Gemini CLI ``AfterAgent`` (its hooks documentation).

Block: ``{"decision":"deny","reason":M}`` (never with ``stopReason``: Gemini would send
that instead); allow: ``{}``; a note: ``{"systemMessage":R}``. There is no turn id:
the loop guard resets on ``stop_hook_active: false``.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

from stoprule.agent.hook.adapters._common import as_bool, as_str
from stoprule.agent.hook.event import Decision, HookEvent

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["parse", "render"]


def parse(payload: dict[str, Any], event: str | None = None) -> HookEvent:
    return HookEvent(
        harness="gemini",
        event=event or "stop",
        session_id=as_str(payload.get("session_id")),
        turn_id=None,
        cwd=as_str(payload.get("cwd")),
        transcript_path=as_str(payload.get("transcript_path")),
        stop_hook_active=as_bool(payload.get("stop_hook_active")),
        last_message=as_str(payload.get("prompt_response")),
        raw=payload,
    )


def render(decision: Decision, event: HookEvent) -> dict[str, Any] | None:
    out: dict[str, Any] = {}
    if decision.block:
        out = {"decision": "deny", "reason": decision.message or "Continue working."}
    if decision.notice:
        out["systemMessage"] = decision.notice
    return out
