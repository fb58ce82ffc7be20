"""Codex ``Stop`` / ``SubagentStop`` (its hooks documentation; wire schemas vendored in
``tests/fixtures/codex-hooks/``).

The output schema forbids unknown keys and a block needs a non-blank reason. Block:
``{"decision":"block","reason":M}``; allow: empty stdout; a note: ``{"systemMessage":R}``.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

from stoprule.agent.hook.adapters._common import parse_stop, render_block_or_note
from stoprule.agent.hook.event import Decision, HookEvent

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["parse", "render"]


def parse(payload: dict[str, Any], event: str | None = None) -> HookEvent:
    return parse_stop(payload, event, harness="codex", turn_key="turn_id")


def render(decision: Decision, event: HookEvent) -> dict[str, Any] | None:
    return render_block_or_note(decision)
