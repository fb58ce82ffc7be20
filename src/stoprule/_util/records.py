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

from _collections import _tuplegetter  # type: ignore[import-not-found]  # the field descriptor namedtuple uses

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
    """``cls`` made a tuple subclass with the named tuple's API (``_fields``, ``_field_defaults``,
    ``_make``, ``_replace``, ``_asdict``, its repr and its pickling), built without the ``eval``
    and the second class a :func:`~collections.namedtuple` costs (a record is built on every
    start: ~0.1 ms each, a dozen on the stop hook's path)."""
    fields = tuple(cls.__dict__.get("__annotations__", {}))
    defaults = {f: cls.__dict__[f] for f in fields if f in cls.__dict__}
    name, n = cls.__name__, len(fields)
    new = tuple.__new__

    def __new__(_cls: type, *args: Any, **kwargs: Any) -> Any:  # noqa: N807
        if kwargs or len(args) != n:
            args = _bind(name, fields, defaults, args, kwargs)
        return new(_cls, args)

    def _make(_cls: type, iterable: Iterable[Any]) -> Any:
        made: tuple[Any, ...] = new(_cls, iterable)
        if len(made) != n:
            raise TypeError(f"Expected {n} arguments, got {len(made)}")
        return made

    def _replace(self: Any, /, **changes: Any) -> Any:
        made = new(type(self), [changes.pop(f, v) for f, v in zip(fields, self, strict=True)])
        if changes:
            raise TypeError(f"Got unexpected field names: {list(changes)!r}")
        return made

    def __repr__(self: Any) -> str:
        return f"{self.__class__.__name__}({', '.join(f'{f}={v!r}' for f, v in zip(fields, self, strict=True))})"

    body: dict[str, Any] = {
        "__slots__": (), "_fields": fields, "_field_defaults": defaults, "__match_args__": fields,
        "__new__": __new__, "_make": classmethod(_make), "_replace": _replace, "__repr__": __repr__,
        "_asdict": lambda self: dict(zip(fields, self, strict=True)), "__getnewargs__": lambda self: tuple(self),
        **{f: _tuplegetter(i, f"Alias for field number {i}") for i, f in enumerate(fields)},
    }  # fmt: skip
    body.update((k, v) for k, v in cls.__dict__.items() if k not in fields and k not in ("__dict__", "__weakref__"))
    body["__slots__"] = ()
    extra = tuple(b for b in cls.__bases__ if b is not object)  # e.g. Record
    made = type(name, (tuple, *extra), body)
    made.__module__ = cls.__module__
    made.__qualname__ = cls.__qualname__
    return made


def _bind(
    name: str, fields: tuple[str, ...], defaults: dict[str, Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[Any, ...]:
    """The field values of ``name(*args, **kwargs)``, as a named tuple's ``__new__`` binds them."""
    if len(args) > len(fields):
        raise TypeError(f"{name}() takes {len(fields)} positional arguments but {len(args)} were given")
    values = list(args)
    for f in fields[len(args) :]:
        if f in kwargs:
            values.append(kwargs.pop(f))
        elif f in defaults:
            values.append(defaults[f])
        else:
            raise TypeError(f"{name}() missing required argument: {f!r}")
    if kwargs:
        extra = next(iter(kwargs))
        what = "multiple values for" if extra in fields else "an unexpected keyword"
        raise TypeError(f"{name}() got {what} argument {extra!r}")
    return tuple(values)
