"""Declarations of a pack as plain data, and what changed between two packs.

Generic over the pack format: every top-level section of every file becomes
``section -> name -> value``. Mappings are keyed by their keys, lists of entries
by their ``id`` (rules by their pack-wide id), and the fact schema by field path.
"""

from __future__ import annotations

import json
from typing import Any

from ..compiler import CompileContext

__all__ = ["diff_declarations", "inventory"]

Inventory = dict[str, dict[str, Any]]


def _schema_fields(fields: dict[str, Any], prefix: str, out: dict[str, Any]) -> None:
    for name, spec in fields.items():
        path = f"{prefix}{name}"
        if not isinstance(spec, dict):
            out[path] = spec
            continue
        out[path] = {k: v for k, v in spec.items() if k not in ("fields", "items")}
        if isinstance(spec.get("fields"), dict):
            _schema_fields(spec["fields"], path + ".", out)
        items = spec.get("items")
        if isinstance(items, dict):
            out[path + "[]"] = {k: v for k, v in items.items() if k != "fields"}
            if isinstance(items.get("fields"), dict):
                _schema_fields(items["fields"], path + "[].", out)


def inventory(ctx: CompileContext) -> Inventory:
    """``section -> name -> value`` for everything the pack declares."""
    rule_ids = {(r.src.name, r.path[1]): r.id for r in ctx.rules}
    out: Inventory = {}
    for src, _ in ctx.files:
        data = src.data if isinstance(src.data, dict) else {}
        for section, value in data.items():
            table = out.setdefault(section, {})
            if section == "schema" and isinstance(value, dict):
                for k, v in value.items():
                    if k != "fields":
                        table[k] = v
                _schema_fields(value.get("fields") or {}, "", table)
            elif isinstance(value, dict):
                table.update(value)
            elif isinstance(value, list):
                for i, item in enumerate(value):
                    name = item.get("id") if isinstance(item, dict) else None
                    table[rule_ids.get((src.name, i), str(name) if name is not None else str(i))] = item
            else:
                table[section] = value
    return out


def _norm(v: Any) -> str:
    return json.dumps(v, sort_keys=True, default=str)


def _details(a: Any, b: Any, path: str = "") -> list[dict[str, Any]]:
    """Field-level differences between two declaration values."""
    if isinstance(a, dict) and isinstance(b, dict):
        out: list[dict[str, Any]] = []
        for k in [*a, *(k for k in b if k not in a)]:
            sub = f"{path}.{k}" if path else str(k)
            if k not in b:
                out.append({"path": sub, "removed": a[k]})
            elif k not in a:
                out.append({"path": sub, "added": b[k]})
            else:
                out += _details(a[k], b[k], sub)
        return out
    scalars = (str, int, float, bool, type(None))
    if isinstance(a, list) and isinstance(b, list) and all(isinstance(x, scalars) for x in a + b):
        gone = [x for x in a if x not in b]
        new = [x for x in b if x not in a]
        if gone or new:
            return [{"path": path, **({"removed": gone} if gone else {}), **({"added": new} if new else {})}]
        return [] if a == b else [{"path": path, "old": a, "new": b}]
    if _norm(a) != _norm(b):
        return [{"path": path, "old": a, "new": b}]
    return []


def diff_declarations(old: Inventory, new: Inventory) -> dict[str, list[dict[str, Any]]]:
    """Added, removed and changed declarations, and keys or members that moved between entries."""
    added: list[dict[str, Any]] = []
    removed: list[dict[str, Any]] = []
    changed: list[dict[str, Any]] = []
    for section in [*old, *(s for s in new if s not in old)]:
        a, b = old.get(section, {}), new.get(section, {})
        for name in [*a, *(n for n in b if n not in a)]:
            if name not in b:
                removed.append({"section": section, "name": name, "value": a[name]})
            elif name not in a:
                added.append({"section": section, "name": name, "value": b[name]})
            else:
                details = _details(a[name], b[name])
                if details:
                    changed.append({"section": section, "name": name, "details": details})
    moved: list[dict[str, Any]] = []
    for c in changed:
        for d in c["details"]:
            gone = d.get("removed")
            keys = gone if isinstance(gone, list) else [d["path"].rsplit(".", 1)[-1]] if "removed" in d else []
            for key in keys:
                for c2 in changed:
                    if c2 is c or c2["section"] != c["section"]:
                        continue
                    for d2 in c2["details"]:
                        got = d2.get("added")
                        keys2 = (
                            got if isinstance(got, list) else [d2["path"].rsplit(".", 1)[-1]] if "added" in d2 else []
                        )  # noqa: E501
                        if key in keys2:
                            moved.append({"section": c["section"], "what": key, "from": c["name"], "to": c2["name"]})
    return {"added": added, "removed": removed, "changed": changed, "moved": moved}
