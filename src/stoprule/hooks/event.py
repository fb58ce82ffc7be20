"""The neutral stop event every adapter parses into, and the decision every adapter renders.

Neither knows any harness: an adapter maps its harness's payload onto :class:`HookEvent`
and a :class:`Decision` onto its harness's output.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Decision", "HookEvent", "PayloadError"]


class PayloadError(ValueError):
    """The harness's stdin is not a usable payload (not JSON, not an object)."""


@dataclass
class HookEvent:
    """One stop (or subagent stop) as any harness reports it."""

    harness: str
    event: str  # "stop" | "subagent-stop"
    session_id: str | None = None
    turn_id: str | None = None  # prompt_id (Claude Code), turn_id (Codex); None where the harness has none
    cwd: str | None = None
    transcript_path: str | None = None
    stop_hook_active: bool = False
    flag_known: bool = True  # the harness sends stop_hook_active (Copilot: only when the key is present)
    loop_count: int | None = None  # Cursor's own count of follow-ups already sent
    last_message: str | None = None
    status: str | None = None  # Cursor: completed | aborted | error
    raw: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass
class Decision:
    """What the harness is told: allow the stop or block it with ``message`` as the agent's
    next instruction; ``notice`` is for the user (where the harness has a user channel)."""

    block: bool
    message: str | None = None
    notice: str | None = None
