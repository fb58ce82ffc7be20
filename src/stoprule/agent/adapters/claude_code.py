"""Claude Code ``Stop`` / ``SubagentStop`` (its hooks reference; docs/agents.md).

Block: ``{"decision":"block","reason":M}``; allow: empty stdout; a note for the user:
``{"systemMessage":R}`` (the model does not see it). The turn is the user prompt
(``prompt_id``, Claude Code 2.1.196 and later).

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

from stoprule.agent.adapters._common import parse_stop, render_block_or_note
from stoprule.agent.event import Decision, HookEvent

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["parse", "render"]


def parse(payload: dict[str, Any], event: str | None = None) -> HookEvent:
    return parse_stop(payload, event, harness="claude-code", turn_key="prompt_id")


def render(decision: Decision, event: HookEvent) -> dict[str, Any] | None:
    return render_block_or_note(decision)
