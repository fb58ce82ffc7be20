"""The default pack's field names (``policies/schema.yaml``), in one table: what the hook's
providers observe (:data:`DEFAULT_FIELDS`, overridable per project in ``providers.fields``)
and what the blocker tools write (:data:`FIELDS`). A pack that names its fields differently
is fed by changing this module (or the project's ``providers.fields``) only.

Imported on the hook's cold path: no imports.
"""

from __future__ import annotations

__all__ = ["DEFAULT_FIELDS", "FIELDS", "REPORT_SECTIONS"]

# What each provider observes (``provider.key``) -> the pack's fact field (None: observed,
# shown in the provenance, not put in the fact). The default pack's field names.
DEFAULT_FIELDS: dict[str, str | None] = {
    "hook.session_id": None,
    "hook.harness": None,
    "hook.event": None,
    "hook.stop_hook_active": None,
    "hook.last_message": None,
    "hook.stopping": "taskBoundaryStop",
    "closure.state": "replyClosureState",
    "closure.review": "requires_user_review",
    "closure.review_reason": "review_reason",
    "closure.question_asked": "questionAsked",
    "closure.question": "questionText",
    "closure.question_again": "questionRepeated",
    "closure.question_why": None,
    "transcript.turns": "turn",
    "transcript.current_task": "currentTask",
    "transcript.task_state": "taskState",
    "transcript.next_task": "nextTaskId",
    "transcript.next_task_known": "nextTaskKnown",
    "transcript.available_tasks": "availableTasks",
    "transcript.failed_tools": None,
    "blockers.openBlockers": "openBlockers",
    "blockers.openBlockerCount": "openBlockerCount",
    "blockers.resolvedBlockers": "resolvedBlockers",
    "blockers.blocked_report": "blocked_report",
    "blockers.logged_this_turn": "blockersThisTurn",
    "blockers.blocked_tasks": None,
    "git.dirty": "uncommittedWork",
    "git.files": "uncommittedFiles",
    "git.count": "uncommittedCount",
    "git.branch": None,
    "git.hidden": None,
    "session.mode": "sessionMode",
    "transcript.versions": None,
    "guard.attempts": "tamperAttempts",
}

# Tool argument -> fact field: what the blocker tools write into the session's facts.
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

# the blocked report's four sections, in the order they are shown
REPORT_SECTIONS: tuple[str, ...] = (
    "blocking_issues", "attempts_made", "suggested_alternatives", "human_action_required",
)  # fmt: skip
