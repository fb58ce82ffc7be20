"""Claude Code ``Stop`` / ``SubagentStop`` (its hooks reference; docs/agents.md).

Block: ``{"decision":"block","reason":M}``; allow: empty stdout; a note for the user:
``{"systemMessage":R}`` (the model does not see it). The turn is the user prompt
(``prompt_id``, Claude Code 2.1.196 and later).

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
    return render_block_or_note(decision)
