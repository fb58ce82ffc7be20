"""The default pack's decision table as hand-written Python (stdlib only).

Same semantics as ``policies/*.yaml`` (not as the compiled engine): named
conditions expanded by hand, the escape-hatch report checks, receipts
bound/linked, high-risk stops, snake_case aliases. It takes *valid* facts (as
produced by ``facts.py``); it does not validate, render messages or build
verdict envelopes -- it is the lower bound for the decision itself.

``decide(fact) -> (verdict, reason)`` short-circuits at the first row that
fires (the fast path that is timed). Rows are numbered as in DESIGN.md's revised
table (1-14 and 16; row 15, open blockers, needs the blocker tool and is not in
the pack yet). ``matched(fact) -> (rule ids winner
first, high-risk stop id)`` evaluates every rule independently, to compare
with the engine's ``Verdict.matched`` / ``Verdict.high_risk_stop``.

Semantics of absent / null, as the pack declares them: a comparison on a
missing (absent or null) value is false and its negation true; ``exists`` is
"present and not null"; a list ``empty`` when absent (lists default to []);
``not: {status: implemented}`` holds when status is absent.
"""

from __future__ import annotations

from typing import Any

__all__ = ["decide", "matched", "RULE_ORDER"]

HARD = frozenset(
    {
        "mathematically_false",
        "missing_dependency",
        "unresolvable_build_error",
        "invalid_specification",
        "resource_exhausted",
        "strategy_failed",
        "strategy_exhausted",
    }
)
SOFT = frozenset({"timeout", "context_exhaustion_handoff", "phase_incomplete", "mcp_transient"})
CLASSIFIED = HARD | SOFT
LEGAL = frozenset({"waiting_user", "blocked", "pending_verification"})
REPORT_CATS = frozenset({"external_dependency", "test_failure", "architectural", "unclear_requirement"})
# high_risk_stops in declaration order (explicit_high_risk_stop first)
RISKY_TYPES = ("deploy_production", "drop_database", "force_push", "delete_branch", "rotate_secrets")
RISKY = frozenset(RISKY_TYPES)

R1 = ("user_review", "agent_requested_review")
R2 = ("user_review", "max_turns_exceeded")
R3 = ("escape_hatch", "invalid_blocked_report")
R4 = ("escape_hatch", "blocked_report_required")
R5 = ("user_review", "hard_blocker")
R6 = ("user_review", "agent_blocked")
R7 = ("user_review", "unclassified_blocker")
R8 = ("continuity_failure", "missing_auto_next_dispatch")
R9 = ("continuity_failure", "missing_dispatch_receipt")
R10 = ("pass", "high_risk_stop")
R11 = ("failed", "unrecoverable_failure")
R12 = ("auto_continue", "soft_blocker")
R13 = ("auto_continue", "uncommitted_work")
R14 = ("auto_continue", "available_tasks")
R16 = ("pass", "ok")


def _report_invalid(rep: dict[str, Any]) -> bool:
    """Any escape_hatch.report_* rule: a section missing/empty, an entry incomplete, a category unknown."""
    issues = rep.get("blocking_issues")
    if not issues:
        return True
    for it in issues:
        cat = it.get("category")
        if it.get("issue") is None or cat is None or it.get("details") is None:
            return True
        if cat not in REPORT_CATS:
            return True
    attempts = rep.get("attempts_made")
    if not attempts:
        return True
    for a in attempts:
        if a.get("turn") is None or a.get("action") is None or a.get("result") is None:
            return True
    if not rep.get("suggested_alternatives"):
        return True
    h = rep.get("human_action_required")
    return h is None or h == ""


def decide(f: dict[str, Any]) -> tuple[str, str]:
    """The winning (verdict, reason) of the decision table for a valid fact."""
    if f.get("requires_user_review") is True:
        return R1
    status = f.get("status")
    turn = f.get("turn")
    if turn is not None and status != "implemented":
        mx = f.get("max_turns")
        if mx is not None and turn >= mx - 2:
            if turn >= mx:
                return R2
            # near the limit the blocked report comes first, before a hard blocker or blocked status
            rep = f.get("blocked_report")
            if rep is None:
                return R4
            if _report_invalid(rep):
                return R3
    errors = f.get("errors")
    if errors:
        for e in errors:
            if e["type"] in HARD:
                return R5
    if status == "blocked":
        return R6
    if errors:
        for e in errors:
            if e["type"] not in CLASSIFIED:
                return R7
    # continuity: both gates need a completed task and a closure that is not legal
    ts = f["taskState"] if "taskState" in f else f.get("task_state")
    if ts == "complete":
        rcs = f["replyClosureState"] if "replyClosureState" in f else f.get("reply_closure_state")
        if rcs not in LEGAL:
            nda = f["nextDerivedAction"] if "nextDerivedAction" in f else f.get("next_derived_action")
            da = f["derivedAction"] if "derivedAction" in f else f.get("derived_action")
            auto = (
                (f["nextTaskKnown"] if "nextTaskKnown" in f else f.get("next_task_known")) is True
                and (f["sameApprovedPlan"] if "sameApprovedPlan" in f else f.get("same_approved_plan")) is True
                and (f["taskBoundaryStop"] if "taskBoundaryStop" in f else f.get("task_boundary_stop")) is True
            )
            if auto or nda is not None or da is not None:
                bound = linked = False
                rec = f["dispatchReceipt"] if "dispatchReceipt" in f else f.get("dispatch_receipt")
                if rec is not None:
                    plan = f["planId"] if "planId" in f else f.get("plan_id")
                    rplan = rec["planId"] if "planId" in rec else rec.get("plan_id")
                    rtask = rec["taskId"] if "taskId" in rec else rec.get("task_id")
                    rat = rec["boundAt"] if "boundAt" in rec else rec.get("bound_at")
                    bound = plan is not None and rplan == plan and rtask is not None and rat is not None
                    if bound:
                        nxt = f["nextTaskId"] if "nextTaskId" in f else f.get("next_task_id")
                        linked = nxt is not None and rtask == nxt
                fire8 = auto and not linked
                fire9 = (nda is not None or da is not None) and not bound
                if fire8 or fire9:
                    hrs = f["highRiskStop"] if "highRiskStop" in f else f.get("high_risk_stop")
                    high_risk = (
                        hrs is True
                        or (nda is not None and nda.get("type") in RISKY)
                        or (da is not None and da.get("type") in RISKY)
                    )
                    if high_risk:
                        return R10
                    return R8 if fire8 else R9
    if status == "failed":
        return R11
    if status == "partial":
        return R12
    if (f["uncommittedWork"] if "uncommittedWork" in f else f.get("uncommitted_work")) is True:
        return R13
    tasks = f["availableTasks"] if "availableTasks" in f else f.get("available_tasks")
    if tasks and (f["replyClosureState"] if "replyClosureState" in f else f.get("reply_closure_state")) not in LEGAL:
        return R14
    return R16


# ---------------------------------------------------------------- every rule, for verification

# (rule id, priority, file order index) as compiled: files sorted by name, rules in file order
RULE_ORDER = [
    "review.agent_requested_review",
    "review.max_turns_exceeded",
    "escape_hatch.report_missing_blocking_issues",
    "escape_hatch.report_blocking_issue_incomplete",
    "escape_hatch.report_unknown_category",
    "escape_hatch.report_missing_attempts_made",
    "escape_hatch.report_attempt_incomplete",
    "escape_hatch.report_missing_suggested_alternatives",
    "escape_hatch.report_missing_human_action_required",
    "escape_hatch.blocked_report_required",
    "review.hard_blocker_with_report",
    "review.hard_blocker",
    "review.agent_blocked",
    "review.unclassified_blocker",
    "continuity.auto_next_obligation",
    "continuity.missing_dispatch_receipt",
    "continuity.high_risk_stop",
    "progress.unrecoverable_failure",
    "progress.soft_blocker",
    "progress.uncommitted_work",
    "progress.available_tasks",
    "progress.ok",
]


def _a(d: dict[str, Any], key: str, alias: str) -> Any:
    return d[key] if key in d else d.get(alias)


def matched(f: dict[str, Any]) -> tuple[list[str], str | None]:
    """Every rule whose condition holds (winner first) and the first high-risk stop that applies."""
    hit: set[str] = set()
    status = f.get("status")
    not_impl = status != "implemented"
    types = [e["type"] for e in f.get("errors") or ()]
    if f.get("requires_user_review") is True:
        hit.add("review.agent_requested_review")
    if any(t in HARD for t in types):
        hit.add("review.hard_blocker")
        report = f.get("blocked_report")
        if report is not None and report.get("human_action_required") not in (None, ""):
            hit.add("review.hard_blocker_with_report")
    if status == "blocked":
        hit.add("review.agent_blocked")
    turn, mx = f.get("turn"), f.get("max_turns")
    has_turns = turn is not None and mx is not None
    if has_turns and turn >= mx and not_impl:
        hit.add("review.max_turns_exceeded")
    near = has_turns and turn >= mx - 2 and not_impl
    if near:
        rep = f.get("blocked_report")
        if rep is None:
            hit.add("escape_hatch.blocked_report_required")
        else:
            issues = rep.get("blocking_issues") or []
            attempts = rep.get("attempts_made") or []
            if not issues:
                hit.add("escape_hatch.report_missing_blocking_issues")
            if any(i.get("issue") is None or i.get("category") is None or i.get("details") is None for i in issues):
                hit.add("escape_hatch.report_blocking_issue_incomplete")
            if any(i.get("category") is not None and i["category"] not in REPORT_CATS for i in issues):
                hit.add("escape_hatch.report_unknown_category")
            if not attempts:
                hit.add("escape_hatch.report_missing_attempts_made")
            if any(a.get(k) is None for a in attempts for k in ("turn", "action", "result")):
                hit.add("escape_hatch.report_attempt_incomplete")
            if not rep.get("suggested_alternatives"):
                hit.add("escape_hatch.report_missing_suggested_alternatives")
            if rep.get("human_action_required") in (None, ""):
                hit.add("escape_hatch.report_missing_human_action_required")
    if any(t not in CLASSIFIED for t in types):
        hit.add("review.unclassified_blocker")

    nda = _a(f, "nextDerivedAction", "next_derived_action")
    da = _a(f, "derivedAction", "derived_action")
    stop = None
    if _a(f, "highRiskStop", "high_risk_stop") is True:
        stop = "explicit_high_risk_stop"
    else:  # one stop per risky type, in declaration order; each reads both planner intents
        intents = {a.get("type") for a in (nda, da) if a is not None}
        stop = next((t for t in RISKY_TYPES if t in intents), None)
    complete = _a(f, "taskState", "task_state") == "complete"
    legal = _a(f, "replyClosureState", "reply_closure_state") in LEGAL
    auto_boundary = (
        complete
        and _a(f, "nextTaskKnown", "next_task_known") is True
        and _a(f, "sameApprovedPlan", "same_approved_plan") is True
        and _a(f, "taskBoundaryStop", "task_boundary_stop") is True
        and not legal
    )
    receipt_boundary = complete and (nda is not None or da is not None) and not legal
    rec = _a(f, "dispatchReceipt", "dispatch_receipt")
    bound = linked = False
    if rec is not None:
        plan = _a(f, "planId", "plan_id")
        rtask = _a(rec, "taskId", "task_id")
        bound = (
            plan is not None
            and _a(rec, "planId", "plan_id") == plan
            and rtask is not None
            and _a(rec, "boundAt", "bound_at") is not None
        )
        nxt = _a(f, "nextTaskId", "next_task_id")
        linked = bound and nxt is not None and rtask == nxt
    fire8 = auto_boundary and not linked
    fire9 = receipt_boundary and not bound
    if stop is None:
        if fire8:
            hit.add("continuity.auto_next_obligation")
        if fire9:
            hit.add("continuity.missing_dispatch_receipt")
    elif fire8 or fire9:
        hit.add("continuity.high_risk_stop")
    if status == "failed":
        hit.add("progress.unrecoverable_failure")
    if status == "partial":
        hit.add("progress.soft_blocker")
    if _a(f, "uncommittedWork", "uncommitted_work") is True:
        hit.add("progress.uncommitted_work")
    if _a(f, "availableTasks", "available_tasks") and _a(f, "replyClosureState", "reply_closure_state") not in LEGAL:
        hit.add("progress.available_tasks")
    hit.add("progress.ok")
    return [r for r in RULE_ORDER if r in hit], stop
