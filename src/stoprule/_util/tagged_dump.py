"""Values as JSON data (:mod:`stoprule._util.tagged` says how, and reads them back): the
writing half, run when a compiled pack or its conditions are written, off the stop's path.
"""

from __future__ import annotations

from stoprule._util.tagged import _SCALARS

__all__ = ["dump"]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any


def _fields(cls: type) -> tuple[str, ...]:
    names = getattr(cls, "_fields", None)
    if names is None:
        names = tuple(getattr(cls, "__dataclass_fields__", ()))
    return tuple(names)


def _plain(v: Any) -> bool:
    """Whether ``v`` is JSON as it is: lists, dicts with string keys and scalars only."""
    t = type(v)
    if t in _SCALARS:
        return True
    if t is list:
        return all(map(_plain, v))
    if t is dict:
        return all(type(k) is str and _plain(x) for k, x in v.items())
    return False


def dump(value: Any, types: Mapping[str, type]) -> Any:
    """``value`` as JSON data (TypeError for a type neither JSON nor named in ``types``)."""
    names = {cls: name for name, cls in types.items()}
    fields = {cls: _fields(cls) for cls in names}

    def enc(v: Any) -> Any:
        t = type(v)
        if t in _SCALARS:
            return v
        if (t is dict or t is list) and len(v) > 1 and _plain(v):
            return ["j", v]
        if t is list:
            return ["l", *map(enc, v)]
        if t is tuple:
            return ["t", *map(enc, v)]
        if t is frozenset:
            return ["f", *map(enc, sorted(v, key=repr))]
        if t is dict:
            if not all(type(k) is str for k in v):
                raise TypeError("a dict key is not a string")
            return ["d", {k: enc(x) for k, x in v.items()}]
        name = names.get(t)
        if name is None:
            raise TypeError(f"cannot write a {t.__name__} as data")
        return ["r", name, *(enc(getattr(v, f)) for f in fields[t])]

    return enc(value)
