"""What the compiler produces: plain, picklable data the evaluator runs on.

No pydantic, no YAML: a cached ``CompiledPolicy`` loads without either.
"""

from __future__ import annotations

from .factschema import FactSchema
from .records import record
from .templates import Template

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["CompiledPolicy", "ListSlot", "RuleMeta", "Slot", "StopMeta", "VerdictMeta"]


@record
class Slot:
    """A scalar the rules read: projected under ``key`` from ``path`` (object steps).

    ``marker``: the field is an object or list and only its presence is read
    (projected as ``true``, or ``null`` when null).
    """

    key: str
    path: tuple[str, ...]
    marker: bool = False


@record
class ListSlot:
    """A list the rules quantify over: items under ``key``, length under ``len_key``.

    ``scalar``: items are projected as they are; otherwise each item is projected
    to its ``item_slots``. ``items``: false when the rules read only the length.
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
class CompiledPolicy:
    name: str
    digest: str
    files: tuple[str, ...]
    schema: FactSchema
    slots: tuple[Slot, ...]
    lists: tuple[ListSlot, ...]
    rulesets: tuple[dict[str, Any], ...]
    rules: tuple[RuleMeta, ...]
    stops: tuple[StopMeta, ...]
    verdicts: dict[str, VerdictMeta]
    sets: dict[str, tuple[Any, ...]]
    declarations: dict[str, Any]
