"""JSON Schemas (draft 2020-12): of the policy file format, and of a pack's facts.

The policy schema lets editors validate and complete pack files as they are typed
(``# yaml-language-server: $schema=...``); the fact schema lets scripts check facts
before sending them.
"""

from __future__ import annotations

from typing import Any

from stoprule.facts.schema import FactField, FactSchema
from stoprule.language.operators import OPERATORS
from stoprule.language.spec import PackFile

__all__ = ["fact_json_schema", "policy_json_schema"]

DRAFT = "https://json-schema.org/draft/2020-12/schema"
Json = dict[str, Any]

_SCALAR: Json = {"type": ["string", "number", "boolean"]}


def _condition_defs() -> dict[str, Json]:
    cond = {"$ref": "#/$defs/Condition"}
    ops = {name: {**op.arg_schema, "title": name, "description": op.doc} for name, op in OPERATORS.items()}
    return {
        "Condition": {
            "title": "Condition",
            "description": "true/false, all/any/not, ref, high_risk_stop, some/every + where, or field tests.",
            "anyOf": [
                {"type": "boolean"},
                {
                    "type": "object",
                    "minProperties": 1,
                    "properties": {
                        "all": {"type": "array", "minItems": 1, "items": cond, "title": "All of"},
                        "any": {"type": "array", "minItems": 1, "items": cond, "title": "Any of"},
                        "not": {**cond, "title": "Not"},
                        "ref": {"type": "string", "title": "Named condition"},
                        "high_risk_stop": {"type": "boolean", "title": "A declared high-risk stop applies"},
                        "some": {"type": "string", "title": "Some element of a list matches `where`"},
                        "every": {"type": "string", "title": "Every element of a list matches `where`"},
                        "where": {**cond, "title": "Condition on each list element"},
                    },
                    "additionalProperties": {"$ref": "#/$defs/FieldTest"},
                },
            ],
        },
        "FieldTest": {
            "title": "Field test",
            "description": "A value (shorthand for eq) or a mapping of operators, all of which must hold.",
            "anyOf": [
                _SCALAR,
                {"type": "object", "minProperties": 1, "properties": ops, "additionalProperties": False},
            ],
        },
    }


def _replace_any(node: Any, defs_key: str) -> Any:
    """Point the pydantic ``Any`` slots that hold conditions at the Condition definition."""
    if isinstance(node, dict):
        out = {k: _replace_any(v, defs_key) for k, v in node.items()}
        for key in ("when",):
            if key in out.get("properties", {}):
                out["properties"][key] = {**out["properties"][key], "$ref": "#/$defs/Condition"}
        return out
    if isinstance(node, list):
        return [_replace_any(v, defs_key) for v in node]
    return node


def policy_json_schema() -> Json:
    """The schema of one pack file (every section optional, unknown keys rejected)."""
    schema = PackFile.model_json_schema(by_alias=True)
    schema = _replace_any(schema, "$defs")
    schema["properties"]["conditions"]["additionalProperties"] = {"$ref": "#/$defs/Condition"}
    sets = schema["properties"]["sets"]
    sets["additionalProperties"] = {"anyOf": [{"$ref": "#/$defs/SetSpec"}, {"type": "array", "items": _SCALAR}]}
    schema["$defs"].update(_condition_defs())
    return {
        "$schema": DRAFT,
        "title": "stoprule policy file",
        **{k: v for k, v in schema.items() if k != "title"},
    }


def _field(f: FactField) -> Json:
    t = f.type
    out: Json
    if t == "enum":
        out = {"enum": list(f.values)}
    elif t == "number":
        out = {"type": "number"}
    elif t == "int":
        out = {"type": "integer"}
    elif t == "bool":
        out = {"type": "boolean"}
    elif t == "string":
        out = {"type": "string"}
    elif t == "list":
        assert f.items is not None
        out = {"type": "array", "items": _field(f.items)}
    else:
        out = _object(f)
    if f.nullable:
        out = {"anyOf": [out, {"type": "null"}]}
    if f.description:
        out["description"] = f.description
    if f.has_default:
        out["default"] = f.default
    return out


def _object(obj: FactField) -> Json:
    props: Json = {}
    all_of: list[Json] = []
    for name, f in obj.fields.items():
        props[name] = _field(f)
        for alias in f.aliases:
            props[alias] = {"$comment": f"alias of {name}", **_field(f)}
        spellings = [name, *f.aliases]
        if f.required:
            all_of.append({"anyOf": [{"required": [s]} for s in spellings]})
        if len(spellings) > 1:  # at most one spelling of a field
            all_of.append({"not": {"anyOf": [{"required": [a, b]} for a in spellings for b in spellings if a < b]}})
        if f.required_if:
            all_of.append(
                {
                    "if": {"properties": {f.required_if: {"const": True}}, "required": [f.required_if]},
                    "then": {
                        "anyOf": [{"required": [s]} for s in spellings],
                        "properties": {s: {"not": {"enum": [None, ""]}} for s in spellings},
                    },
                }
            )
    out: Json = {"type": "object", "properties": props}
    if obj.additional == "reject":
        out["additionalProperties"] = False
    if all_of:
        out["allOf"] = all_of
    return out


def fact_json_schema(schema: FactSchema, *, title: str = "stoprule fact") -> Json:
    """The schema of a fact for ``schema``: types, enums, nullability, required fields, aliases."""
    return {"$schema": DRAFT, "title": title, **_object(schema.root)}
