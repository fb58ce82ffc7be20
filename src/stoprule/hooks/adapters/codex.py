"""Codex ``Stop`` / ``SubagentStop`` (HARNESSES.md § 2; wire schemas in ``codex-hooks/``).

The output schema forbids unknown keys and a block needs a non-blank reason. Block:
``{"decision":"block","reason":M}``; allow: empty stdout; a note: ``{"systemMessage":R}``.
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
        harness="codex",
        event=ev,
        session_id=as_str(payload.get("session_id")),
        turn_id=as_str(payload.get("turn_id")),
        cwd=as_str(payload.get("cwd")),
        transcript_path=transcript,
        stop_hook_active=as_bool(payload.get("stop_hook_active")),
        last_message=as_str(payload.get("last_assistant_message")),
        raw=payload,
    )


def render(decision: Decision, event: HookEvent) -> dict[str, Any] | None:
    out: dict[str, Any] = {}
    if decision.block:
        reason = (decision.message or "").strip() or "Continue working."
        out = {"decision": "block", "reason": reason}
    if decision.notice and decision.notice.strip():
        out["systemMessage"] = decision.notice
    return out or None
