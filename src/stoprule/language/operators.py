"""Condition operators: everything the tools need to know about each, in one entry.

An :class:`Operator` declares

- ``check(ftype, values, arg)``: the argument checked against the field's schema type
  (raises :class:`CheckError`), returned normalised;
- ``lower(key, value)``: durable_rules JSON as ``(positive, negative)``, the engine
  condition for the atom and for its negation *when the field has a value* (None: the
  engine cannot negate it). The lowering adds the "absent or null" cases, so comparisons
  are false on a missing value and their negations true. Presence operators get
  ``(want, missing, len_key)`` instead of a value (:class:`PresenceArgs`);
- ``test(value, arg)``: the reference semantics, on a present, non-null value (presence
  operators: on the value, MISSING or None);
- ``arg_schema``: the JSON Schema of the argument (for editors);
- ``reads(arg)``: what analysis must tell apart, as ``(literals, glob patterns)``;
- ``implies(arg, outcome)``: whether the field is present and not null when the atom
  has ``outcome`` (True/False), or None when that says nothing;
- flags: ``negatable`` (the engine can evaluate its negation: ``lower`` gives a
  negative), ``presence`` (speaks about absent/null itself), ``field_operand`` (takes
  ``{field: NAME, offset: N}``), ``ordered`` (needs numbers), ``set_operand`` (takes a
  list or a set name).

Adding an operator touches this file only (and its tests).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from stoprule import codes
from stoprule.diagnostics import CheckError
from stoprule.facts.schema import MISSING
from stoprule.language.patterns import (
    ends_with_test,
    glob_class,
    glob_escape,
    glob_test,
    glob_tokens,
    starts_with_test,
)
from stoprule.limits import (
    MAX_GLOB_CLASS_CHARS,
    MAX_GLOB_LENGTH,
    MAX_GLOB_STARS,
    MAX_SET_MEMBERS,
    MAX_STRING_LITERAL,
    SAFE_INT,
)

__all__ = [
    "OPERATORS",
    "Operator",
    "PresenceArgs",
    "check_number",
    "check_text",
    "glob_regex",
    "glob_to_lua",
    "glob_to_regex",
]

Json = dict[str, Any]


def check_number(v: int | float, what: str = "literal") -> None:
    """Integers within +-SAFE_INT (so that offsets cannot overflow the engine's 64 bits and
    comparisons with floats are exact); floats finite."""
    if type(v) is int and not -SAFE_INT <= v <= SAFE_INT:
        raise CheckError(f"integer {what} outside +-{SAFE_INT} (2^53 - 1)", codes.LIMIT_INTEGER)
    if type(v) is float and not math.isfinite(v):
        raise CheckError(f"{what} {v!r} is not a finite number")


def check_text(v: str, what: str = "string literal", limit: int = MAX_STRING_LITERAL) -> None:
    """Strings the engine can hold: bounded, no NUL (C strings), no lone surrogates (not UTF-8)."""
    if len(v) > limit:
        raise CheckError(f"{what} of {len(v)} characters (limit {limit})", codes.LIMIT_LITERAL_LENGTH)
    if "\0" in v:
        raise CheckError(f"{what} contains a NUL character")
    if any("\ud800" <= ch <= "\udfff" for ch in v):
        raise CheckError(f"{what} contains a lone surrogate (not encodable as UTF-8)")


def _literal(ftype: str, values: tuple[str, ...], v: Any) -> Any:
    if ftype == "bool":
        ok = type(v) is bool
    elif ftype == "int":
        ok = type(v) is int
    elif ftype == "number":
        ok = type(v) in (int, float)
    elif ftype in ("string", "enum"):
        ok = type(v) is str
    else:
        raise CheckError(f"a {ftype} field cannot be compared to a value")
    if not ok:
        got = "null" if v is None else type(v).__name__.replace("str", "string")
        shown = repr(v) if len(repr(v)) <= 80 else repr(v)[:77] + "..."
        raise CheckError(f"compares a {ftype} field to {got} {shown}")
    if ftype in ("int", "number"):
        check_number(v)
    elif ftype == "string":
        check_text(v)
    if ftype == "enum" and v not in values:
        raise CheckError(f"{v!r} is not a value of this enum ({', '.join(values)})")
    return v


def _check_eq(ftype: str, values: tuple[str, ...], arg: Any) -> Any:
    if isinstance(arg, dict):
        return arg  # a field operand, checked by the compiler
    return _literal(ftype, values, arg)


def _check_order(ftype: str, values: tuple[str, ...], arg: Any) -> Any:
    if ftype not in ("int", "number"):
        raise CheckError(f"ordering needs an int or number field, not {ftype}")
    return _check_eq(ftype, values, arg)


def _check_set(ftype: str, values: tuple[str, ...], arg: Any) -> Any:
    if not isinstance(arg, (list, tuple)):
        raise CheckError("takes a list of values or the name of a set")
    if len(arg) > MAX_SET_MEMBERS:
        raise CheckError(f"{len(arg)} values (limit {MAX_SET_MEMBERS})", codes.LIMIT_SET_MEMBERS)
    return tuple(_literal(ftype, values, v) for v in arg)


def _check_bool(ftype: str, values: tuple[str, ...], arg: Any) -> Any:
    if type(arg) is not bool:
        raise CheckError("takes true or false")
    return arg


def _check_empty(ftype: str, values: tuple[str, ...], arg: Any) -> Any:
    if ftype != "list":
        raise CheckError(f"empty applies to lists, not {ftype}")
    return _check_bool(ftype, values, arg)


def _check_glob(ftype: str, values: tuple[str, ...], arg: Any) -> Any:
    if ftype not in ("string", "enum"):
        raise CheckError(f"glob applies to strings, not {ftype}")
    if not isinstance(arg, str):
        raise CheckError("takes a glob pattern string")
    _check_pattern(arg)
    return arg


def _check_pattern(glob: str) -> None:
    """Syntax, and the limits that keep the engine's pattern automaton small (see limits.py)."""
    check_text(glob, "glob", MAX_GLOB_LENGTH)
    tokens = glob_tokens(glob)
    stars = sum(1 for kind, _ in tokens if kind == "star")
    if stars > MAX_GLOB_STARS:
        raise CheckError(f"glob with {stars} '*' wildcards (limit {MAX_GLOB_STARS})", codes.LIMIT_GLOB_STARS)
    for kind, text in tokens:
        if kind == "class":
            _, ranges = glob_class(text)
            size = sum(ord(hi) - ord(lo) + 1 for lo, hi in ranges)
            if size > MAX_GLOB_CLASS_CHARS:
                raise CheckError(
                    f"glob class [{text}] stands for {size} characters (limit {MAX_GLOB_CLASS_CHARS})",
                    codes.LIMIT_GLOB_CLASS,
                )


def _check_affix(ftype: str, values: tuple[str, ...], arg: Any) -> Any:
    if ftype not in ("string", "enum"):
        raise CheckError(f"applies to strings, not {ftype}")
    if not isinstance(arg, str) or not arg:
        raise CheckError("takes a non-empty string")
    check_text(arg, "argument", MAX_GLOB_LENGTH)
    return arg


_LUA_MAGIC = set("()%.[]*+?{}|")  # what the engine lets and needs escaped with %


def _translate(pattern: str, literal: Callable[[str], str], klass: Callable[[bool, list[Any]], str]) -> str:
    """Glob tokens to a pattern where ``.`` is any character and ``.*`` any run."""
    out = []
    for kind, text in glob_tokens(pattern):
        if kind == "star":
            out.append(".*")
        elif kind == "one":
            out.append(".")
        elif kind == "class":
            out.append(klass(*glob_class(text)))
        else:
            out.append(literal(text))
    return "".join(out)


_CLASS_SPECIAL = "]%-^"  # what the engine's class parser treats specially


def _lua_literal(ch: str) -> str:
    return ("%" + ch) if ch in _LUA_MAGIC else ch


def _lua_class(neg: bool, ranges: list[tuple[str, str]]) -> str:
    """A class in the engine's syntax. Its parser takes ``%]`` and ``%%`` escaped, ``-``
    only last, ``^`` only after the first position, and range ends only unescaped; so
    ranges are split around those characters, which are then placed where they are literal."""
    parts: list[str] = []
    specials: set[str] = set()
    for lo, hi in ranges:
        a = ord(lo)
        for sp in sorted(ord(c) for c in _CLASS_SPECIAL if lo <= c <= hi):
            if a < sp:
                parts.append(chr(a) if a == sp - 1 else f"{chr(a)}-{chr(sp - 1)}")
            specials.add(chr(sp))
            a = sp + 1
        if a <= ord(hi):
            parts.append(chr(a) if a == ord(hi) else f"{chr(a)}-{hi}")
    if not neg and not parts:  # only specials (^ must not come first): a literal or a union
        lits = [_lua_literal(c) for c in sorted(specials)]
        return lits[0] if len(lits) == 1 else "(" + "|".join(lits) + ")"
    body = "".join(parts)
    body += "%]" if "]" in specials else ""
    body += "%%" if "%" in specials else ""
    body += "^" if "^" in specials else ""
    body += "-" if "-" in specials else ""
    return "[" + ("^" if neg else "") + body + "]"


def _regex_class(neg: bool, ranges: list[tuple[str, str]]) -> str:
    def esc(ch: str) -> str:
        return "\\" + ch if ch in "\\]^-[" else ch

    body = "".join(esc(lo) if lo == hi else f"{esc(lo)}-{esc(hi)}" for lo, hi in ranges)
    return "[" + ("^" if neg else "") + body + "]"


def glob_to_lua(pattern: str) -> str:
    """Translate a glob to the engine's ``$mt`` pattern (Lua-style, whole-string)."""
    return _translate(pattern, _lua_literal, _lua_class)


def glob_to_regex(pattern: str) -> str:
    """The same glob as a Python regular expression (for analysis tools)."""
    return "(?s:" + _translate(pattern, re.escape, _regex_class) + r")\Z"


def _cmp(op: str, inverse: str) -> Callable[[str, Any], tuple[Json, Json]]:
    def lower(key: str, value: Any) -> tuple[Json, Json]:
        return {op: {key: value}}, {inverse: {key: value}}

    return lower


def _lower_eq(key: str, value: Any) -> tuple[Json, Json]:
    return {key: value}, {"$neq": {key: value}}


def _lower_ne(key: str, value: Any) -> tuple[Json, Json]:
    return {"$neq": {key: value}}, {key: value}


def _any_of(conds: list[Json]) -> Json:
    return conds[0] if len(conds) == 1 else {"$or": conds}


def _all_of(conds: list[Json]) -> Json:
    return {"$and": conds}


def _lower_in(key: str, values: tuple[Any, ...]) -> tuple[Json, Json]:
    return _any_of([{key: v} for v in values]), _all_of([{"$neq": {key: v}} for v in values])


def _lower_not_in(key: str, values: tuple[Any, ...]) -> tuple[Json, Json]:
    pos, neg = _lower_in(key, values)
    return neg, pos


def _lower_glob(key: str, pattern: str) -> tuple[Json, Json | None]:
    # ``key`` is a projected test slot: the evaluator matches the pattern in Python (the
    # engine's own matcher sees strings JSON-escaped, and crashes on large patterns)
    return {key: True}, None


@dataclass(frozen=True)
class PresenceArgs:
    """What a presence operator lowers from: the wanted truth, the engine conditions of
    "absent or null" for this field, and the key of a list's length."""

    want: bool
    missing: list[Json]
    len_key: str


def _lower_exists(key: str, p: PresenceArgs) -> tuple[Json, None]:
    if p.want:
        return {"$neq": {key: None}}, None
    if not p.missing:
        return {"$nex": {key: 1}}, None
    return (p.missing[0] if len(p.missing) == 1 else {"$or": p.missing}), None


def _lower_null(key: str, p: PresenceArgs) -> tuple[Json, None]:
    return ({key: None} if p.want else {"$or": [{"$neq": {key: None}}, {"$nex": {key: 1}}]}), None


def _lower_absent(key: str, p: PresenceArgs) -> tuple[Json, None]:
    return ({"$nex": {key: 1}} if p.want else {"$ex": {key: 1}}), None


def _lower_empty(key: str, p: PresenceArgs) -> tuple[Json, None]:
    return ({p.len_key: 0} if p.want else {"$gt": {p.len_key: 0}}), None


def _implies_value(arg: Any, outcome: bool) -> bool | None:
    """Comparisons: true only on a present, non-null value."""
    return True if outcome else None


_SCALAR: Json = {"type": ["string", "number", "boolean"]}
_OPERAND: Json = {
    "type": "object",
    "title": "Field operand",
    "description": "Compare with another field of the fact, plus an optional offset.",
    "properties": {
        "field": {"type": "string", "title": "Field", "description": "Path of the other field, e.g. max_turns."},
        "offset": {"type": "number", "title": "Offset", "description": "Added to the other field's value."},
    },
    "required": ["field"],
    "additionalProperties": False,
}
_SET: Json = {"anyOf": [{"type": "array", "items": _SCALAR}, {"type": "string", "description": "a set name"}]}


def _literals(arg: Any) -> tuple[tuple[Any, ...], tuple[str, ...]]:
    return ((), ()) if isinstance(arg, dict) else ((arg,), ())


def _nothing(arg: Any) -> tuple[tuple[Any, ...], tuple[str, ...]]:
    return (), ()


@dataclass(frozen=True)
class Operator:
    """One operator of the condition language (see the module docstring)."""

    name: str
    doc: str
    check: Callable[[str, tuple[str, ...], Any], Any]
    lower: Callable[[str, Any], tuple[Json, Json | None]]
    test: Callable[[Any, Any], bool]
    arg_schema: Json
    reads: Callable[[Any], tuple[tuple[Any, ...], tuple[str, ...]]]
    implies: Callable[[Any, bool], bool | None]
    negatable: bool = True
    presence: bool = False
    field_operand: bool = False
    ordered: bool = False
    set_operand: bool = False
    projected: bool = False  # decided while projecting the fact (``test``); the engine reads a boolean


def _compare(name: str, doc: str, engine: str, inverse: str, test: Callable[[Any, Any], bool]) -> Operator:
    return Operator(
        name,
        doc,
        _check_order,
        _cmp(engine, inverse),
        test,
        {"anyOf": [{"type": "number"}, _OPERAND]},
        _literals,
        _implies_value,
        field_operand=True,
        ordered=True,
    )


def _presence(
    name: str,
    doc: str,
    check: Callable[..., Any],
    lower: Callable[..., Any],
    test: Callable[..., Any],
    implies: Callable[..., Any],
) -> Operator:
    return Operator(name, doc, check, lower, test, {"type": "boolean"}, _nothing, implies, presence=True)


def _affix(name: str, doc: str, glob: Callable[[str], str], test: Callable[[str, str], bool]) -> Operator:
    return Operator(
        name,
        doc,
        _check_affix,
        lambda key, arg: _lower_glob(key, glob(arg)),
        test,
        {"type": "string", "minLength": 1},
        lambda arg: ((), (glob(arg),)),
        _implies_value,
        negatable=False,
        projected=True,
    )


OPERATORS: dict[str, Operator] = {
    op.name: op
    for op in [
        Operator(
            "eq",
            "equal to a value or field",
            _check_eq,
            _lower_eq,
            lambda v, a: v == a,
            {"anyOf": [_SCALAR, _OPERAND]},
            _literals,
            _implies_value,
            field_operand=True,
        ),
        Operator(
            "ne",
            "has a value, not equal to",
            _check_eq,
            _lower_ne,
            lambda v, a: v != a,
            {"anyOf": [_SCALAR, _OPERAND]},
            _literals,
            _implies_value,
            field_operand=True,
        ),
        _compare("lt", "less than", "$lt", "$gte", lambda v, a: v < a),
        _compare("lte", "at most", "$lte", "$gt", lambda v, a: v <= a),
        _compare("gt", "greater than", "$gt", "$lte", lambda v, a: v > a),
        _compare("gte", "at least", "$gte", "$lt", lambda v, a: v >= a),
        Operator(
            "in",
            "one of a list or named set",
            _check_set,
            _lower_in,
            lambda v, a: v in a,
            _SET,
            lambda a: (tuple(a), ()),
            _implies_value,
            set_operand=True,
        ),
        Operator(
            "not_in",
            "has a value, none of a list or set",
            _check_set,
            _lower_not_in,
            lambda v, a: v not in a,
            _SET,
            lambda a: (tuple(a), ()),
            _implies_value,
            set_operand=True,
        ),
        Operator(
            "glob",
            "matches a glob pattern (whole string)",
            _check_glob,
            _lower_glob,
            glob_test,
            {"type": "string"},
            lambda a: ((), (a,)),
            _implies_value,
            negatable=False,
            projected=True,
        ),
        _affix("starts_with", "a string beginning with", lambda a: glob_escape(a) + "*", starts_with_test),
        _affix("ends_with", "a string ending with", lambda a: "*" + glob_escape(a), ends_with_test),
        _presence(
            "exists",
            "present and not null",
            _check_bool,
            _lower_exists,
            lambda v, a: (v is not MISSING and v is not None) == a,
            lambda a, o: o == a,
        ),
        _presence(
            "null",
            "present with value null",
            _check_bool,
            _lower_null,
            lambda v, a: (v is None) == a,
            lambda a, o: False if o == a else None,
        ),
        _presence(
            "absent",
            "not given and no default",
            _check_bool,
            _lower_absent,
            lambda v, a: (v is MISSING) == a,
            lambda a, o: False if o == a else None,
        ),
        _presence(
            "empty",
            "list with no elements",
            _check_empty,
            _lower_empty,
            lambda v, a: (not v if isinstance(v, list) else True) == a,
            lambda a, o: True if o != a else None,
        ),
    ]
}


_GLOB_CACHE: dict[str, re.Pattern[str]] = {}


def glob_regex(pattern: str) -> re.Pattern[str]:
    """The Python regex of a glob as the policy language defines it (whole string)."""
    rx = _GLOB_CACHE.get(pattern)
    if rx is None:
        rx = re.compile(glob_to_regex(pattern))
        _GLOB_CACHE[pattern] = rx
    return rx
