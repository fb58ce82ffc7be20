"""One module per harness, each with ``parse(payload, event) -> HookEvent`` and
``render(decision, event) -> dict | None`` (None: print nothing, which means allow).

Modules: ``claude_code``, ``codex``, ``gemini``, ``cursor``, ``copilot``, ``opencode`` (the
generated plugin's payloads), and ``_common`` (what they share).

Adding a harness is one module here, one row in :data:`ADAPTERS` and its import in
:func:`adapter`, and one fixture folder
(``tests/fixtures/hooks/<harness>/``).

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import ModuleType
    from typing import Any

__all__ = ["ADAPTERS", "adapter", "decode_payload"]

ADAPTERS: dict[str, str] = {
    "claude-code": "claude_code",
    "codex": "codex",
    "gemini": "gemini",
    "cursor": "cursor",
    "copilot": "copilot",
    "opencode": "opencode",
}


def adapter(harness: str) -> ModuleType:
    """The adapter module of ``harness`` (KeyError if unknown); only that one is imported."""
    name = ADAPTERS[harness]
    if name == "claude_code":
        from stoprule.agent.hook.adapters import claude_code

        return claude_code
    if name == "codex":
        from stoprule.agent.hook.adapters import codex

        return codex
    if name == "gemini":
        from stoprule.agent.hook.adapters import gemini

        return gemini
    if name == "cursor":
        from stoprule.agent.hook.adapters import cursor

        return cursor
    if name == "copilot":
        from stoprule.agent.hook.adapters import copilot

        return copilot
    from stoprule.agent.hook.adapters import opencode

    return opencode


def decode_payload(data: bytes) -> dict[str, Any]:
    """The payload object from stdin bytes: one UTF-8 BOM stripped, empty input is ``{}``."""
    from stoprule._util.jsonin import loads
    from stoprule.agent.hook.event import PayloadError

    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if not data.strip():
        return {}
    try:
        value = loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise PayloadError(f"stdin is not a JSON object: {exc}") from None
    if not isinstance(value, dict):
        raise PayloadError("stdin is not a JSON object")
    return value
