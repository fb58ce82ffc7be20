"""The fact schema at run time: typed fields and their validators (no pydantic): closures built
per schema, and the generated code of :mod:`stoprule.facts.fast_validator` for many facts.

Kept free of pydantic and YAML so a cached compiled pack evaluates facts without
importing either (the CLI's cold start).

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

from stoprule import codes
from stoprule._util.records import Record, record
from stoprule.diagnostics import FactError
from stoprule.limits import SAFE_INT  # fact integers: exact as doubles, offset sums far from 64-bit overflow

__all__ = ["MISSING", "FactField", "FactSchema", "can_be_absent"]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    Checker = Callable[[Any], Any]


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"

    def __reduce__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


def _lookup(fields: dict[str, FactField]) -> dict[str, str]:
    """Every key naming a field of an object (its own name and its aliases) -> the field's name."""
    out: dict[str, str] = {}
    for name, f in fields.items():
        out[name] = name
        for a in f.aliases:
            out[a] = name
    return out


@record
class FactField(Record):
    """A typed field; ``object`` fields hold children, ``list`` fields an item type.

    A record (an immutable tuple, the idiom of the records a cached pack loads on every start):
    build one with ``FactField(...)`` or :meth:`_replace`; ``lookup`` (every key naming a child:
    own names and aliases) is computed from ``fields``.
    """

    name: str
    type: str
    required: bool = False
    nullable: bool = False
    has_default: bool = False
    default: Any = None
    aliases: tuple[str, ...] = ()
    values: tuple[str, ...] = ()
    items: FactField | None = None
    fields: dict[str, FactField] = None  # type: ignore[assignment]  # an empty dict when not given
    required_if: str | None = None
    description: str | None = None
    additional: str = "allow"
    lookup: dict[str, str] = None  # type: ignore[assignment]  # computed from fields

    def __new__(  # noqa: PLR0913 - the record's fields
        cls,
        name: str,
        type: str,
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
        lookup: dict[str, str] | None = None,
    ) -> FactField:
        fields = {} if fields is None else fields
        lookup = _lookup(fields) if lookup is None else lookup
        state = (name, type, required, nullable, has_default, default, aliases, values, items, fields)
        new: Any = tuple.__new__  # a record is a tuple (see stoprule._util.records)
        made: FactField = new(cls, (*state, required_if, description, additional, lookup))
        return made

    def _replace(self, **changes: Any) -> FactField:
        """A copy with ``changes`` (``lookup`` computed again)."""
        state = self._asdict()
        del state["lookup"]
        return FactField(**{**state, **changes})

    def __repr__(self) -> str:
        return f"FactField({self.name!r}, {self.describe()!r})"

    @property
    def may_be_absent(self) -> bool:
        return not self.required and not self.has_default

    def describe(self) -> str:
        if self.type == "list" and self.items is not None:
            return f"list of {self.items.describe()}"
        if self.type == "enum":
            return "enum(" + ", ".join(self.values) + ")"
        return self.type


def can_be_absent(scope: FactField, path: tuple[str, ...]) -> bool:
    """Whether ``path`` can be missing from a valid value of ``scope``: an optional step
    without default, or a nullable object on the way (null parents drop their children)."""
    cur = scope
    for i, name in enumerate(path):
        f = cur.fields[name]
        if f.may_be_absent or (i < len(path) - 1 and f.nullable):
            return True
        cur = f
    return False


def _finite(v: float) -> bool:
    """``math.isfinite`` for a float, without importing ``math`` (a shared library: the cold start):
    an infinity less itself is NaN, as NaN is."""
    return v - v == 0.0


def _null_or(spec: FactField, v: Any) -> None:
    """The error for a value of the wrong type (None when null is allowed)."""
    if v is None:
        if spec.nullable:
            return None
        raise FactError(codes.FACT_NULL, "must not be null")
    from stoprule.facts.errors import type_error

    raise type_error(spec, v, ())


def _check_text(text: str) -> None:
    """Strings the engine and every output can carry: no NUL, no lone surrogate."""
    if "\x00" in text:
        raise FactError(codes.FACT_STRING, "contains a NUL character")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise FactError(codes.FACT_STRING, f"contains a lone surrogate (\\u{ord(text[exc.start]):04x})") from None


def _compile(spec: FactField) -> Checker:
    """A function that validates one value of ``spec`` and returns it normalised.

    Built once per schema (closures over precomputed tables): the per-fact path does
    no schema interpretation.
    """
    t = spec.type
    if t == "bool":

        def check_bool(v: Any) -> Any:
            return v if type(v) is bool else _null_or(spec, v)

        return check_bool
    if t == "string":

        def check_string(v: Any) -> Any:
            if type(v) is not str:
                return _null_or(spec, v)
            if not v.isascii() or "\x00" in v:
                _check_text(v)
            return v

        return check_string
    if t in ("int", "number"):
        floats = t == "number"

        def check_number(v: Any) -> Any:
            tv = type(v)
            if tv is int:
                if -SAFE_INT <= v <= SAFE_INT:
                    return v
                raise FactError(codes.FACT_RANGE, f"integer outside the safe range ±{SAFE_INT} (2^53 - 1)")
            if floats and tv is float and _finite(v):
                return v
            return _null_or(spec, v)

        return check_number
    if t == "enum":
        values = frozenset(spec.values)

        def check_enum(v: Any) -> Any:
            if type(v) is not str:  # a list or object is not hashable: test the type first
                return _null_or(spec, v)
            if v in values:
                return v
            from stoprule.facts.errors import show

            raise FactError(codes.FACT_ENUM, f"{show(v)} is not one of: " + ", ".join(spec.values))

        return check_enum
    if t == "list":
        assert spec.items is not None
        item = _compile(spec.items)

        def check_list(v: Any) -> Any:
            if type(v) is not list:
                return _null_or(spec, v)
            out = []
            for i, x in enumerate(v):
                try:
                    out.append(item(x))
                except FactError as exc:
                    from stoprule.facts.errors import prefix

                    raise prefix(exc, i) from None
            return out

        return check_list
    return _compile_object(spec)


def _compile_object(spec: FactField) -> Checker:
    lookup = spec.lookup
    reject = spec.additional == "reject"
    checkers = {name: _compile(f) for name, f in spec.fields.items()}
    defaults = [(n, f.default) for n, f in spec.fields.items() if f.has_default]
    required = [n for n, f in spec.fields.items() if f.required]
    required_if = [(n, f.required_if) for n, f in spec.fields.items() if f.required_if]

    def check_object(data: Any) -> Any:
        if type(data) is not dict:
            return _null_or(spec, data)
        out: dict[str, Any] = {}
        for key, value in data.items():
            name = lookup.get(key)
            if name is None:
                if reject:
                    from stoprule.facts.errors import format_field

                    raise FactError(codes.FACT_UNKNOWN_FIELD, "not a field of the schema", format_field((key,)))
                continue
            if name in out:
                raise FactError(codes.FACT_DUPLICATE_FIELD, f"given twice (as {name!r} and an alias)", name)
            try:
                out[name] = checkers[name](value)
            except FactError as exc:
                from stoprule.facts.errors import prefix

                raise prefix(exc, name) from None
        for name, default in defaults:
            if name not in out:
                out[name] = _clone(default)
        for name in required:
            if name not in out:
                raise FactError(codes.FACT_REQUIRED, "required field is missing", name)
        for name, cond in required_if:
            if out.get(cond) is True and out.get(name) in (None, ""):
                raise FactError(codes.FACT_REQUIRED, f"required when {cond} is true", name)
        return out

    return check_object


def _compile_unknown(spec: FactField) -> Callable[[Any, str, list[str]], None] | None:
    """A function collecting the keys of a value of ``spec`` that the schema does not know
    (as field paths), or None where nothing below ``spec`` is an object."""
    if spec.type == "list":
        assert spec.items is not None
        item = _compile_unknown(spec.items)
        if item is None:
            return None

        def walk_list(v: Any, at: str, out: list[str]) -> None:
            if type(v) is list:
                for i, x in enumerate(v):
                    item(x, f"{at}[{i}]", out)

        return walk_list
    if spec.type != "object":
        return None
    lookup = spec.lookup
    children = {name: w for name, f in spec.fields.items() if (w := _compile_unknown(f)) is not None}

    def walk_object(v: Any, at: str, out: list[str]) -> None:
        if type(v) is not dict:
            return
        for key, x in v.items():
            name = lookup.get(key)
            if name is None:
                out.append(f"{at}.{key}" if at else key)
            elif name in children:
                children[name](x, f"{at}.{name}" if at else name, out)

    return walk_object


class _Bail(Exception):
    """The fast validator met something it leaves to the closures (an error, or a case it
    does not handle): the fact is validated again by them, which name the error."""


class FactSchema:
    """Validates and normalises facts: aliases resolved, defaults filled, types strict."""

    _fields = ("root",)  # what it is made of (the compiled pack's JSON form writes it: stoprule._util.tagged)

    def __init__(self, root: FactField) -> None:
        self.root = root
        self._check = _compile_object(root)
        self._unknown = _compile_unknown(root)
        self._messages: dict[str, str] = {}  # unknown field path -> its warning message

    def __getattr__(self, name: str) -> Any:
        if name == "_fast":  # generated and compiled on first use (a batch's: see check_direct)
            from stoprule.facts.fast_validator import fast_validator

            self._fast = fast_validator(
                self.root, {"_Bail": _Bail, "CT": _check_text, "CL": _clone, "fin": _finite, "M": MISSING}
            )[1]
            return self._fast
        raise AttributeError(name)

    def warnings(self, fact: dict[str, Any]) -> list[dict[str, str]]:
        """What to warn about in a valid fact: fields the schema does not know (with a
        did-you-mean), and a fact with no fields at all."""
        if not fact:
            return [{"code": codes.FACT_EMPTY, "field": "", "message": "the fact has no fields: only defaults decide"}]
        found: list[str] = []
        if self._unknown is not None:
            self._unknown(fact, "", found)
        return self._unknown_warnings(found)

    def _unknown_warnings(self, found: list[str]) -> list[dict[str, str]]:
        if not found:
            return []
        messages = self._messages
        out = []
        for f in found:
            if type(f) is not str:  # a key that is not a string (from Python, never from JSON)
                f = str(f)
            message = messages.get(f)
            if message is None:  # difflib is slow, and the same unknown fields come back fact after fact
                from stoprule.facts.errors import suggest

                if len(messages) >= 4096:
                    messages.clear()
                message = messages[f] = "not a field of the schema" + suggest(self.root, f)
            out.append({"code": codes.FACT_UNKNOWN_FIELD, "field": f, "message": message})
        return out

    def validate(self, fact: Any) -> dict[str, Any]:
        try:
            data: dict[str, Any] = self._fast(fact, [])
            return data
        except (_Bail, FactError):  # the closures below name the error
            pass
        return self._validate(fact)

    def check(self, fact: Any) -> tuple[dict[str, Any], list[dict[str, str]]]:
        """:meth:`validate` and :meth:`warnings` in one walk of the fact."""
        found: list[str] = []
        try:
            data = self._fast(fact, found)
        except (_Bail, FactError):  # the closures name the error
            data = self._validate(fact)
            return data, self.warnings(fact)
        if not fact:
            return data, self.warnings(fact)
        return data, self._unknown_warnings(found)

    def check_direct(self, fact: Any) -> tuple[dict[str, Any], list[dict[str, str]]]:
        """:meth:`check` without the generated validator: the same result, nothing compiled (one
        fact in a short-lived process, where compiling the validator would cost more than it saves)."""
        return self._validate(fact), self.warnings(fact)

    def _validate(self, fact: Any) -> dict[str, Any]:
        if not isinstance(fact, dict):
            raise FactError(codes.FACT_NOT_OBJECT, "a fact must be a JSON object")
        data: dict[str, Any] = self._check(fact)
        return data

    def check_value(self, spec: FactField, value: Any) -> Any:
        """Validate one value against a field (used to normalise defaults)."""
        return _compile(spec)(value)


def _clone(v: Any) -> Any:
    """A deep copy of a JSON value (defaults must not be shared between facts)."""
    if type(v) is list:
        return [_clone(x) for x in v]
    if type(v) is dict:
        return {k: _clone(x) for k, x in v.items()}
    return v
