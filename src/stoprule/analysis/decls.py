"""What changed between the declarations of two packs.

Declarations come as ``section -> name -> value`` (the checked policy's ``inventory``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = ["Inventory", "diff_declarations"]

Inventory = Mapping[str, Mapping[str, Any]]


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
