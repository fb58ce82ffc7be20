"""``closure``: what the agent declared in a trailer at the very end of its last message.

The trailer is one or more final lines, each ``stoprule: KEY=VALUE`` (nothing after them
but blank lines)::

    stoprule: closure=<state>
    stoprule: review=The migration needs a production credential only you have.

``closure`` gives the reply's closure state (``closure.state``; a word of ``a-z`` and
``_``); ``review`` asks for user review with the given reason (``closure.review`` true and
``closure.review_reason``). Text elsewhere in the message is never read.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

import re

from stoprule.agent.event import HookEvent

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["parse_trailer", "provide"]

# compiled on first use (re's cache): most messages have no trailer
_LINE = r"^\s*stoprule:\s*(closure|review)\s*=\s*(.*?)\s*$"
_WORD = r"^[a-z_]+$"


def parse_trailer(message: str | None) -> tuple[dict[str, Any], list[str]]:
    if not message or "stoprule:" not in message:
        return {}, []
    obs: dict[str, Any] = {}
    notes: list[str] = []
    lines = message.rstrip().split("\n")
    for line in reversed(lines):
        m = re.match(_LINE, line)
        if m is None:
            break
        key, value = m.groups()
        if key == "closure" and "state" not in obs:
            if re.match(_WORD, value):
                obs["state"] = value
            else:
                notes.append(f"closure value {value!r} is not a word of a-z and _: ignored")
        elif key == "review" and "review" not in obs and value:
            obs["review"] = True
            obs["review_reason"] = value
    return obs, notes


def provide(event: HookEvent, ctx: Any) -> tuple[dict[str, Any], list[str]]:
    return parse_trailer(event.last_message)
