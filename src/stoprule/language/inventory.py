"""What a pack declares, as JSON-ready data: rules in the order they are tried, verdict kinds,
sets, high-risk stops, named conditions, the fact schema, and the global pack layered under it
(``stoprule inspect`` prints it; the console's policy page shows it)."""

from __future__ import annotations

import os
from typing import Any

from stoprule.language.files import GLOBAL_PREFIX, layers

__all__ = ["inspect_data"]


def _where(loc: Any) -> str:
    return f"{loc.file}:{loc.line}"


def _fields(field: Any, prefix: str = "") -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for name, f in field.fields.items():
        path = f"{prefix}{name}"
        kind = f.type
        if f.type == "enum":
            kind = "enum(" + "|".join(f.values) + ")"
        elif f.type == "list" and f.items is not None:
            kind = f"list of {f.items.type}"
        out.append(
            {
                "field": path,
                "type": kind,
                "required": f.required,
                "nullable": f.nullable,
                "default": f.default if f.has_default else None,
                "aliases": list(f.aliases),
                "description": f.description or "",
            }
        )
        if f.type == "object":
            out += _fields(f, path + ".")
        elif f.type == "list" and f.items is not None and f.items.type == "object":
            out += _fields(f.items, path + "[].")
    return out


def inspect_data(checked: Any, root: str) -> dict[str, Any]:
    """Everything ``inspect`` shows, as JSON-ready data."""
    used, shadowed, glob = layers(root)
    verdicts = checked.verdicts
    order = sorted(checked.rules, key=lambda r: (-r.priority, r.index))
    rules = [
        {
            "rule": r.id,
            "priority": r.priority,
            "verdict": r.verdict,
            "reason": r.reason,
            "stop": verdicts[r.verdict].stop if r.verdict in verdicts else None,
            "ok": verdicts[r.verdict].ok if r.verdict in verdicts else None,
            "layer": "global" if r.loc.file.startswith(GLOBAL_PREFIX) else "pack",
            "where": _where(r.loc),
        }
        for r in order
    ]
    ties: list[dict[str, Any]] = []  # a global and a pack rule at one priority: declaration order decides
    by_priority: dict[int, list[dict[str, Any]]] = {}
    for r in rules:
        by_priority.setdefault(r["priority"], []).append(r)
    for priority, group in sorted(by_priority.items(), reverse=True):
        if {r["layer"] for r in group} == {"global", "pack"}:
            ties.append({"priority": priority, "rules": [r["rule"] for r in group], "wins": group[0]["rule"]})
    return {
        "pack": root,
        "name": checked.name,
        "digest": checked.digest,
        "files": list(checked.files),
        "rules": rules,
        "verdicts": [
            {
                "verdict": v.name,
                "ok": v.ok,
                "stop": v.stop,
                "requires_user_review": v.requires_user_review,
                "retryable": v.retryable,
                "where": _where(v.loc),
            }
            for v in verdicts.values()
        ],
        "sets": [{"set": s.name, "members": list(s.members), "where": _where(s.loc)} for s in checked.sets.values()],
        "stops": [{"stop": s.id, "description": s.description, "where": _where(s.loc)} for s in checked.stops],
        "conditions": [{"condition": c.name, "where": _where(c.loc)} for c in checked.conditions.values()],
        "schema": _fields(checked.schema.root),
        "layers": {
            "global": glob,
            "global_files": [os.path.basename(p) for p in used],
            "shadowed": [os.path.basename(p) for p in shadowed],
            "same_priority": ties,
        },
    }
