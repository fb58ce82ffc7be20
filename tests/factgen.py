"""Facts for differential tests and fuzzing: random facts of the default pack's shape,
hypothesis strategies (any JSON value; schema-shaped facts with the edges of every type, and
the ``default-fuzz`` / ``torture-fuzz`` profiles), and the generated validator compared with
the closures it stands in for."""

from __future__ import annotations

import os
import random
from functools import cache
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from stoprule import EvaluationError
from stoprule.engine.build import Compilation, compile_pack
from stoprule.facts.schema import FactField
from torture import scaled

DEFAULT_PACK = Path(__file__).resolve().parent.parent / "policies"


@cache
def default_build() -> Compilation:
    """The default pack compiled once per process (its checked and compiled forms)."""
    return compile_pack(DEFAULT_PACK)


TYPES = ["timeout", "mcp_transient", "mathematically_false", "strategy_failed", "weird", "phase_incomplete"]
CLOSURES = ["completed", "waiting_user", "blocked", "pending_verification", None]
ACTIONS = ["message_subagent", "deploy_production", "force_push", "rotate_secrets", None]


def _maybe(rng: random.Random, value: Any, p: float = 0.5) -> Any:
    return value if rng.random() < p else None


def random_fact(rng: random.Random) -> dict[str, Any]:
    f: dict[str, Any] = {}
    put = f.__setitem__
    if rng.random() < 0.7:
        put("status", rng.choice(["implemented", "partial", "failed", "blocked"]))
    if rng.random() < 0.15:
        put("requires_user_review", True)
        put("review_reason", "why")
    if rng.random() < 0.5:
        put("errors", [{"type": rng.choice(TYPES)} for _ in range(rng.randint(0, 3))])
    if rng.random() < 0.5:
        mt = rng.randint(3, 8)
        put("max_turns", mt)
        put("turn", mt + rng.randint(-4, 1))
    elif rng.random() < 0.2:
        put("turn", rng.randint(0, 5))
    if rng.random() < 0.3:
        report: dict[str, Any] = {}
        if rng.random() < 0.8:
            report["blocking_issues"] = [
                {
                    k: v
                    for k, v in {
                        "issue": _maybe(rng, "i", 0.9),
                        "category": rng.choice(["external_dependency", "architectural", "bogus", None]),
                        "details": _maybe(rng, "d", 0.9),
                    }.items()
                    if v is not None or rng.random() < 0.3
                }
                for _ in range(rng.randint(0, 2))
            ]
        if rng.random() < 0.8:
            report["attempts_made"] = [
                {"turn": 1, "action": "a", "result": _maybe(rng, "r", 0.8)} for _ in range(rng.randint(0, 2))
            ]
        if rng.random() < 0.8:
            report["suggested_alternatives"] = ["s"] * rng.randint(0, 2)
        if rng.random() < 0.8:
            report["human_action_required"] = rng.choice(["do x", "", None])
        put("blocked_report", report if rng.random() < 0.9 else None)
    if rng.random() < 0.6:
        put("taskState", rng.choice(["complete", "complete", "in_progress"]))
        put("planId", rng.choice(["p1", "p2"]))
        put("nextTaskId", rng.choice(["t9", "t10", None]))
        for k in ("nextTaskKnown", "sameApprovedPlan", "taskBoundaryStop"):
            put(k, rng.random() < 0.8)
        put("highRiskStop", rng.random() < 0.15)
        put("replyClosureState", rng.choice(CLOSURES))
        if rng.random() < 0.6:
            put("nextDerivedAction", {"type": rng.choice(ACTIONS)} if rng.random() < 0.9 else None)
        if rng.random() < 0.3:
            put("derivedAction", {"type": "x"})
        if rng.random() < 0.6:
            put(
                "dispatchReceipt",
                {
                    k: v
                    for k, v in {
                        "planId": rng.choice(["p1", "p2", None]),
                        "taskId": rng.choice(["t9", "t10", None]),
                        "boundAt": rng.choice(["2026-01-01", None]),
                    }.items()
                    if v is not None or rng.random() < 0.5
                }
                if rng.random() < 0.9
                else None,
            )
    if rng.random() < 0.2:
        put("uncommittedWork", True)
    if rng.random() < 0.2:
        put("availableTasks", ["a"] * rng.randint(0, 2))
    if rng.random() < 0.3:  # blockers logged with the blocker tool (rows 15 and 16)
        n = rng.randint(0, 2)
        put("openBlockers", [{"question": "q", "blocksProgress": rng.random() < 0.5} for _ in range(n)])
        put("openBlockerCount", n)
    if rng.random() < 0.3:  # a question at the stop (the closure provider's fields)
        put("questionAsked", rng.random() < 0.7)
        put("questionRepeated", rng.random() < 0.3)
        put("blockersThisTurn", rng.randint(0, 1))
    if rng.random() < 0.1:  # the agent's refused attempts (row 17)
        put("tamperAttempts", ["guard: Bash: runs `stoprule blockers off`"] * rng.randint(0, 1))
    if rng.random() < 0.15:  # which event asks (TaskCompleted), the user's /blockers off
        put("stopEvent", rng.choice(["stop", "subagent-stop", "task-completed"]))
        put("blockersOff", rng.random() < 0.5)
    return f


LONG = os.environ.get("STOPRULE_FUZZ_EXAMPLES")
# the default tier is short (a few dozen facts a property); `-m torture` runs them long
settings.register_profile(
    "default-fuzz", max_examples=int(LONG or 40), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "torture-fuzz", max_examples=int(LONG or scaled(20000)), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)

INT_EDGES = [0, 1, -1, 2, -2, 3, 7, 8, 10, 2**31, -(2**31), 2**53, -(2**53), 2**63 - 1, -(2**63), 2**63, -(2**63) - 1]
FLOAT_EDGES = [0.0, -0.0, 0.5, 1e-09, 1e-300, 5e-324, 1e308, -1e308, 1.7976931348623157e308, 3.0, -2.5]
TEXT_EDGES = ["", "a", "x" * 300, "café", "日本", "🙂", "a\u2028b", "\ud800", "a\x00b", "%d", "*", "[!]]x", "\\"]

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.sampled_from(INT_EDGES),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(FLOAT_EDGES),
    st.text(),
    st.sampled_from(TEXT_EDGES),
)
any_json = st.recursive(
    json_scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=12,
)


def value_of(f: FactField) -> st.SearchStrategy[Any]:
    """A value for ``f``: mostly of its type (edges included), sometimes null or anything."""
    t = f.type
    if t == "bool":
        own: st.SearchStrategy[Any] = st.booleans()
    elif t == "int":
        own = st.one_of(st.sampled_from(INT_EDGES), st.integers(-12, 12), st.integers())
    elif t == "number":
        own = st.one_of(st.sampled_from(INT_EDGES + FLOAT_EDGES), st.floats(allow_nan=False, allow_infinity=False))
    elif t == "string":
        own = st.one_of(st.sampled_from(TEXT_EDGES), st.text(max_size=6), st.sampled_from(["p1", "p2", "t9", "t10"]))
    elif t == "enum":
        own = st.one_of(st.sampled_from(list(f.values)), st.sampled_from([v.upper() for v in f.values] + ["", "x"]))
    elif t == "list":
        assert f.items is not None
        own = st.lists(value_of(f.items), max_size=3)
    else:
        own = object_of(f)
    return st.one_of(own, own, own, st.none(), any_json)


def object_of(f: FactField) -> st.SearchStrategy[dict[str, Any]]:
    fields = {name: value_of(child) for name, child in f.fields.items()}
    return st.fixed_dictionaries({}, optional=fields)


def same_as_closures(schema: Any, fact: Any) -> None:
    """The generated validator accepts only what the closures accept, with the same result
    (keys, order, values) and the same unknown fields; what it refuses, they name."""
    found: list[str] = []
    try:
        fast = schema._fast(fact, found)
    except Exception:  # noqa: BLE001 - the closures decide
        fast = None
    try:
        slow = schema._validate(fact)
    except EvaluationError:
        assert fast is None, fact
        return
    if fast is not None:
        assert list(fast.items()) == list(slow.items()) and repr(fast) == repr(slow), fact
        assert schema._unknown_warnings(found) == ([] if not fact else schema.warnings(fact)), fact
    assert schema.check(fact) == (slow, schema.warnings(fact)) == schema.check_direct(fact), fact
