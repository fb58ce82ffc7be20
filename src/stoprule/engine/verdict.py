"""The decision for one fact: :class:`Verdict` (the winner and every matched rule, as
:class:`Match`), what every caller of the evaluator gets.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

from stoprule._util.records import Record, record

__all__ = ["Match", "Verdict"]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


@record
class Match:
    rule: str
    verdict: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"rule": self.rule, "verdict": self.verdict, "reason": self.reason}


@record
class Verdict(Record):
    """The decision for one fact; ``matched`` lists every matching rule, winner first."""

    ok: bool
    verdict: str
    reason: str
    rule: str
    stop: str
    message: str
    requires_user_review: bool
    review_reason: str | None
    high_risk_stop: str | None
    matched: tuple[Match, ...]
    policy: str
    warnings: tuple[dict[str, str], ...] = ()  # unknown fields and the like (see FactSchema.warnings)

    @classmethod
    def from_dict(cls, data: Any) -> Verdict:
        """The verdict :meth:`to_dict` wrote (a service's envelope and a ledger journal's line hold
        one, with fields of their own beside it); KeyError or TypeError for one it did not write."""
        return cls(
            ok=data["ok"],
            verdict=data["verdict"],
            reason=data["reason"],
            rule=data["rule"],
            stop=data["stop"],
            message=data["message"],
            requires_user_review=data["requires_user_review"],
            review_reason=data.get("review_reason"),
            high_risk_stop=data.get("high_risk_stop"),
            matched=tuple(Match(m["rule"], m["verdict"], m["reason"]) for m in data["matched"]),
            policy=data["policy"],
            warnings=tuple(data.get("warnings") or ()),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "verdict": self.verdict,
            "reason": self.reason,
            "rule": self.rule,
            "stop": self.stop,
            "message": self.message,
            "requires_user_review": self.requires_user_review,
            "review_reason": self.review_reason,
            "high_risk_stop": self.high_risk_stop,
            "matched": [m.to_dict() for m in self.matched],
            "policy": self.policy,
            **({"warnings": list(self.warnings)} if self.warnings else {}),
        }
