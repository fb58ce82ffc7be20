"""Facts the ledger tests record, one per kind of outcome in the default pack."""

OK = {"status": "implemented"}  # pass: step
CONTINUITY = {  # continuity_failure: retryable
    "taskState": "complete",
    "nextTaskKnown": True,
    "sameApprovedPlan": True,
    "taskBoundaryStop": True,
    "planId": "P",
    "nextTaskId": "T2",
}
FIXED = {**CONTINUITY, "dispatchReceipt": {"planId": "P", "taskId": "T2", "boundAt": "2025-01-01T00:00:00Z"}}
ESCAPE = {"status": "partial", "turn": 8, "max_turns": 10}  # escape_hatch: retryable
REVIEW = {"status": "blocked", "task_id": "T7"}  # user_review: terminal
FAILED = {"status": "failed"}  # failed: terminal
