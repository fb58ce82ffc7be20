"""The checked policy: what the compiler's type-check stage hands to every consumer.

Immutable and free of the compiler's working state: no pydantic specs, no YAML marks,
no values whose type changes between stages. Conditions are type-checked trees
(:mod:`stoprule.language.conditions`) that keep their references by name: ``ref:`` and
``high_risk_stop:`` nodes carry their resolved ``body``, set-valued atoms their ``set``.
Analysis, coverage, explain, diff and the lowering to the engine read only this.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from stoprule.facts.schema import FactSchema
from stoprule.language.conditions import Atom, Cond, HighRisk, Loc, Ref, iter_nodes
from stoprule.language.templates import Template

__all__ = [
    "CheckedPolicy",
    "CheckedRule",
    "CheckedSet",
    "CheckedStop",
    "CheckedVerdict",
    "FieldPath",
    "NamedCondition",
]

FieldPath = tuple[str, ...]  # list elements are the step "[]"


@dataclass(frozen=True)
class CheckedRule:
    """A rule: ``id`` is pack-wide (``<file stem>.<id>``), ``index`` its declaration order."""

    id: str
    index: int
    priority: int
    verdict: str
    reason: str
    when: Cond
    message: Template
    review_reason: Template | None
    loc: Loc
    when_loc: Loc
    description: str | None = None


@dataclass(frozen=True)
class CheckedStop:
    """A declared high-risk stop."""

    id: str
    index: int
    description: str
    when: Cond
    loc: Loc
    when_loc: Loc


@dataclass(frozen=True)
class CheckedSet:
    """A named set: its members and where each is written.

    ``section`` is the pack section that declared it (``sets``, ``blocker_categories``,
    ``legal_closure_states``); ``within`` names the set that groups it, if any (the
    classes of ``blocker_categories`` are grouped by ``blocker_categories``).
    """

    name: str
    members: tuple[Any, ...]
    loc: Loc
    member_locs: tuple[Loc, ...]
    section: str
    within: str | None = None


@dataclass(frozen=True)
class NamedCondition:
    name: str
    when: Cond
    loc: Loc


@dataclass(frozen=True)
class CheckedVerdict:
    """A verdict kind: whether it is ok and what a stop hook should do."""

    name: str
    ok: bool
    stop: str
    requires_user_review: bool
    retryable: bool
    description: str | None
    loc: Loc


@dataclass(frozen=True)
class CheckedPolicy:
    """A pack that loaded, resolved and type-checked (frozen; its mappings are read-only views).

    ``field_locs`` maps every schema field path to its declaration; ``declarations``
    lists blocker categories, closure states and high-risk stops as data; ``inventory``
    is every declaration as ``section -> name -> value`` (for ``diff``).
    """

    root: str
    name: str
    digest: str
    files: tuple[str, ...]
    loc: Loc  # the start of the pack's first file
    schema: FactSchema
    schema_loc: Loc | None
    field_locs: Mapping[FieldPath, Loc]
    rules: tuple[CheckedRule, ...]
    stops: tuple[CheckedStop, ...]
    sets: Mapping[str, CheckedSet]
    conditions: Mapping[str, NamedCondition]
    verdicts: Mapping[str, CheckedVerdict]
    declarations: Mapping[str, Any]
    inventory: Mapping[str, Mapping[str, Any]]

    def conditions_in_use(self) -> Iterator[Cond]:
        """The ``when`` of every rule, then of every high-risk stop."""
        yield from (r.when for r in self.rules)
        yield from (s.when for s in self.stops)

    def field_loc(self, path: FieldPath) -> Loc | None:
        return self.field_locs.get(path, self.schema_loc)


def referenced_names(c: Cond) -> tuple[set[str], set[str], set[str]]:
    """Named conditions, sets and high-risk stops that ``c`` refers to (through its refs)."""
    conds: set[str] = set()
    sets: set[str] = set()
    stops: set[str] = set()
    for n in iter_nodes(c):
        if isinstance(n, Ref):
            conds.add(n.name)
        elif isinstance(n, HighRisk):
            stops.update(n.stops)
        elif isinstance(n, Atom) and n.set is not None:
            sets.add(n.set)
    return conds, sets, stops
