"""Claude Code ``Stop`` / ``SubagentStop`` (HARNESSES.md § 1).

Block: ``{"decision":"block","reason":M}``; allow: empty stdout; a note for the user:
``{"systemMessage":R}`` (the model does not see it).
"""

from __future__ import annotations

from typing import Any

from ..event import Decision, HookEvent
from ._common import as_bool, as_str

__all__ = ["parse", "render"]


def parse(payload: dict[str, Any], event: str | None = None) -> HookEvent:
    name = payload.get("hook_event_name")
    ev = event or ("subagent-stop" if name == "SubagentStop" else "stop")
    transcript = as_str(payload.get("transcript_path"))
    if ev == "subagent-stop":
        transcript = as_str(payload.get("agent_transcript_path")) or transcript
    return HookEvent(
        harness="claude-code",
        event=ev,
        session_id=as_str(payload.get("session_id")),
        turn_id=as_str(payload.get("prompt_id")),
        cwd=as_str(payload.get("cwd")),
        transcript_path=transcript,
        stop_hook_active=as_bool(payload.get("stop_hook_active")),
        last_message=as_str(payload.get("last_assistant_message")),
        raw=payload,
    )


def render(decision: Decision, event: HookEvent) -> dict[str, Any] | None:
    out: dict[str, Any] = {}
    if decision.block:
        out = {"decision": "block", "reason": decision.message or "Continue working."}
    if decision.notice:
        out["systemMessage"] = decision.notice
    return out or None
