"""Tool argument -> fact field: the names the blocker tools write into facts, as data.

These are the default pack's field names (``policies/schema.yaml``). A pack that
names them differently is fed by changing this table only (issue 8 keeps the hook
providers' mapping in config; at merge time this table can move there).
"""

from __future__ import annotations

__all__ = ["FIELDS", "REPORT_SECTIONS"]

FIELDS: dict[str, str] = {
    # report_status -> the session state (the hook's `state` provider)
    "status": "status",
    "errors": "errors",
    "turn": "turn",
    "max_turns": "max_turns",
    "closure_state": "replyClosureState",
    "task_id": "task_id",
    "available_tasks": "availableTasks",
    "requires_user_review": "requires_user_review",
    "review_reason": "review_reason",
    # the `blockers` provider
    "blocked_report": "blocked_report",
    "open_blockers": "openBlockers",
    "open_blocker_count": "openBlockerCount",
    "resolved_blockers": "resolvedBlockers",
}

# seed 001's four sections, in the order they are shown
REPORT_SECTIONS: tuple[str, ...] = (
    "blocking_issues", "attempts_made", "suggested_alternatives", "human_action_required",
)  # fmt: skip
