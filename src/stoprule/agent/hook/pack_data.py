"""The agent-facing data a pack ships beside its rules: ``<pack>/agent/<name>.json`` (JSON, so
the hook reads it without YAML), else the bundled pack's. The default pack's is
``policies/agent/triage.json``: question patterns, the standing instructions, the answer to a
permission request. Code here knows the file's shape, never its words.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

from stoprule._util import oslite as os
from stoprule._util.jsonin import loads

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["pack_data", "render_text"]

_CACHE: dict[str, dict[str, Any]] = {}


def pack_data(pack: str | None, name: str = "triage") -> dict[str, Any]:
    """The pack's ``agent/<name>.json`` (``{}`` when neither the pack nor the bundled one has it)."""
    from stoprule.engine.packs import _bundled

    for root in (pack, _bundled()):
        if not root:
            continue
        path = os.path.join(root, "agent", f"{name}.json")
        if path in _CACHE:
            return _CACHE[path]
        try:
            with open(path, encoding="utf-8") as fh:
                data = loads(fh.read())
        except FileNotFoundError:
            continue
        except (OSError, ValueError) as exc:
            raise ValueError(f"{path}: not a readable JSON object: {exc}") from None
        if not isinstance(data, dict):
            raise ValueError(f"{path}: not a JSON object")
        _CACHE[path] = data
        return data
    return {}


def render_text(template: str, values: dict[str, str]) -> str:
    """``template`` with each ``{key}`` of ``values`` replaced (other braces kept as they are)."""
    for key, value in values.items():
        template = template.replace("{" + key + "}", value)
    return template
