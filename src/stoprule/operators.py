"""Condition operators: one small check and one lowering function each.

Each operator checks its argument against the field's schema type and lowers to
durable_rules JSON. ``lower(key, value)`` returns ``(positive, negative)``: the
engine condition for the atom and for its negation *when the field has a value*.
The compiler adds the "field is absent or null" cases, so comparisons are false on
a missing value and their negations true. Adding an operator touches this file only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["OPERATORS", "Operator", "glob_to_lua", "glob_to_regex", "glob_tokens"]

Json = dict[str, Any]


class CheckError(ValueError):
    """An operator argument that does not fit the field (message for the user)."""


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
        raise CheckError(f"compares a {ftype} field to {got} {v!r}")
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
    glob_tokens(arg)  # syntax check
    return arg


_LUA_MAGIC = set("()%.[]*+?{}|")  # what the engine lets and needs escaped with %


def glob_tokens(pattern: str) -> list[tuple[str, str]]:
    """Split a glob into ``("star"|"one"|"lit", ch)`` and ``("class", body)`` tokens.

    Syntax: ``*`` any run, ``?`` one character, ``[abc]`` / ``[a-z]`` / ``[!abc]`` a class,
    ``\\x`` a literal ``x``; everything else is literal. Matching is whole-string.
    """
    out: list[tuple[str, str]] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "*":
            out.append(("star", c))
        elif c == "?":
            out.append(("one", c))
        elif c == "[":
            end = pattern.find("]", i + 2 if pattern[i + 1 : i + 2] in ("!", "]") else i + 1)
            if end == -1:
                raise CheckError(f"unclosed '[' in glob {pattern!r}")
            out.append(("class", pattern[i + 1 : end]))
            i = end
        elif c == "\\" and i + 1 < len(pattern):
            i += 1
            out.append(("lit", pattern[i]))
        else:
            out.append(("lit", c))
        i += 1
    return out


def _translate(pattern: str, literal: Callable[[str], str], class_body: Callable[[str], str]) -> str:
    """Glob tokens to a pattern where ``.`` is any character and ``.*`` any run."""
    out = []
    for kind, text in glob_tokens(pattern):
        if kind == "star":
            out.append(".*")
        elif kind == "one":
            out.append(".")
        elif kind == "class":
            neg = text.startswith("!")
            out.append("[" + ("^" if neg else "") + class_body(text[1:] if neg else text) + "]")
        else:
            out.append(literal(text))
    return "".join(out)


def glob_to_lua(pattern: str) -> str:
    """Translate a glob to the engine's ``$mt`` pattern (Lua-style, whole-string)."""
    return _translate(
        pattern,
        lambda ch: ("%" + ch) if ch in _LUA_MAGIC else ch,
        lambda body: "".join(("%" + ch) if ch in "%[" else ch for ch in body),
    )


def glob_to_regex(pattern: str) -> str:
    """The same glob as a Python regular expression (for analysis tools)."""
    import re

    body = _translate(pattern, re.escape, lambda b: b.replace("\\", "\\\\").replace("]", "\\]"))
    return "(?s:" + body + r")\Z"


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


def _lower_in(key: str, values: tuple) -> tuple[Json, Json]:
    return _any_of([{key: v} for v in values]), _all_of([{"$neq": {key: v}} for v in values])


def _lower_not_in(key: str, values: tuple) -> tuple[Json, Json]:
    pos, neg = _lower_in(key, values)
    return neg, pos


def _lower_glob(key: str, pattern: str) -> tuple[Json, Json | None]:
    return {"$mt": {key: glob_to_lua(pattern)}}, None  # the engine has no working negated match


@dataclass(frozen=True)
class Operator:
    """``presence``: the operator speaks about absent/null itself (exists, null, absent, empty)."""

    name: str
    check: Callable[[str, tuple[str, ...], Any], Any]
    lower: Callable[[str, Any], tuple[Json, Json | None]]
    doc: str
    presence: bool = False
    field_operand: bool = False


OPERATORS: dict[str, Operator] = {
    op.name: op
    for op in [
        Operator("eq", _check_eq, _lower_eq, "equal to a value or field", field_operand=True),
        Operator("ne", _check_eq, _lower_ne, "has a value, not equal to", field_operand=True),
        Operator("lt", _check_order, _cmp("$lt", "$gte"), "less than", field_operand=True),
        Operator("lte", _check_order, _cmp("$lte", "$gt"), "at most", field_operand=True),
        Operator("gt", _check_order, _cmp("$gt", "$lte"), "greater than", field_operand=True),
        Operator("gte", _check_order, _cmp("$gte", "$lt"), "at least", field_operand=True),
        Operator("in", _check_set, _lower_in, "one of a list or named set"),
        Operator("not_in", _check_set, _lower_not_in, "has a value, none of a list or set"),
        Operator("glob", _check_glob, _lower_glob, "matches a glob pattern (whole string)"),
        Operator("exists", _check_bool, lambda k, v: ({}, {}), "present and not null", presence=True),
        Operator("null", _check_bool, lambda k, v: ({}, {}), "present with value null", presence=True),
        Operator("absent", _check_bool, lambda k, v: ({}, {}), "not given and no default", presence=True),
        Operator("empty", _check_empty, lambda k, v: ({}, {}), "list with no elements", presence=True),
    ]
}
