"""What every format's reader shares: :class:`ScanState` (what a scan keeps between stops, and
the updates each format makes to it: a prompt, a turn, a failed tool, a new task list) and
the patterns more than one format's prefilter or reader uses.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

from stoprule._util.jsonout import dumps
from stoprule._util.regex import lazy

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re
    from collections.abc import Callable
    from typing import Any

    from typing_extensions import Self

__all__ = ["EXIT", "USER", "ScanState", "kv", "status", "title"]

MAX_FAILED = 5
MAX_FAILED_IDS = 50


def kv(key: bytes, value: bytes) -> re.Pattern[bytes]:
    """``"key":"value"`` / ``"key": value`` in a raw line, whatever the spacing (compiled on first use)."""
    return lazy(rb'"' + key + rb'"\s*:\s*' + value)


USER = kv(b"type", b'"user"')
# a failed command's exit status in a tool result's text (Codex function_call_output, Gemini shell output)
EXIT = lazy(r"(?:Process exited with code|Exit code:|Exit Code:)\s*(-?\d+)")
_DONE = {"completed": "complete", "complete": "complete", "done": "complete"}
_SWITCH = lazy(r"(?mi)^\s*stoprule:\s*mode\s*=\s*(auto|autonomous|interactive)\s*$")


def status(value: Any) -> str:
    s = value if isinstance(value, str) else "pending"
    return _DONE.get(s, s)


def title(item: dict[str, Any], *keys: str) -> str:
    for k in keys:
        v = item.get(k)
        if isinstance(v, str) and v.strip():
            return v.strip()
    return "(untitled task)"


class ScanState:
    """What a scan of one transcript format keeps; ``state`` is JSON-serializable."""

    def __init__(self, fmt: str, state: dict[str, Any] | None = None, full: bool = False) -> None:
        self.fmt = fmt
        self.full = full  # decode every line (replay), not only those the prefilter keeps
        s = state or {}
        self.turns: int | None = s.get("turns", 0)
        self.tasks: list[dict[str, Any]] = s.get("tasks", [])
        self.partial_tasks: bool = s.get("partial_tasks", False)
        self.pending: dict[str, int] = s.get("pending", {})  # Claude TaskCreate tool_use id -> task index
        self.names: dict[str, str] = s.get("names", {})  # recent tool_use id -> tool name
        self.failed: list[dict[str, str]] = s.get("failed", [])
        self.last_text: str | None = s.get("last_text")
        self.last_turn: str | None = s.get("last_turn")
        self.failed_ids: list[str] = s.get("failed_ids", [])  # call ids already counted (records repeat)
        self.after_block: bool = s.get("after_block", False)  # Copilot: the next user message is a hook's
        self.todo_undo: dict[str, Any] = s.get("todo_undo", {})  # the last todo call's id -> the list before it
        self.mode_switch: str | None = s.get("mode_switch")  # the user's latest `stoprule: mode=` in a prompt
        self.mode_signal: list[str] | None = s.get("mode_signal")  # [mode, source] the transcript says
        self.legacy_turns: bool = s.get("legacy_turns", False)  # Codex turn_context without turn_id
        self.prompt_turn: bool = s.get("prompt_turn", False)  # Codex: a prompt counted before any turn_context
        self.user_query: bool = s.get("user_query", False)  # Cursor wraps the user's prompts in <user_query>
        self.versions: list[str] = s.get("versions", [])  # the harness versions the records name
        self.skipped: dict[str, int] = {}
        self.document: bool = s.get("document", False)  # a single JSON document (Gemini CLI's older .json chats)
        self.on_turn: Callable[[Self], None] | None = None  # called before a new turn starts (replay)

    def state(self) -> dict[str, Any]:
        return {
            "turns": self.turns,
            "tasks": self.tasks,
            "partial_tasks": self.partial_tasks,
            "pending": self.pending,
            "names": self._recent_names(50),
            "failed": self.failed,
            "last_text": self.last_text[-4000:] if self.last_text else self.last_text,
            "last_turn": self.last_turn,
            "failed_ids": self.failed_ids[-MAX_FAILED_IDS:],
            "after_block": self.after_block,
            "todo_undo": self.todo_undo,
            "mode_switch": self.mode_switch,
            "mode_signal": self.mode_signal,
            "legacy_turns": self.legacy_turns,
            "prompt_turn": self.prompt_turn,
            "user_query": self.user_query,
            "versions": self.versions[-3:],
            "document": self.document,
        }

    def _recent_names(self, n: int) -> dict[str, str]:
        """The ``n`` tool names seen last (read from the end: a replay's scan keeps them all)."""
        if len(self.names) <= n:
            return dict(self.names)
        items = reversed(self.names.items())
        last = [next(items) for _ in range(n)]
        last.reverse()
        return dict(last)

    # ---------------------------------------------------------------- what the formats' readers update

    def skip(self, why: str) -> None:
        self.skipped[why] = self.skipped.get(why, 0) + 1

    def prompt(self, text: Any) -> None:
        """A human prompt's text: the user's mode switch, if it has one."""
        if isinstance(text, str) and "stoprule:" in text:
            m = _SWITCH.search(text)
            if m:
                self.mode_switch = None if m.group(1).lower() == "auto" else m.group(1).lower()

    def version(self, v: Any) -> None:
        if isinstance(v, str) and v and (not self.versions or self.versions[-1] != v):
            self.versions = (self.versions + [v])[-3:]

    def turn(self: Self) -> None:
        if self.on_turn is not None and self.turns:
            self.on_turn(self)
        if self.turns is not None:
            self.turns += 1
        self.failed = []

    def fail(self, tool: str, error: Any, call_id: Any = None) -> None:
        if isinstance(call_id, str) and call_id in self.todo_undo:  # the todo call was refused
            undo = self.todo_undo.pop(call_id)
            self.tasks, self.partial_tasks = undo["tasks"], undo["partial"]
        if isinstance(call_id, str):
            if call_id in self.failed_ids:
                return
            self.failed_ids = (self.failed_ids + [call_id])[-MAX_FAILED_IDS:]
        text = error if isinstance(error, str) else dumps(error, ensure_ascii=False)[:400]
        self.failed = (self.failed + [{"tool": tool, "error": text.strip()[:200]}])[-MAX_FAILED:]

    def set_tasks(self, items: Any, *title_keys: str, call_id: Any = None) -> None:
        if not isinstance(items, list):
            return
        # kept until the call's result: a todo call the harness refused leaves the list as it was
        self.todo_undo = (
            {call_id: {"tasks": self.tasks, "partial": self.partial_tasks}} if isinstance(call_id, str) else {}
        )
        self.tasks = [
            {"id": None, "title": title(t, *title_keys), "status": status(t.get("status"))}
            for t in items
            if isinstance(t, dict)
        ]
        self.partial_tasks = False
        self.pending = {}
