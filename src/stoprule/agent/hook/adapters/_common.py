"""What the adapters share: field readers (payloads are read defensively: wrong types become
None), and the ``Stop``/``SubagentStop`` payload and answer that Claude Code and Codex share.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

from stoprule.agent.hook.event import Decision, HookEvent

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["as_bool", "as_int", "as_str", "foreign_shape", "parse_stop", "render_block_or_note"]


def as_str(value: Any) -> str | None:
    return value if isinstance(value, str) and value != "" else None


def as_bool(value: Any) -> bool:
    return value is True


def as_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def foreign_shape(payload: dict[str, Any]) -> str | None:
    """The harness whose stop payload this is, when it is not Claude Code's or Codex's shape:
    Cursor and Copilot also run ``.claude/settings.json`` hooks."""
    if "conversation_id" in payload and any(
        k in payload for k in ("workspace_roots", "cursor_version", "loop_count", "generation_id")
    ):
        return "cursor"
    copilot_keys = ("stopReason", "transcriptPath", "timestamp", "stopHookActive")
    if "sessionId" in payload and "session_id" not in payload and any(k in payload for k in copilot_keys):
        return "copilot"
    # Copilot CLI (1.0.102) running a Claude Code hook: Claude's names, plus `stop_reason` and a
    # `timestamp`, which Claude Code's Stop payload never has; no last message, no prompt_id
    if "stop_reason" in payload and "timestamp" in payload and "last_assistant_message" not in payload:
        return "copilot"
    return None


def parse_stop(payload: dict[str, Any], event: str | None, *, harness: str, turn_key: str) -> HookEvent:
    """A ``Stop``/``SubagentStop`` payload (a subagent's own transcript when it has one)."""
    name = payload.get("hook_event_name")
    ev = event or ("subagent-stop" if name == "SubagentStop" else "stop")
    transcript = as_str(payload.get("transcript_path"))
    if ev == "subagent-stop":
        transcript = as_str(payload.get("agent_transcript_path")) or transcript
    return HookEvent(
        harness=harness,
        event=ev,
        session_id=as_str(payload.get("session_id")),
        turn_id=as_str(payload.get(turn_key)),
        cwd=as_str(payload.get("cwd")),
        transcript_path=transcript,
        stop_hook_active=as_bool(payload.get("stop_hook_active")),
        last_message=as_str(payload.get("last_assistant_message")),
        raw=payload,
    )


def render_block_or_note(decision: Decision) -> dict[str, Any] | None:
    """``{"decision":"block","reason":M}`` (M never blank), a ``systemMessage`` note for the
    user, both, or None (print nothing: allow)."""
    out: dict[str, Any] = {}
    if decision.block:
        out = {"decision": "block", "reason": (decision.message or "").strip() or "Continue working."}
    if decision.notice and decision.notice.strip():
        out["systemMessage"] = decision.notice
    return out or None
