"""The decision for one fact: :class:`Verdict` (the winner and every matched rule, as
:class:`Match`), what every caller of the evaluator gets.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

from stoprule._util.records import Record, record

__all__ = ["Match", "Verdict", "prototype"]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from stoprule.engine.compiled import CompiledPolicy, RuleMeta
    from stoprule.language.templates import Template


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


# positions in a Verdict: of the messages
_MESSAGE, _REVIEW = Verdict._fields.index("message"), Verdict._fields.index("review_reason")


def prototype(compiled: CompiledPolicy, rule: RuleMeta) -> tuple[Verdict, tuple[tuple[int, Template], ...]]:
    """The verdict ``rule`` gives when it wins, with its message (and review reason), matches,
    high-risk stop and warnings still to be put in, and the templates of its messages by their
    position in the verdict (a review without a review reason of its own shows the message)."""
    kind = compiled.verdicts[rule.verdict]
    review = kind.requires_user_review
    new: Any = tuple.__new__  # a Verdict is a tuple: built without its __new__'s Python frame
    proto = new(
        Verdict,
        (kind.ok, rule.verdict, rule.reason, rule.id, kind.stop, "", review, None, None, (), compiled.digest, ()),
    )
    if not review:
        return proto, ((_MESSAGE, rule.message),)
    return proto, ((_MESSAGE, rule.message), (_REVIEW, rule.review_reason or rule.message))
