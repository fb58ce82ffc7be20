"""Values as JSON data and back, exactly: tuples, frozensets and the record types a caller names.

    data = dump(value, TYPES)     # JSON-ready: lists, dicts with string keys, strings, numbers, booleans, None
    value = load(data, TYPES)     # equal to ``value``, with its tuples and records

(``dump`` is :func:`stoprule._util.tagged_dump.dump`: writing happens on a cache miss, reading
on every start.)

``TYPES`` maps a name to a record type: a ``@record`` (a named tuple), a frozen dataclass, or
any class with ``_fields`` whose constructor takes them in order. JSON has one sequence and
one mapping, so every container is written as a list whose first item says what it is::

    ["l", x, ...]  a list     ["t", x, ...]  a tuple     ["f", x, ...]  a frozenset
    ["d", {k: x}]  a dict with string keys             ["r", NAME, x, ...]  a record, fields in order
    ["j", value]   a list or dict holding only lists, dicts with string keys and scalars, as it is

and no value can pass for another (plain JSON is read back by the JSON parser alone). Reading
builds only those containers and the types named in ``TYPES``, never a type a file names: a
cache read this way is data, never code (unlike pickle or marshal). Anything else in the data
is :class:`ValueError`.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

__all__ = ["load"]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

_SCALARS = (str, int, float, bool, type(None))  # (what dump writes as it is)
_CONTAINERS = (list, dict)  # what load decodes (a dict only to refuse it: it is not tagged)


def load(data: Any, types: Mapping[str, type]) -> Any:
    """The value :func:`~stoprule._util.tagged_dump.dump` wrote (ValueError for data it does not write).

    A cache read runs it on every start: scalars and a record's empty fields are taken without
    a call, and the tags come in the order of their frequency (records, tuples, dicts)."""

    containers = _CONTAINERS
    no_tuple, no_dict = ["t"], ["d", {}]  # an empty tuple, an empty dict

    def dec(v: Any) -> Any:
        if type(v) is not list:
            if type(v) is dict:
                raise ValueError("an untagged object")
            return v
        if not v:
            raise ValueError("an empty list carries no tag")
        tag = v[0]
        if tag == "r":
            cls = types.get(v[1]) if len(v) > 1 and type(v[1]) is str else None
            if cls is None:
                raise ValueError(f"an unknown record type {v[1:2]!r}")
            args = v[2:]
            for i, x in enumerate(args):
                if type(x) in containers:  # a record's empty fields (defaults) without a call
                    args[i] = () if x == no_tuple else {} if x == no_dict else dec(x)
            try:
                return cls(*args)
            except TypeError as exc:
                raise ValueError(f"a malformed {v[1]}: {exc}") from None
        if tag == "t":
            n = len(v)
            if n == 1:
                return ()
            if n == 2:
                x = v[1]
                return (dec(x) if type(x) in containers else x,)
            args = v[1:]
            for i, x in enumerate(args):
                if type(x) in containers:
                    args[i] = dec(x)
            return tuple(args)
        if tag == "d":
            if len(v) != 2 or type(v[1]) is not dict:
                raise ValueError("a malformed dict")
            out = {}
            for k, x in v[1].items():
                out[k] = dec(x) if type(x) in containers else x
            return out
        if tag == "j":
            if len(v) != 2 or not (type(v[1]) is list or type(v[1]) is dict):
                raise ValueError("a malformed plain value")
            return v[1]
        if tag == "l":
            return [dec(x) if type(x) in containers else x for x in v[1:]]
        if tag == "f":
            return frozenset([dec(x) if type(x) in containers else x for x in v[1:]])
        raise ValueError(f"an unknown tag {tag!r}")

    return dec(data)
