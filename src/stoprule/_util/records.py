"""``@record``: an annotated class made an immutable tuple, as ``typing.NamedTuple`` does.

The rule for records, in one place (``docs/STYLE.md`` says it too): a record is a frozen
dataclass (``@dataclass(frozen=True)``); ``@record`` takes its place only in the modules of the
hook's and ``eval``'s cold path (``tools/import_graph.py``: ``COLD_PATH``, ``COLD_PATH_WHEN``),
where importing ``dataclasses`` (it imports ``inspect``) would be paid on every start, and for
what is built once per fact there (a verdict is a tuple). Input a user writes (a pack, a config
file) is validated by pydantic models; an object whose fields change is a plain dataclass or
class. Fields are the class's annotations in order; class attributes give defaults.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

from collections import namedtuple

__all__ = ["Record", "record"]


TYPE_CHECKING = False
if TYPE_CHECKING:  # type checkers see a frozen, ordered dataclass with the same fields
    from collections.abc import Iterable
    from typing import Any, ClassVar, TypeVar

    from typing_extensions import Self, dataclass_transform

    _T = TypeVar("_T")

    class Record:
        """Base of records that use the tuple's own helpers (for type checkers)."""

        _fields: ClassVar[tuple[str, ...]]

        def _replace(self, **changes: Any) -> Self: ...
        def _asdict(self) -> dict[str, Any]: ...
        @classmethod
        def _make(cls, iterable: Iterable[Any]) -> Self: ...

    @dataclass_transform(frozen_default=True, order_default=True)
    def record(cls: type[_T]) -> type[_T]: ...

else:

    class Record:
        """Base of records that use the tuple's own helpers (``_replace``, ``_fields``, ``_make``)."""

        __slots__ = ()

    def record(cls: type) -> type:
        """The class as an immutable tuple with its annotations as fields."""
        return _record(cls)


def _record(cls: type) -> type:
    fields = list(cls.__dict__.get("__annotations__", {}))
    defaults = [cls.__dict__[f] for f in fields if f in cls.__dict__]
    base = namedtuple(cls.__name__, fields, defaults=defaults)  # type: ignore[misc]  # noqa: PYI024
    body = {k: v for k, v in cls.__dict__.items() if k not in fields and k not in ("__dict__", "__weakref__")}
    body["__slots__"] = ()
    extra = tuple(b for b in cls.__bases__ if b is not object)  # e.g. Record
    made = type(cls.__name__, (base, *extra), body)
    made.__module__ = cls.__module__
    made.__qualname__ = cls.__qualname__
    return made
