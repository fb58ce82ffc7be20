"""``@record``: an annotated class made an immutable tuple, as ``typing.NamedTuple`` does.

``typing`` costs several milliseconds to import; the records on the CLI's cold-start
path (verdicts, diagnostics, the compiled pack) are built on ``collections.namedtuple``
instead. Fields are the class's annotations in order; class attributes give defaults.
"""

from __future__ import annotations

from collections import namedtuple

__all__ = ["record"]


def record(cls: type) -> type:
    fields = list(cls.__dict__.get("__annotations__", {}))
    defaults = [cls.__dict__[f] for f in fields if f in cls.__dict__]
    base = namedtuple(cls.__name__, fields, defaults=defaults)  # type: ignore[misc]  # noqa: PYI024
    body = {k: v for k, v in cls.__dict__.items() if k not in fields and k not in ("__dict__", "__weakref__")}
    body["__slots__"] = ()
    made = type(cls.__name__, (base,), body)
    made.__module__ = cls.__module__
    made.__qualname__ = cls.__qualname__
    return made
