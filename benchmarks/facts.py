"""Deterministic generator of valid facts for the default pack (stdlib only).

Every fact is built *for* one row of the decision table in DESIGN.md ("Default
pack: decision table", revised): the aspects that feed higher-priority rows are
kept quiet, the aspect of the target row fires, and the aspects of lower-priority
rows are random (so facts match several rules and ``matched`` varies). Targets
are drawn uniformly, so each of the 15 rows in the pack (1-14 and 16; row 15,
open blockers, needs the blocker tool) wins about 1/15 of the facts. Every value
of a closed vocabulary (``status``, ``taskState``, ``replyClosureState``) is one
of its enum's values: the facts are valid.

The construction is independent of ``baseline.py``: the two are compared
against each other and against stoprule in ``bench_throughput.py``.

    python benchmarks/facts.py [N] [SEED]     # prints N facts as NDJSON (default 5)
"""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Iterator
from typing import Any

__all__ = ["EDGE_FACTS", "ROWS", "fact_pool", "generate", "generate_with_targets", "iter_facts", "iter_targets"]

# (row number, verdict, reason), highest priority first -- DESIGN.md decision table (revised)
ROWS: list[tuple[int, str, str]] = [
    (1, "user_review", "agent_requested_review"),
    (2, "user_review", "max_turns_exceeded"),
    (3, "escape_hatch", "invalid_blocked_report"),
    (4, "escape_hatch", "blocked_report_required"),
    (5, "user_review", "hard_blocker"),
    (6, "user_review", "agent_blocked"),
    (7, "user_review", "unclassified_blocker"),
    (8, "continuity_failure", "missing_auto_next_dispatch"),
    (9, "continuity_failure", "missing_dispatch_receipt"),
    (10, "pass", "high_risk_stop"),
    (11, "failed", "unrecoverable_failure"),
    (12, "auto_continue", "soft_blocker"),
    (13, "auto_continue", "uncommitted_work"),
    (14, "auto_continue", "available_tasks"),
    (16, "pass", "ok"),
]

SOFT = ["timeout", "context_exhaustion_handoff", "phase_incomplete", "mcp_transient"]
HARD = [
    "mathematically_false",
    "missing_dependency",
    "unresolvable_build_error",
    "invalid_specification",
    "resource_exhausted",
    "strategy_failed",
    "strategy_exhausted",
]
UNKNOWN_ERRORS = ["segfault", "flaky_network", "TIMEOUT", "timeout ", "oom", ""]
LEGAL = ["waiting_user", "blocked", "pending_verification"]
NOT_LEGAL = ["completed", "in_progress"]  # the rest of the replyClosureState enum
NOT_COMPLETE = ["pending", "in_progress", "failed"]  # the rest of the taskState enum
REPORT_CATS = ["external_dependency", "test_failure", "architectural", "unclear_requirement"]
RISKY = ["deploy_production", "drop_database", "force_push", "delete_branch", "rotate_secrets"]
BENIGN_ACTIONS = ["implement_task", "run_tests", "open_pr", "deploy_staging", "push"]

# camelCase field -> snake_case alias declared in policies/schema.yaml
ALIASES = {
    "planId": "plan_id",
    "currentTask": "current_task",
    "taskState": "task_state",
    "nextTaskKnown": "next_task_known",
    "nextTaskId": "next_task_id",
    "sameApprovedPlan": "same_approved_plan",
    "taskBoundaryStop": "task_boundary_stop",
    "highRiskStop": "high_risk_stop",
    "replyClosureState": "reply_closure_state",
    "nextDerivedAction": "next_derived_action",
    "derivedAction": "derived_action",
    "dispatchReceipt": "dispatch_receipt",
    "uncommittedWork": "uncommitted_work",
    "availableTasks": "available_tasks",
}
RECEIPT_ALIASES = {"planId": "plan_id", "taskId": "task_id", "boundAt": "bound_at"}

ABSENT = object()  # "leave the field out"


def _put(d: dict[str, Any], key: str, value: Any) -> None:
    if value is not ABSENT:
        d[key] = value


class _Gen:
    def __init__(self, rng: random.Random) -> None:
        self.r = rng

    # ------------------------------------------------------------ small pieces
    def chance(self, p: float) -> bool:
        return self.r.random() < p

    def pick(self, seq: list[Any]) -> Any:
        return seq[self.r.randrange(len(seq))]

    def task(self) -> str:
        return f"T{self.r.randrange(1, 400)}"

    def plan(self) -> str:
        return f"plan-{self.r.randrange(1, 60)}"

    def ts(self) -> str:
        return f"2025-0{self.r.randrange(1, 10)}-1{self.r.randrange(0, 10)}T12:{self.r.randrange(10, 60)}:00Z"

    def maybe(self, value: Any, p_absent: float = 0.3, p_null: float = 0.0) -> Any:
        x = self.r.random()
        if x < p_absent:
            return ABSENT
        if x < p_absent + p_null:
            return None
        return value

    # ------------------------------------------------------------ review (row 1)
    def review(self, fire: bool, f: dict[str, Any]) -> None:
        if fire:
            f["requires_user_review"] = True
            f["review_reason"] = self.pick(["Need a decision on the API.", "Ambiguous spec.", "x"])
            return
        _put(f, "requires_user_review", self.pick([False, ABSENT, ABSENT]))
        _put(f, "review_reason", self.pick([ABSENT, ABSENT, None, "", "earlier note"]))

    # ------------------------------------------------------------ errors (rows 5, 7)
    def error(self, etype: str) -> dict[str, Any]:
        e: dict[str, Any] = {"type": etype}
        _put(e, "message", self.maybe(f"{etype} happened", 0.3, 0.1))
        _put(e, "recoverable", self.maybe(self.chance(0.5), 0.5, 0.1))
        _put(e, "recommendation", self.maybe("retry later", 0.6, 0.1))
        return e

    def errors(self, kind: str, f: dict[str, Any]) -> None:
        """kind: hard (has a hard type), unknown (has an unclassified type, no hard), soft, any."""
        if kind == "any":
            kind = self.pick(["hard", "unknown", "soft", "soft", "soft"])
        types = [self.pick(SOFT) for _ in range(self.r.randrange(0, 3))]
        if kind == "hard":
            types.append(self.pick(HARD))
            if self.chance(0.3):
                types.append(self.pick(UNKNOWN_ERRORS))
        elif kind == "unknown":
            types.append(self.pick(UNKNOWN_ERRORS))
        self.r.shuffle(types)
        if not types and self.chance(0.5):
            return  # absent: defaults to []
        f["errors"] = [self.error(t) for t in types]

    # ------------------------------------------------------------ turns (rows 2-4)
    def turns(self, zone: str, f: dict[str, Any]) -> None:
        """zone: far (turn < max-2), near (max-2 <= turn < max), over (turn >= max), absent."""
        mx = self.r.randrange(3, 40)
        if zone == "far":
            turn = self.r.randrange(0, mx - 2)
        elif zone == "near":
            turn = self.r.randrange(mx - 2, mx)
        elif zone == "over":
            turn = self.r.randrange(mx, mx + 5)
        else:  # one or both missing: the turn rules cannot fire
            which = self.r.randrange(3)
            if which == 0:
                f["max_turns"] = mx
            elif which == 1:
                f["turn"] = self.r.randrange(0, mx + 5)
            return
        f["turn"] = turn
        f["max_turns"] = mx

    # ------------------------------------------------------------ blocked report (rows 3, 4)
    def valid_report(self) -> dict[str, Any]:
        issues = []
        for _ in range(self.r.randrange(1, 4)):
            it: dict[str, Any] = {
                "issue": self.pick(["tests fail", "API unclear", "dep missing"]),
                "category": self.pick(REPORT_CATS),
                "details": self.pick(["see log", "no docs", "404 from registry"]),
            }
            _put(it, "location", self.maybe("src/x.py:10", 0.5, 0.1))
            issues.append(it)
        attempts = []
        for i in range(self.r.randrange(1, 4)):
            a: dict[str, Any] = {"turn": i + 1, "action": "tried a fix", "result": "still failing"}
            _put(a, "why_failed", self.maybe("wrong approach", 0.4, 0.1))
            attempts.append(a)
        return {
            "blocking_issues": issues,
            "attempts_made": attempts,
            "suggested_alternatives": ["ask the owner"] * self.r.randrange(1, 3),
            "human_action_required": self.pick(["Approve the schema change.", "Provide the API key.", " "]),
        }

    def invalid_report(self) -> dict[str, Any]:
        rep = self.valid_report()
        defects = self.r.randrange(1, 3)
        for _ in range(defects):
            kind = self.r.randrange(13)
            if kind == 0:
                rep.pop("blocking_issues", None)  # absent -> default []
            elif kind == 1:
                rep["blocking_issues"] = []
            elif kind in (2, 3, 4) and rep.get("blocking_issues"):
                it = self.pick(rep["blocking_issues"])
                key = ("issue", "category", "details")[kind - 2]
                if self.chance(0.5):
                    it.pop(key, None)
                else:
                    it[key] = None
            elif kind == 5 and rep.get("blocking_issues"):
                self.pick(rep["blocking_issues"])["category"] = self.pick(
                    ["security", "Test_Failure", "test failure", "other", ""]
                )
            elif kind == 6:
                rep.pop("attempts_made", None)
            elif kind == 7:
                rep["attempts_made"] = []
            elif kind in (8, 9, 10) and rep.get("attempts_made"):
                a = self.pick(rep["attempts_made"])
                key = ("turn", "action", "result")[kind - 8]
                if self.chance(0.5):
                    a.pop(key, None)
                else:
                    a[key] = None
            elif kind == 11:
                if self.chance(0.5):
                    rep.pop("suggested_alternatives", None)
                else:
                    rep["suggested_alternatives"] = []
            else:
                x = self.r.randrange(3)
                if x == 0:
                    rep.pop("human_action_required", None)
                else:
                    rep["human_action_required"] = None if x == 1 else ""
        if self.report_ok(rep):  # every defect hit an already-removed section: force one
            rep["suggested_alternatives"] = []
        return rep

    @staticmethod
    def report_ok(rep: dict[str, Any]) -> bool:
        bi = rep.get("blocking_issues") or []
        am = rep.get("attempts_made") or []
        return bool(
            bi
            and am
            and rep.get("suggested_alternatives")
            and rep.get("human_action_required") not in (None, "")
            and all(
                i.get("issue") is not None and i.get("details") is not None and i.get("category") in REPORT_CATS
                for i in bi
            )
            and all(a.get(k) is not None for a in am for k in ("turn", "action", "result"))
        )

    def report(self, kind: str, f: dict[str, Any]) -> None:
        """kind: valid, invalid, none (absent or null), any."""
        if kind == "any":
            kind = self.pick(["valid", "invalid", "none", "none"])
        if kind == "valid":
            f["blocked_report"] = self.valid_report()
        elif kind == "invalid":
            f["blocked_report"] = self.invalid_report()
        elif self.chance(0.3):
            f["blocked_report"] = None

    # ------------------------------------------------------------ continuity (rows 8-10)
    def not_legal(self) -> Any:
        return self.pick([ABSENT, ABSENT, None, *NOT_LEGAL])

    def next_action(self, risky: bool | None) -> Any:
        """A planner-intent object; risky=None: benign or missing type."""
        if risky:
            return {"type": self.pick(RISKY), "task": self.task()}
        act: dict[str, Any] = {}
        _put(act, "type", self.maybe(self.pick(BENIGN_ACTIONS), 0.15, 0.1))
        _put(act, "task", self.maybe(self.task(), 0.3, 0.1))
        return act

    def receipt(self, f: dict[str, Any], want: str) -> None:
        """want: linked, bound (bound, not linked), unbound, any."""
        if want == "any":
            want = self.pick(["linked", "bound", "unbound", "unbound"])
        plan = f.get("planId")
        nxt = f.get("nextTaskId")
        if want == "linked":
            assert plan is not None and nxt is not None
            f["dispatchReceipt"] = {"planId": plan, "taskId": nxt, "boundAt": self.ts()}
            return
        if want == "bound":
            assert plan is not None
            other = self.task()
            while other == nxt:
                other = self.task()
            f["dispatchReceipt"] = {"planId": plan, "taskId": other, "boundAt": self.ts()}
            return
        # unbound: no receipt, or a receipt lacking one of its three parts
        how = self.r.randrange(7)
        if how == 0:
            return
        if how == 1:
            f["dispatchReceipt"] = None
            return
        rec: dict[str, Any] = {"planId": plan, "taskId": nxt or self.task(), "boundAt": self.ts()}
        if how == 2:
            rec["planId"] = "plan-other"
        elif how == 3:
            if self.chance(0.5):
                rec.pop("planId")
            else:
                rec["planId"] = None
        elif how == 4:
            if self.chance(0.5):
                rec.pop("taskId")
            else:
                rec["taskId"] = None
        elif how == 5:
            if self.chance(0.5):
                rec.pop("boundAt")
            else:
                rec["boundAt"] = None
        else:  # the fact names no plan: nothing can be bound to it
            f.pop("planId", None)
        f["dispatchReceipt"] = rec

    def plan_ids(self, f: dict[str, Any], next_known: bool) -> None:
        f["planId"] = self.plan()
        _put(f, "currentTask", self.maybe(self.task(), 0.2))
        if next_known:
            f["nextTaskId"] = self.task()
        else:
            _put(f, "nextTaskId", self.maybe(self.task(), 0.5, 0.3))

    def auto_flags(self, auto: bool, f: dict[str, Any]) -> None:
        """nextTaskKnown/sameApprovedPlan/taskBoundaryStop: all true, or at least one not."""
        if auto:
            f["nextTaskKnown"] = f["sameApprovedPlan"] = f["taskBoundaryStop"] = True
            return
        flags = [True, True, True]
        flags[self.r.randrange(3)] = False
        for i in range(3):
            if self.chance(0.3):
                flags[i] = False
        for name, val in zip(("nextTaskKnown", "sameApprovedPlan", "taskBoundaryStop"), flags, strict=True):
            _put(f, name, ABSENT if (not val and self.chance(0.4)) else val)

    def high_risk(self, on: bool, f: dict[str, Any], action: bool) -> None:
        """Set highRiskStop / nextDerivedAction; action: whether a next action is known."""
        if on:
            explicit = self.chance(0.5)
            if explicit:
                f["highRiskStop"] = True
            else:
                _put(f, "highRiskStop", self.pick([False, ABSENT]))
            if not explicit or (action and self.chance(0.5)):
                f["nextDerivedAction"] = self.next_action(risky=not explicit or self.chance(0.5))
            elif action:
                f["nextDerivedAction"] = self.next_action(None)
            else:
                _put(f, "nextDerivedAction", self.pick([ABSENT, None]))
            return
        _put(f, "highRiskStop", self.pick([False, ABSENT]))
        if action:
            f["nextDerivedAction"] = self.next_action(None)
        else:
            _put(f, "nextDerivedAction", self.pick([ABSENT, None]))

    def derived(self, known: bool, f: dict[str, Any], risky: bool = False) -> None:
        """derivedAction (dry-run intent); its type is a high-risk stop like nextDerivedAction's."""
        if known and self.chance(0.4):
            f["derivedAction"] = self.next_action(risky and self.chance(0.5))
        else:
            _put(f, "derivedAction", self.pick([ABSENT, ABSENT, None]))

    def continuity(self, kind: str, f: dict[str, Any]) -> None:
        """kind: auto (row 8), receipt (row 9), risk (row 10), quiet (none of 8-10), any."""
        if kind == "any":
            kind = self.pick(["auto", "receipt", "risk", "quiet", "quiet", "quiet"])
        if kind == "auto":
            # complete, flags all true, closure not legal, no high risk, not linked
            self.plan_ids(f, next_known=self.chance(0.85))
            f["taskState"] = "complete"
            self.auto_flags(True, f)
            _put(f, "replyClosureState", self.not_legal())
            action = self.chance(0.5)
            self.high_risk(False, f, action)
            self.derived(self.chance(0.3), f)
            self.receipt(f, self.pick(["bound", "unbound", "unbound"]))
        elif kind == "receipt":
            # complete, a next action known, closure not legal, no high risk, not bound, not auto
            self.plan_ids(f, next_known=self.chance(0.5))
            f["taskState"] = "complete"
            self.auto_flags(False, f)
            _put(f, "replyClosureState", self.not_legal())
            nda = self.chance(0.6)
            self.high_risk(False, f, nda)
            if nda:
                self.derived(True, f)
            else:  # only the dry-run intent is known
                f["derivedAction"] = self.next_action(None)
            self.receipt(f, "unbound")
        elif kind == "risk":
            # a high-risk stop where row 8 or row 9 would otherwise fire
            auto = self.chance(0.5)
            self.plan_ids(f, next_known=auto or self.chance(0.5))
            f["taskState"] = "complete"
            self.auto_flags(auto, f)
            _put(f, "replyClosureState", self.not_legal())
            if self.chance(0.3):  # the risk is only in the dry-run derivedAction
                self.high_risk(False, f, action=False)
                f["derivedAction"] = self.next_action(True)
            else:
                self.high_risk(True, f, action=not auto)  # not auto: nextDerivedAction is set
                self.derived(self.chance(0.3), f, risky=True)
            self.receipt(f, self.pick(["bound", "unbound"]) if auto else "unbound")
        else:
            self.quiet_continuity(f)

    def quiet_continuity(self, f: dict[str, Any]) -> None:
        way = self.r.randrange(6)
        if way == 5:
            return  # no continuity fields at all
        risk = self.chance(0.2)
        if way == 0:  # not at a completed-task boundary: anything else goes
            self.plan_ids(f, next_known=self.chance(0.5))
            _put(f, "taskState", self.pick([ABSENT, *NOT_COMPLETE]))
            self.auto_flags(self.chance(0.5), f)
            _put(f, "replyClosureState", self.pick([ABSENT, *LEGAL, *NOT_LEGAL]))
            self.high_risk(risk, f, self.chance(0.5))
            self.derived(self.chance(0.5), f, risky=True)
            self.receipt(f, "unbound")
        elif way == 1:  # complete, but the closure is legal
            self.plan_ids(f, next_known=self.chance(0.7))
            f["taskState"] = "complete"
            self.auto_flags(self.chance(0.5), f)
            f["replyClosureState"] = self.pick(LEGAL)
            self.high_risk(risk, f, self.chance(0.5))
            self.derived(self.chance(0.5), f, risky=True)
            self.receipt(f, "unbound")
        elif way == 2:  # complete, not auto, no next action known
            self.plan_ids(f, next_known=self.chance(0.5))
            f["taskState"] = "complete"
            self.auto_flags(False, f)
            _put(f, "replyClosureState", self.not_legal())
            _put(f, "highRiskStop", self.pick([False, ABSENT, True]))
            _put(f, "nextDerivedAction", self.pick([ABSENT, None]))
            _put(f, "derivedAction", self.pick([ABSENT, None]))
            self.receipt(f, "any" if f.get("nextTaskId") else "unbound")
        elif way == 3:  # complete, auto, receipt linked
            self.plan_ids(f, next_known=True)
            f["taskState"] = "complete"
            self.auto_flags(True, f)
            _put(f, "replyClosureState", self.not_legal())
            self.high_risk(risk, f, self.chance(0.5))
            self.derived(self.chance(0.3), f, risky=True)
            self.receipt(f, "linked")
        else:  # complete, not auto, next action known, receipt bound
            self.plan_ids(f, next_known=self.chance(0.5))
            f["taskState"] = "complete"
            self.auto_flags(False, f)
            _put(f, "replyClosureState", self.not_legal())
            self.high_risk(risk, f, True)
            self.derived(True, f, risky=True)
            self.receipt(f, "linked" if f.get("nextTaskId") and self.chance(0.5) else "bound")

    # ------------------------------------------------------------ progress (rows 11-14)
    def progress(self, kind: str, f: dict[str, Any]) -> None:
        """kind: uncommitted (row 13), available (row 14), none (row 16), any."""
        if kind == "any":
            kind = self.pick(["uncommitted", "available", "none"])
        tasks = [self.task() for _ in range(self.r.randrange(1, 4))]
        if kind == "uncommitted":
            f["uncommittedWork"] = True
            _put(f, "availableTasks", self.pick([ABSENT, [], tasks]))
        elif kind == "available":
            _put(f, "uncommittedWork", self.pick([ABSENT, False]))
            f["availableTasks"] = tasks
        else:
            _put(f, "uncommittedWork", self.pick([ABSENT, False]))
            _put(f, "availableTasks", self.pick([ABSENT, []]))

    # ------------------------------------------------------------ one fact
    def fact(self, row: int) -> dict[str, Any]:
        f: dict[str, Any] = {}
        if self.chance(0.7):
            f["task_id"] = self.task()
        r = row
        self.review(r == 1, f)
        self.errors(
            "any"
            if r <= 4
            else "hard"
            if r == 5
            else "unknown"
            if r == 7
            else "soft"
            if r > 7
            else self.pick(["unknown", "soft", "soft"]),
            f,
        )
        # status: rows 2-4 not implemented (blocked too: the report comes first);
        # 6 blocked; 11 failed; 12 partial
        if r == 1:
            status = self.pick([ABSENT, "implemented", "partial", "failed", "blocked"])
        elif r <= 4:
            status = self.pick([ABSENT, "partial", "failed", "blocked"])
        elif r == 5:
            status = self.pick([ABSENT, "implemented", "partial", "failed", "blocked"])
        elif r == 6:
            status = "blocked"
        elif r <= 10:
            status = self.pick([ABSENT, "implemented", "partial", "failed"])
        elif r == 11:
            status = "failed"
        elif r == 12:
            status = "partial"
        else:
            status = self.pick([ABSENT, "implemented"])
        _put(f, "status", status)
        if status == "partial" and self.chance(0.5):
            f["partial_progress"] = {"stage": "phase 2", "handoff_path": self.maybe("notes/handoff.md", 0.3, 0.2)}
            if f["partial_progress"]["handoff_path"] is ABSENT:
                del f["partial_progress"]["handoff_path"]
        # turns: 2 over; 3/4 near; below them: anything that cannot fire 2-4 (near the
        # limit only with a valid report)
        if r == 1 or status == "implemented":
            zone = self.pick(["far", "near", "over", "absent"])
        elif r == 2:
            zone = "over"
        elif r in (3, 4):
            zone = "near"
        else:
            zone = self.pick(["far", "far", "absent", "near"])
        self.turns(zone, f)
        if r == 3:
            report = "invalid"
        elif r == 4:
            report = "none"
        elif r > 4 and zone == "near" and status != "implemented":
            report = "valid"
        else:
            report = "any"
        self.report(report, f)
        cont = {8: "auto", 9: "receipt", 10: "risk"}.get(r, "any" if r < 8 else "quiet")
        self.continuity(cont, f)
        self.progress({13: "uncommitted", 14: "available", 16: "none"}.get(r, "any"), f)
        if self.chance(0.1):
            f["id"] = self.r.randrange(5)  # extra fields are allowed; "id" must not collide in the engine
        if self.chance(0.1):
            f["session"] = {"agent": "claude", "n": self.r.randrange(100)}
        if self.chance(0.2):
            f = self.aliased(f)
        return f

    def aliased(self, f: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in f.items():
            if k in ALIASES and self.chance(0.6):
                k = ALIASES[k]
            if k in ("dispatchReceipt", "dispatch_receipt") and isinstance(v, dict):
                v = {(RECEIPT_ALIASES[a] if a in RECEIPT_ALIASES and self.chance(0.5) else a): x for a, x in v.items()}
            out[k] = v
        return out


_AUTO = {"taskState": "complete", "nextTaskKnown": True, "sameApprovedPlan": True, "taskBoundaryStop": True}

# Hand-written edge cases (large lists, odd strings, boundary numbers) checked
# against the baseline in bench_throughput.py besides the generated facts.
EDGE_FACTS: dict[str, dict[str, Any]] = {
    "300 availableTasks": {"availableTasks": [f"T{i}" for i in range(300)]},
    "300 soft errors then an unknown one": {"errors": [{"type": "timeout"}] * 300 + [{"type": "zzz"}]},
    "120 soft errors then a hard one": {"errors": [{"type": "timeout"}] * 120 + [{"type": "missing_dependency"}]},
    "unicode and quotes in linked ids": {
        **_AUTO,
        "planId": 'pl\u00e4n"x',
        "nextTaskId": "T\u00e9\\1",
        "dispatchReceipt": {"planId": 'pl\u00e4n"x', "taskId": "T\u00e9\\1", "boundAt": "now"},
    },
    "empty-string ids, linked": {
        **_AUTO,
        "planId": "",
        "nextTaskId": "",
        "dispatchReceipt": {"planId": "", "taskId": "", "boundAt": ""},
    },
    "plan '1' vs '1.0'": {
        **_AUTO,
        "planId": "1",
        "nextTaskId": "2",
        "dispatchReceipt": {"planId": "1.0", "taskId": "2", "boundAt": "x"},
    },
    "plan '01' vs '1'": {
        **_AUTO,
        "planId": "01",
        "nextTaskId": "2",
        "dispatchReceipt": {"planId": "1", "taskId": "2", "boundAt": "x"},
    },
    "plan 'true'": {
        **_AUTO,
        "planId": "true",
        "nextTaskId": "2",
        "dispatchReceipt": {"planId": "true", "taskId": "2", "boundAt": "x"},
    },
    "turn 2**40 near max": {"turn": 2**40, "max_turns": 2**40 + 1, "status": "partial"},
    "negative turns": {"turn": -5, "max_turns": -4, "status": "partial"},
    "turn 0 of 1": {"turn": 0, "max_turns": 1},
    "turn 0 of 2, implemented": {"turn": 0, "max_turns": 2, "status": "implemented"},
    "extra '_' and 'id' fields": {"_": 0, "id": "x", "status": "partial"},
    "5000-char linked ids": {
        **_AUTO,
        "planId": "p" * 5000,
        "nextTaskId": "t" * 3000,
        "dispatchReceipt": {"planId": "p" * 5000, "taskId": "t" * 3000, "boundAt": "x"},
    },
    "5000-char plan ids differing at the end": {
        **_AUTO,
        "planId": "p" * 5000 + "a",
        "nextTaskId": "t",
        "dispatchReceipt": {"planId": "p" * 5000 + "b", "taskId": "t", "boundAt": "x"},
    },
    "101 blocking issues, the last one unknown": {
        "turn": 9,
        "max_turns": 10,
        "blocked_report": {
            "blocking_issues": [{"issue": "i", "category": "architectural", "details": "d"}] * 100
            + [{"issue": "i", "category": "zzz", "details": "d"}],
            "attempts_made": [{"turn": 1, "action": "a", "result": "r"}],
            "suggested_alternatives": ["s"],
            "human_action_required": "h",
        },
    },
    "empty nextDerivedAction object": {**_AUTO, "nextTaskKnown": False, "nextDerivedAction": {}},
    "risky dry-run derivedAction only (alias)": {**_AUTO, "planId": "p", "derived_action": {"type": "drop_database"}},
    "benign nextDerivedAction, risky derivedAction": {
        **_AUTO,
        "nextTaskKnown": False,
        "nextDerivedAction": {"type": "run_tests"},
        "derivedAction": {"type": "rotate_secrets"},
    },
    "hard blocker near the limit, no report": {"turn": 3, "max_turns": 5, "errors": [{"type": "strategy_failed"}]},
    "blocked near the limit, valid report": {
        "turn": 4,
        "max_turns": 5,
        "status": "blocked",
        "blocked_report": {
            "blocking_issues": [{"issue": "i", "category": "architectural", "details": "d"}],
            "attempts_made": [{"turn": 1, "action": "a", "result": "r"}],
            "suggested_alternatives": ["s"],
            "human_action_required": "h",
        },
    },
    "hard blocker past the limit, report without human action": {
        "turn": 7,
        "max_turns": 5,
        "errors": [{"type": "missing_dependency"}],
        "blocked_report": {"human_action_required": ""},
    },
    "nextDerivedAction type null, highRiskStop alias": {
        **_AUTO,
        "high_risk_stop": True,
        "nextDerivedAction": {"type": None},
    },
}


def iter_targets(n: int, seed: int = 20250101) -> Iterator[tuple[int, dict[str, Any]]]:
    """``n`` (target row, fact) pairs, deterministic for a given seed; rows drawn uniformly."""
    rng = random.Random(seed)
    g = _Gen(rng)
    rows = [r for r, _, _ in ROWS]
    for _ in range(n):
        r = rng.choice(rows)
        yield r, g.fact(r)


def iter_facts(n: int, seed: int = 20250101) -> Iterator[dict[str, Any]]:
    for _, fact in iter_targets(n, seed):
        yield fact


def generate(n: int, seed: int = 20250101) -> list[dict[str, Any]]:
    return list(iter_facts(n, seed))


def generate_with_targets(n: int, seed: int = 20250101) -> list[tuple[int, dict[str, Any]]]:
    """Like :func:`generate`, with the row each fact was built for."""
    return list(iter_targets(n, seed))


def fact_pool(n: int = 10_000, seed: int = 20250101) -> list[dict[str, Any]]:
    return generate(n, seed)


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 20250101
    for fact in iter_facts(n, seed):
        print(json.dumps(fact, sort_keys=True))
