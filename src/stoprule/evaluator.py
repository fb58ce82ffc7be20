"""Evaluate facts against a compiled pack: validate, project, match, pick the winner."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Literal, NamedTuple

from .compiled import CompiledPolicy, ListSlot, RuleMeta, Slot
from .diagnostics import FactError
from .engine import Engine
from .schema import MISSING
from .templates import render

__all__ = ["Evaluator", "Match", "Verdict"]


class Match(NamedTuple):
    rule: str
    verdict: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"rule": self.rule, "verdict": self.verdict, "reason": self.reason}


class Verdict(NamedTuple):
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
        }


Getter = Callable[[dict[str, Any]], Any]


def _getter(path: tuple[str, ...], marker: bool) -> Getter:
    """Read ``path`` through nested objects; MISSING when a step is absent or null."""
    head, rest = path[0], path[1:]

    def get(fact: dict[str, Any]) -> Any:
        cur = fact.get(head, MISSING)
        for p in rest:
            if type(cur) is not dict:
                return MISSING
            cur = cur.get(p, MISSING)
        if marker and cur is not MISSING and cur is not None:
            return True
        return cur

    return get


def _projector(slots: tuple[Slot, ...], lists: tuple[ListSlot, ...]) -> Callable[[dict], dict]:
    scalars = [(s.key, _getter(s.path, s.marker)) for s in slots]
    listy = []
    for ls in lists:
        items = [(s.key, _getter(s.path, s.marker)) for s in ls.item_slots]
        listy.append((ls.key, ls.len_key, _getter(ls.path, False), ls.scalar, items))

    def project(fact: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {"_": 1}
        for key, get in scalars:
            v = get(fact)
            if v is not MISSING:
                out[key] = v
        for key, len_key, get, scalar, items in listy:
            seq = get(fact)
            if type(seq) is not list:
                out[len_key] = 0
                continue
            out[len_key] = len(seq)
            if scalar:
                out[key] = seq
            else:
                projected = []
                for item in seq:
                    row = {}
                    for k, g in items:
                        v = g(item)
                        if v is not MISSING:
                            row[k] = v
                    projected.append(row)
                out[key] = projected
        return out

    return project


class Evaluator:
    """A compiled pack ready to evaluate facts (compile once, evaluate many)."""

    def __init__(self, compiled: CompiledPolicy) -> None:
        self.compiled = compiled
        self.digest = compiled.digest
        self._engine = Engine(compiled.rulesets)
        self._project = _projector(compiled.slots, compiled.lists)
        self._rules = {r.engine_name: r for r in compiled.rules}
        self._stops = {s.engine_name: s for s in compiled.stops}
        self._stop_order = [s.engine_name for s in compiled.stops]

    @property
    def schema(self):  # noqa: ANN201 - FactSchema
        return self.compiled.schema

    def validate(self, fact: Any) -> dict[str, Any]:
        """The fact as the rules see it (aliases resolved, defaults filled) or FactError."""
        return self.compiled.schema.validate(fact)

    def evaluate(self, fact: Any) -> Verdict:
        """Validate and evaluate one fact; raises :class:`FactError` if it is invalid."""
        data = self.compiled.schema.validate(fact)
        return self._decide(data, self._engine.match(self._project(data)))

    def evaluate_many(
        self, facts: Iterable[Any], *, on_error: Literal["raise", "return"] = "raise"
    ) -> list[Verdict | FactError]:
        """Evaluate facts in order; with ``on_error="return"`` bad facts yield their FactError."""
        out: list[Verdict | FactError] = []
        validate = self.compiled.schema.validate
        match = self._engine.match
        project = self._project
        for i, fact in enumerate(facts):
            try:
                data = validate(fact)
            except FactError as exc:
                if on_error == "raise":
                    raise
                exc.extra.setdefault("index", i)
                out.append(exc)
                continue
            out.append(self._decide(data, match(project(data))))
        return out

    def matched_rules(self, fact: Any) -> list[RuleMeta]:
        """Every rule whose condition holds, winner first."""
        data = self.compiled.schema.validate(fact)
        names = self._engine.match(self._project(data))
        return self._ranked(names)

    def _ranked(self, names: set[str]) -> list[RuleMeta]:
        rules = [self._rules[n] for n in names if n in self._rules]
        rules.sort(key=lambda r: (-r.priority, r.index))
        return rules

    def _decide(self, data: dict[str, Any], names: set[str]) -> Verdict:
        ranked = self._ranked(names)
        high_risk = next((self._stops[n].id for n in self._stop_order if n in names), None)
        if not ranked:
            raise FactError(
                "policy.no_rule",
                "no rule matched this fact and the pack has no catch-all rule",
            )
        win = ranked[0]
        kind = self.compiled.verdicts[win.verdict]
        sets = self.compiled.sets
        message = render(win.message, data, sets)
        review = None
        if kind.requires_user_review:
            review = render(win.review_reason, data, sets) if win.review_reason else message
        return Verdict(
            ok=kind.ok,
            verdict=win.verdict,
            reason=win.reason,
            rule=win.id,
            stop=kind.stop,
            message=message,
            requires_user_review=kind.requires_user_review,
            review_reason=review,
            high_risk_stop=high_risk,
            matched=tuple(Match(r.id, r.verdict, r.reason) for r in ranked),
            policy=self.digest,
        )
