"""The neutral stop event every adapter parses into, and the decision every adapter renders.

Neither knows any harness: an adapter maps its harness's payload onto :class:`HookEvent`
and a :class:`Decision` onto its harness's output.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

from stoprule.diagnostics import AgentError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["MAX_PAYLOAD_BYTES", "Decision", "HookEvent", "PayloadError"]

MAX_PAYLOAD_BYTES = 8 << 20  # a larger stdin is not parsed: an internal error (fail policy)


class PayloadError(AgentError, ValueError):
    """The harness's stdin is not a usable payload (not JSON, not an object)."""


class HookEvent:
    """One stop (or subagent stop) as any harness reports it.

    ``turn_id``: ``prompt_id`` (Claude Code), ``turn_id`` (Codex), None where the harness
    has none; ``flag_known``: the harness sends ``stop_hook_active`` (Copilot: only when the
    key is present); ``loop_count``: Cursor's own count of follow-ups already sent;
    ``status``: Cursor's completed | aborted | error. (A plain class: ``dataclasses``
    would cost the hook's cold start ~10 ms.)
    """

    __slots__ = ("cwd", "event", "flag_known", "harness", "last_message", "loop_count", "raw", "session_id",
                 "status", "stop_hook_active", "transcript_path", "turn_id")  # fmt: skip

    def __init__(
        self,
        harness: str,
        event: str,
        session_id: str | None = None,
        turn_id: str | None = None,
        cwd: str | None = None,
        transcript_path: str | None = None,
        stop_hook_active: bool = False,
        flag_known: bool = True,
        loop_count: int | None = None,
        last_message: str | None = None,
        status: str | None = None,
        raw: dict[str, Any] | None = None,
    ) -> None:
        self.harness, self.event, self.session_id, self.turn_id = harness, event, session_id, turn_id
        self.cwd, self.transcript_path = cwd, transcript_path
        self.stop_hook_active, self.flag_known, self.loop_count = stop_hook_active, flag_known, loop_count
        self.last_message, self.status, self.raw = last_message, status, raw if raw is not None else {}

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={getattr(self, k)!r}" for k in self.__slots__ if k != "raw")
        return f"HookEvent({fields})"


class Decision:
    """What the harness is told: allow the stop or block it with ``message`` as the agent's
    next instruction; ``notice`` is for the user (where the harness has a user channel)."""

    __slots__ = ("block", "message", "notice")

    def __init__(self, block: bool, message: str | None = None, notice: str | None = None) -> None:
        self.block, self.message, self.notice = block, message, notice

    def __repr__(self) -> str:
        return f"Decision(block={self.block!r}, message={self.message!r}, notice={self.notice!r})"
