"""Claude Code ``Stop`` / ``SubagentStop`` (its hooks reference; docs/agents.md).

Continue (a ``Stop`` the policy blocks): ``{"hookSpecificOutput":{"hookEventName":"Stop",
"additionalContext":M}}`` where the payload has a ``prompt_id`` (Claude Code 2.1.196 and later:
measured on 2.1.332, the binary re-invokes the model with M as "Stop hook additional context",
and the user sees no "blocking error"); else, and for ``SubagentStop``,
``{"decision":"block","reason":M}``. Allow: empty stdout; a note for the user:
``{"systemMessage":R}`` (the model does not see it). The turn is the user prompt (``prompt_id``).

Cursor and Copilot also run ``.claude/settings.json`` hooks: a payload of their shape is read
by their adapter (session, loop count, Cursor's ``status``) and answered in Claude's form.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

from stoprule.agent.hook.adapters._common import foreign_shape, parse_stop, render_block_or_note
from stoprule.agent.hook.event import Decision, HookEvent

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["parse", "render"]


def parse(payload: dict[str, Any], event: str | None = None) -> HookEvent:
    other = foreign_shape(payload)
    if other == "cursor":
        from stoprule.agent.hook.adapters.cursor import parse as parse_cursor

        return parse_cursor(payload, event)
    if other == "copilot":
        from stoprule.agent.hook.adapters.copilot import parse as parse_copilot

        return parse_copilot(payload, event)
    return parse_stop(payload, event, harness="claude-code", turn_key="prompt_id")


def render(decision: Decision, event: HookEvent) -> dict[str, Any] | None:
    if decision.block and event.status not in (None, "completed"):  # Cursor: the user aborted, or an error
        return render_block_or_note(Decision(False, notice=decision.notice))
    if decision.block and event.harness == "claude-code" and event.event == "stop" and event.raw.get("prompt_id"):
        out: dict[str, Any] = {
            "hookSpecificOutput": {
                "hookEventName": "Stop",
                "additionalContext": (decision.message or "").strip() or "Continue working.",
            }
        }
        if decision.notice and decision.notice.strip():
            out["systemMessage"] = decision.notice
        return out
    return render_block_or_note(decision)
