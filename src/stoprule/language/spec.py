"""The policy file format as pydantic models (strict: unknown keys are errors).

Conditions (``when``) stay raw here; :mod:`stoprule.language.conditions` parses them so that
every mistake inside one gets its own path and location.
"""

from __future__ import annotations

import types
import typing
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from stoprule import codes
from stoprule._util.hints import closest
from stoprule.diagnostic import Diagnostic
from stoprule.language.source import SourceFile

__all__ = [
    "FieldSpec",
    "HighRiskStopSpec",
    "PackFile",
    "RuleSpec",
    "SchemaSpec",
    "SetSpec",
    "VerdictSpec",
    "describe",
    "parse_file",
    "validation_messages",
]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True)


FieldType = Literal["bool", "int", "number", "string", "enum", "list", "object"]


class FieldSpec(_Strict):
    """One field of the fact schema."""

    type: FieldType
    description: str | None = None
    required: bool = False
    nullable: bool = False
    default: Any = None
    aliases: list[str] = Field(default_factory=list)
    values: list[str] | None = None
    items: FieldSpec | None = None
    fields: dict[str, FieldSpec] | None = None
    required_if: str | None = None


class SchemaSpec(_Strict):
    additional_fields: Literal["allow", "reject"] = "allow"
    fields: dict[str, FieldSpec] = Field(default_factory=dict)


class SetSpec(_Strict):
    description: str | None = None
    members: list[str | int]


class VerdictSpec(_Strict):
    """A verdict kind: whether it is ok and what a stop hook should do."""

    ok: bool
    stop: Literal["allow", "block"]
    requires_user_review: bool = False
    retryable: bool = False
    description: str | None = None


class HighRiskStopSpec(_Strict):
    id: str
    description: str
    when: Any


class RuleSpec(_Strict):
    id: str
    priority: int = Field(ge=0, le=65535)
    when: Any
    verdict: str
    reason: str
    message: str
    review_reason: str | None = None
    description: str | None = None


class PackMeta(_Strict):
    name: str
    description: str | None = None
    version: str | None = None


class PackFile(_Strict):
    """One YAML file of a pack; every section is optional."""

    pack: PackMeta | None = None
    fact_schema: SchemaSpec | None = Field(default=None, alias="schema")
    sets: dict[str, SetSpec] = Field(default_factory=dict)
    conditions: dict[str, Any] = Field(default_factory=dict)
    blocker_categories: dict[str, dict[str, str]] = Field(default_factory=dict)
    legal_closure_states: dict[str, str] = Field(default_factory=dict)
    high_risk_stops: list[HighRiskStopSpec] = Field(default_factory=list)
    verdicts: dict[str, VerdictSpec] = Field(default_factory=dict)
    rules: list[RuleSpec] = Field(default_factory=list)


_CODES = {
    "extra_forbidden": codes.POLICY_UNKNOWN_KEY,
    "missing": codes.POLICY_MISSING_KEY,
    "literal_error": codes.POLICY_BAD_VALUE,
}

# what a value must be, by pydantic's error type (our own wording: no pydantic text reaches users)
_EXPECTED = {
    "int_type": "an integer",
    "int_parsing": "an integer",
    "int_from_float": "an integer",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "string_type": "a string",
    "list_type": "a list",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
    "float_type": "a number",
}


def describe(value: Any) -> str:
    """A YAML value as a policy author wrote it: ``a string 'abc'``, ``a list``, ``null``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"the integer {value}"
    if isinstance(value, float):
        return f"the number {value:g}"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"the string {shown!r}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return f"a {type(value).__name__}"


def _keys_of(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    """The keys ``model`` allows in the mapping at ``loc`` (a path of the data), for did-you-mean."""
    cur: Any = model
    for part in loc:
        while True:  # unwrap Optional, list[...] and dict[str, ...] down to a model
            origin = typing.get_origin(cur)
            if origin in (typing.Union, types.UnionType):
                models = [a for a in typing.get_args(cur) if isinstance(a, type) and issubclass(a, BaseModel)]
                if len(models) != 1:
                    return []
                cur = models[0]
            else:
                break
        if isinstance(cur, type) and issubclass(cur, BaseModel):
            by_key = {(f.alias or name): f for name, f in cur.model_fields.items()}
            found = by_key.get(str(part))
            if found is None:
                return []
            cur = found.annotation
        elif typing.get_origin(cur) is list and isinstance(part, int):
            cur = typing.get_args(cur)[0]
        elif typing.get_origin(cur) is dict:
            cur = typing.get_args(cur)[1]
        else:
            return []
    args = [cur, *typing.get_args(cur)]
    for a in args:
        if isinstance(a, type) and issubclass(a, BaseModel):
            return [f.alias or name for name, f in a.model_fields.items()]
    return []


def validation_messages(model: type[BaseModel], data: Any, errors: list[Any]) -> list[tuple[tuple[Any, ...], str, str]]:
    """Pydantic's errors (``exc.errors()``, validating ``data`` against ``model``) as (path, code,
    message) in our words, one per mistake; codes ``policy.unknown_key``, ``policy.missing_key``,
    ``policy.bad_value``, ``policy.type``.

    A union reports each member (``must be a string``, ``must be an integer``): one message at
    the value. A misspelt key reports twice (unknown key, and the key it meant is missing): one
    message, ``unknown key 'prority' (did you mean 'priority'?)``.
    """
    by_path: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for err in errors:
        loc = _data_path(data, tuple("schema" if p == "fact_schema" else p for p in err["loc"]))
        by_path.setdefault(loc, []).append(err)
    missing = {loc for loc, errs in by_path.items() if any(e["type"] == "missing" for e in errs)}
    meant: set[tuple[Any, ...]] = set()  # missing keys an unknown key beside them misspells
    out: list[tuple[tuple[Any, ...], str, str]] = []
    for loc, errs in by_path.items():
        if not any(e["type"] == "extra_forbidden" for e in errs) or not loc:
            continue
        parent, key = loc[:-1], str(loc[-1])
        absent = [str(m[-1]) for m in missing if m[:-1] == parent]
        best = closest(key, absent) or closest(key, _keys_of(model, parent))
        if best is not None and (*parent, best) in missing:
            meant.add((*parent, best))
        hint = f" (did you mean {best!r}?)" if best is not None else ""
        out.append((loc, codes.POLICY_UNKNOWN_KEY, f"unknown key {key!r}{hint}"))
    for loc, errs in by_path.items():
        kinds = [e["type"] for e in errs]
        if "extra_forbidden" in kinds or loc in meant:
            continue
        if "missing" in kinds:
            out.append((loc, codes.POLICY_MISSING_KEY, f"missing required key {str(loc[-1])!r}" if loc else "missing"))
            continue
        value = errs[0].get("input")
        first = errs[0]
        if first["type"] == "literal_error":
            choices = first.get("ctx", {}).get("expected", "")
            msg = f"must be {choices}, not {describe(value)}"
            best = closest(str(value), [c.strip(" '") for c in choices.replace(" or ", ", ").split(",")])
            if best is not None:
                msg += f" (did you mean {best!r}?)"
            out.append((loc, codes.POLICY_BAD_VALUE, msg))
        elif first["type"] in ("greater_than_equal", "less_than_equal", "greater_than", "less_than"):
            ctx = first.get("ctx", {})
            bound = next(iter(ctx.values()), "")
            words = {
                "greater_than_equal": "at least",
                "less_than_equal": "at most",
                "greater_than": "more than",
                "less_than": "less than",
            }
            out.append((loc, codes.POLICY_TYPE, f"must be {words[first['type']]} {bound}, not {value}"))
        else:
            wants = list(dict.fromkeys(_EXPECTED.get(e["type"], "") for e in errs))
            wants = [w for w in wants if w]
            want = " or ".join(wants) if wants else "a value of another type"
            out.append((loc, codes.POLICY_TYPE, f"must be {want}, not {describe(value)}"))
    return out


def parse_file(src: SourceFile, diags: list[Diagnostic]) -> PackFile | None:
    """Validate one file against :class:`PackFile`; errors become diagnostics."""
    if not isinstance(src.data, dict):
        diags.append(src.diag((), codes.POLICY_NOT_MAPPING, "a pack file must be a YAML mapping"))
        return None
    data = src.data
    sets = data.get("sets")
    if isinstance(sets, dict) and any(isinstance(v, list) for v in sets.values()):
        # shorthand `name: [a, b]` for `name: {members: [a, b]}`
        data = {**data, "sets": {k: {"members": v} if isinstance(v, list) else v for k, v in sets.items()}}
    try:
        return PackFile.model_validate(data)
    except ValidationError as exc:
        for loc, code, msg in validation_messages(PackFile, data, exc.errors()):
            diags.append(src.diag(loc, code, msg))
        return None


def _data_path(data: Any, loc: tuple[Any, ...]) -> tuple[Any, ...]:
    """Pydantic's error location without its union tags (``list[str]``, ``function-after[...]``),
    keeping keys of the data that merely look like them (a key ``"['a', 'b']"``)."""
    out = []
    cur: Any = data
    absent = object()
    for p in loc:
        if not isinstance(cur, (dict, list)):
            continue  # below a scalar (or a missing key): only union tags (``str``, ``int``) follow
        inside = (isinstance(cur, dict) and p in cur) or (
            isinstance(cur, list) and isinstance(p, int) and 0 <= p < len(cur)
        )
        if inside:
            cur = cur[p]
        elif isinstance(p, str) and "[" in p:
            continue  # a tag pydantic adds for a union member
        else:
            cur = absent
        out.append(p)
    return tuple(out)
