"""The fact schema at run time: typed fields and a fast validator (no pydantic).

Kept free of pydantic and YAML so a cached compiled pack evaluates facts without
importing either (the CLI's cold start).
"""

from __future__ import annotations

import math
from typing import Any

from .diagnostics import FactError

__all__ = ["MISSING", "FactField", "FactSchema", "format_field"]


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"

    def __reduce__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()

MAX_DEPTH = 32
INT_LIMIT = 1 << 63  # the engine compares 64-bit integers


def format_field(path: tuple[str | int, ...]) -> str:
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else p)
    return out


class FactField:
    """A typed field; ``object`` fields hold children, ``list`` fields an item type."""

    __slots__ = (
        "name", "type", "required", "nullable", "has_default", "default", "aliases", "values",
        "items", "fields", "required_if", "description", "additional", "lookup",
    )  # fmt: skip

    def __init__(
        self,
        name: str,
        type: str,
        *,
        required: bool = False,
        nullable: bool = False,
        has_default: bool = False,
        default: Any = None,
        aliases: tuple[str, ...] = (),
        values: tuple[str, ...] = (),
        items: FactField | None = None,
        fields: dict[str, FactField] | None = None,
        required_if: str | None = None,
        description: str | None = None,
        additional: str = "allow",
    ) -> None:
        self.name = name
        self.type = type
        self.required = required
        self.nullable = nullable
        self.has_default = has_default
        self.default = default
        self.aliases = aliases
        self.values = values
        self.items = items
        self.fields: dict[str, FactField] = fields if fields is not None else {}
        self.required_if = required_if
        self.description = description
        self.additional = additional
        self.lookup: dict[str, str] = {}
        self.reindex()

    def __getstate__(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__slots__}

    def __setstate__(self, state: dict[str, Any]) -> None:
        for k, v in state.items():
            setattr(self, k, v)

    def __repr__(self) -> str:
        return f"FactField({self.name!r}, {self.describe()!r})"

    def reindex(self) -> None:
        self.lookup = {}
        for name, f in self.fields.items():
            self.lookup[name] = name
            for a in f.aliases:
                self.lookup[a] = name

    @property
    def may_be_absent(self) -> bool:
        return not self.required and not self.has_default

    def describe(self) -> str:
        if self.type == "list" and self.items is not None:
            return f"list of {self.items.describe()}"
        if self.type == "enum":
            return "enum(" + ", ".join(self.values) + ")"
        return self.type


def _type_error(want: FactField, got: Any, path: tuple[str | int, ...]) -> FactError:
    kind = type(got).__name__ if got is not None else "null"
    kinds = {"dict": "object", "list": "list", "str": "string", "float": "number"}
    return FactError(
        "fact.type",
        f"expected {want.describe()}, got {kinds.get(kind, kind)}",
        format_field(path),
    )


def _prefix(exc: FactError, step: str | int) -> FactError:
    """Put ``step`` in front of the error's field path (errors are built innermost first)."""
    exc.field = format_field((step,)) + ("" if not exc.field else exc.field if exc.field[0] == "[" else "." + exc.field)
    return exc


class _Plan:
    """What validating one object needs, computed once per schema object."""

    __slots__ = ("spec", "lookup", "fields", "reject", "defaults", "required", "required_if", "fast")

    def __init__(self, spec: FactField) -> None:
        self.spec = spec
        self.lookup = spec.lookup
        self.fields = spec.fields
        self.reject = spec.additional == "reject"
        self.defaults = [(n, f.default) for n, f in spec.fields.items() if f.has_default]
        self.required = [n for n, f in spec.fields.items() if f.required]
        self.required_if = [(n, f.required_if) for n, f in spec.fields.items() if f.required_if]
        # scalar fields whose value needs only an exact type check (the common case)
        exact = {"string": str, "bool": bool}  # ints need a range check
        self.fast = {n: exact[f.type] for n, f in spec.fields.items() if f.type in exact}


class FactSchema:
    """Validates and normalises facts: aliases resolved, defaults filled, types strict."""

    def __init__(self, root: FactField) -> None:
        self.root = root
        self._plans: dict[int, _Plan] = {}

    def __getstate__(self) -> dict[str, Any]:
        return {"root": self.root}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["root"])  # type: ignore[misc]

    def _plan(self, spec: FactField) -> _Plan:
        plan = self._plans.get(id(spec))
        if plan is None:
            plan = self._plans[id(spec)] = _Plan(spec)
        return plan

    def validate(self, fact: Any) -> dict[str, Any]:
        if not isinstance(fact, dict):
            raise FactError("fact.not_object", "a fact must be a JSON object")
        return self._object(self.root, fact)

    def _object(self, spec: FactField, data: dict) -> dict:
        plan = self._plan(spec)
        out: dict[str, Any] = {}
        lookup = plan.lookup
        fields = plan.fields
        fast = plan.fast
        for key, value in data.items():
            name = lookup.get(key)
            if name is None:
                if plan.reject:
                    raise FactError("fact.unknown_field", "not a field of the schema", format_field((key,)))
                continue
            if name in out:
                raise FactError("fact.duplicate_field", f"given twice (as {name!r} and an alias)", name)
            if type(value) is fast.get(name):
                out[name] = value
                continue
            try:
                out[name] = self._value(fields[name], value)
            except FactError as exc:
                raise _prefix(exc, name) from None
        for name, default in plan.defaults:
            if name not in out:
                out[name] = _clone(default)
        for name in plan.required:
            if name not in out:
                raise FactError("fact.required", "required field is missing", name)
        for name, cond in plan.required_if:
            if out.get(cond) is True and out.get(name) in (None, ""):
                raise FactError("fact.required", f"required when {cond} is true", name)
        return out

    def _value(self, spec: FactField, v: Any) -> Any:
        if v is None:
            if spec.nullable:
                return None
            raise FactError("fact.null", "must not be null")
        t = spec.type
        tv = type(v)
        if t == "string":
            if tv is str:
                return v
        elif t == "bool":
            if tv is bool:
                return v
        elif t == "int":
            if tv is int:
                if -INT_LIMIT <= v < INT_LIMIT:
                    return v
                raise FactError("fact.range", "integer outside the 64-bit range")
        elif t == "number":
            if tv is int and not -INT_LIMIT <= v < INT_LIMIT:
                raise FactError("fact.range", "integer outside the 64-bit range")
            if tv is int or (tv is float and math.isfinite(v)):
                return v
        elif t == "enum":
            if tv is str:
                if v in spec.values:
                    return v
                raise FactError("fact.enum", f"{v!r} is not one of: " + ", ".join(spec.values))
        elif t == "list":
            if tv is list:
                items = spec.items
                assert items is not None
                out = []
                for i, x in enumerate(v):
                    try:
                        out.append(self._value(items, x))
                    except FactError as exc:
                        raise _prefix(exc, i) from None
                return out
        elif t == "object" and tv is dict:
            return self._object(spec, v)
        raise _type_error(spec, v, ())


def _clone(v: Any) -> Any:
    """A deep copy of a JSON value (defaults must not be shared between facts)."""
    if type(v) is list:
        return [_clone(x) for x in v]
    if type(v) is dict:
        return {k: _clone(x) for k, x in v.items()}
    return v


def check_depth(value: Any, limit: int = MAX_DEPTH) -> bool:
    """True if ``value`` nests no deeper than ``limit`` (iterative: no recursion)."""
    stack = [(value, 0)]
    while stack:
        v, d = stack.pop()
        if d > limit:
            return False
        if isinstance(v, dict):
            stack.extend((x, d + 1) for x in v.values())
        elif isinstance(v, list):
            stack.extend((x, d + 1) for x in v)
    return True
