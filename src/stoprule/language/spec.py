"""The policy file format as pydantic models (strict: unknown keys are errors).

Conditions (``when``) stay raw here; :mod:`stoprule.language.conditions` parses them so that
every mistake inside one gets its own path and location.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from stoprule.diagnostics import Diagnostic
from stoprule.language.source import SourceFile

__all__ = [
    "FieldSpec",
    "HighRiskStopSpec",
    "PackFile",
    "RuleSpec",
    "SchemaSpec",
    "SetSpec",
    "VerdictSpec",
    "parse_file",
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
    "extra_forbidden": "policy.unknown_key",
    "missing": "policy.missing_key",
    "literal_error": "policy.bad_value",
}


def parse_file(src: SourceFile, diags: list[Diagnostic]) -> PackFile | None:
    """Validate one file against :class:`PackFile`; errors become diagnostics."""
    if not isinstance(src.data, dict):
        diags.append(src.diag((), "policy.not_mapping", "a pack file must be a YAML mapping"))
        return None
    data = src.data
    sets = data.get("sets")
    if isinstance(sets, dict) and any(isinstance(v, list) for v in sets.values()):
        # shorthand `name: [a, b]` for `name: {members: [a, b]}`
        data = {**data, "sets": {k: {"members": v} if isinstance(v, list) else v for k, v in sets.items()}}
    try:
        return PackFile.model_validate(data)
    except ValidationError as exc:
        for err in exc.errors():
            loc = _data_path(data, tuple("schema" if p == "fact_schema" else p for p in err["loc"]))
            code = _CODES.get(err["type"], "policy.type")
            msg = err["msg"]
            if code == "policy.unknown_key" and loc:
                msg = f"unknown key {loc[-1]!r}"
            diags.append(src.diag(loc, code, msg))
        return None


def _data_path(data: Any, loc: tuple) -> tuple:
    """Pydantic's error location without its union tags (``list[str]``, ``function-after[...]``),
    keeping keys of the data that merely look like them (a key ``"['a', 'b']"``)."""
    out = []
    cur: Any = data
    for p in loc:
        inside = (isinstance(cur, dict) and p in cur) or (
            isinstance(cur, list) and isinstance(p, int) and 0 <= p < len(cur)
        )
        if inside:
            cur = cur[p]
        elif isinstance(p, str) and "[" in p:
            continue  # a tag pydantic adds for a union member
        else:
            cur = None
        out.append(p)
    return tuple(out)
