"""What the compiler produces: plain data the evaluator runs on, and its JSON form.

No pydantic, no YAML: a cached ``CompiledPolicy`` loads without either. :func:`to_data` and
:func:`from_data` write it as JSON data (and the JSON texts it holds, apart) and read it back
equal (:mod:`stoprule._util.tagged`: only the record types below are built, so the
compiled-pack cache is data, never code).

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

from stoprule._util import tagged
from stoprule._util.records import Record, record
from stoprule.facts.schema import FactField, FactSchema
from stoprule.language.templates import Template

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any, Protocol, TypeVar

    class Ranked(Protocol):
        @property
        def priority(self) -> int: ...
        @property
        def index(self) -> int: ...

    R = TypeVar("R", bound=Ranked)

__all__ = [
    "CompiledPolicy",
    "ListSlot",
    "RuleMeta",
    "Slot",
    "StopMeta",
    "VerdictMeta",
    "from_data",
    "rank",
    "rank_key",
    "to_data",
]


def rank_key(rule: Ranked) -> tuple[int, int]:
    """Which matching rule wins: the highest priority, then the earliest declared (sorts first).

    The one ordering for the evaluator (compiled rules) and analysis (checked rules)."""
    return (-rule.priority, rule.index)


def rank(rules: Iterable[R]) -> list[R]:
    """``rules`` winner first."""
    return sorted(rules, key=rank_key)


@record
class Slot:
    """A scalar the rules read: projected under ``key`` from ``path`` (object steps).

    ``marker``: the field is an object or list and only its presence is read
    (projected as ``true``, or ``null`` when null). ``test``: ``(function, argument)`` of
    an operator decided while projecting (``glob``, ``starts_with``, ``ends_with``; the
    function is named in :mod:`stoprule.language.patterns`): the slot holds whether a string value
    passes it, and is left out for other values.
    """

    key: str
    path: tuple[str, ...]
    marker: bool = False
    test: tuple[str, Any] | None = None  # (function of stoprule.language.patterns, argument)


@record
class ListSlot(Record):
    """A list the rules quantify over: items under ``key``, length under ``len_key``.

    ``scalar``: items are projected as they are; otherwise each item is projected
    to its ``item_slots`` (an item slot with the empty path reads a scalar item itself).
    ``items``: false when the rules read only the length.
    """

    key: str
    len_key: str
    path: tuple[str, ...]
    scalar: bool
    item_slots: tuple[Slot, ...] = ()
    items: bool = True


@record
class VerdictMeta:
    name: str
    ok: bool
    stop: str
    requires_user_review: bool
    retryable: bool
    description: str | None = None


@record
class RuleMeta:
    id: str
    index: int
    priority: int
    verdict: str
    reason: str
    message: Template
    review_reason: Template | None
    file: str
    line: int
    engine_name: str


@record
class StopMeta:
    id: str
    description: str
    file: str
    line: int
    engine_name: str


@record
class CompiledPolicy(Record):
    name: str
    digest: str
    files: tuple[str, ...]
    schema: FactSchema
    slots: tuple[Slot, ...]
    lists: tuple[ListSlot, ...]
    # each ruleset as the engine is given it (stoprule.engine.durable.encode), kept with the pack
    ruleset_json: tuple[str, ...]
    rules: tuple[RuleMeta, ...]
    stops: tuple[StopMeta, ...]
    verdicts: dict[str, VerdictMeta]
    sets: dict[str, tuple[Any, ...]]
    declarations: dict[str, Any]
    # the projected keys each ruleset reads, when the whole projection is wider than the
    # engine takes in one fact (None: every ruleset gets the whole projection)
    ruleset_keys: tuple[tuple[str, ...], ...] | None = None
    # engine names of the rules and stops whose condition is constant true: not sent to
    # the engine (they would fire on every fact), added to every match by the evaluator
    always: tuple[str, ...] = ()
    # engine names of the rules and stops the engine cannot hold (it refuses their lowered
    # condition): decided by the reference interpreter (stoprule.engine.interpret) per fact
    in_python: tuple[str, ...] = ()
    # every rule's and stop's checked condition by engine name, as JSON text
    # (:func:`stoprule.language.conditions.dump_conditions`): read only where the engine cannot
    # decide (``in_python``, or a fact that meets an engine limit while matching)
    conditions: str = ""

    @property
    def rulesets(self) -> tuple[dict[str, Any], ...]:
        """Each ruleset as data (:attr:`ruleset_json` read back), for tools and tests: the engine
        is given the text, and neither the pack nor its cache holds the data twice."""
        from stoprule._util.jsonin import loads

        return tuple(loads(text) for text in self.ruleset_json)


# the record types of a compiled pack: the only types reading its JSON form builds
_TYPES: dict[str, type] = {
    t.__name__: t for t in (CompiledPolicy, Slot, ListSlot, VerdictMeta, RuleMeta, StopMeta, FactField, FactSchema)
}


def to_data(compiled: CompiledPolicy) -> tuple[Any, list[str]]:
    """``compiled`` as JSON data (see :mod:`stoprule._util.tagged`), and apart from it the JSON
    texts it holds (its rulesets as the engine is given them, then its conditions), each an empty
    string in the data: a cache keeps them as they are, where in the data each would be a JSON
    string whose escaping every start undoes."""
    texts = [*compiled.ruleset_json, compiled.conditions]
    from stoprule._util.tagged_dump import dump

    kept = compiled._replace(ruleset_json=("",) * len(compiled.ruleset_json), conditions="")
    return dump(kept, _TYPES), texts


def from_data(data: Any, texts: list[str]) -> CompiledPolicy:
    """The compiled pack :func:`to_data` wrote; ValueError for anything else."""
    compiled = tagged.load(data, _TYPES)
    if type(compiled) is not CompiledPolicy:
        raise ValueError("not a compiled pack")
    if len(texts) != len(compiled.ruleset_json) + 1 or any(compiled.ruleset_json) or compiled.conditions:
        raise ValueError("not the compiled pack's texts")
    return compiled._replace(ruleset_json=tuple(texts[:-1]), conditions=texts[-1])
