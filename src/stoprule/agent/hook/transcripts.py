"""Reading agent transcripts (Claude Code JSONL, Codex rollout JSONL, Gemini chats JSONL,
Copilot CLI ``events.jsonl``, Cursor agent transcripts JSONL, Antigravity ``transcript.jsonl``).

A :class:`Scan` consumes complete lines in order and keeps what the stop decision needs:
the number of user turns, the latest task list, the failed tool results of the current
turn and the last assistant text. Its state is a plain dict, so the hook keeps it per
session in ``.stoprule/state/`` and the next stop reads only the bytes written since
(:func:`scan_file`): the cost of a stop does not grow with the transcript. A transcript
first seen when it is already longer than ``max_scan`` bytes is read from its last
``tail`` bytes only; its turn count is then unknown (no ``turns``, and a note says why).

Records are lines of JSONL, or pretty-printed objects spread over lines (:func:`records`);
compact lines are prefiltered on their bytes before being decoded (spaced JSON is decoded
whole). A record that is not JSON, nested too deeply, of an unknown type, or incomplete
(the last line without its newline) is skipped with a note, never an error, and the read
position always moves past it. A transcript replaced in place (truncated and rewritten,
or a new file on a reused inode) is noticed by a fingerprint of its first bytes and of
the bytes before the read position, and read again from the start.
Formats: Claude Code's, Codex's and Gemini CLI's session transcripts (JSONL).

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.


Lines are prefiltered on their bytes before being decoded; a line that is not JSON, of an
unknown type, or incomplete (the last line without its newline) is skipped with a note,
never an error. The prefilter tolerates JSON written with spaces (``"type": "user"``), so the
hook (prefiltered) and ``replay`` (every line) read the same. Formats: each harness's session
transcripts (checked against transcripts the real harnesses wrote: tests/fixtures/hooks/*/recorded/,
and public ones: tests/fixtures/sessions/transcripts/). Versions checked: Claude Code 1.0.x,
2.1.80-2.1.332; Codex 0.40.0 (VS Code), 0.50-0.53, 0.60.1, 0.77, 0.106, 0.146, 0.169, 0.171; Gemini CLI 0.4x JSONL, the
single-document ``.json`` chats, 0.61.0, ``/chat share`` JSON exports (2026-01); Copilot CLI
0.0.420-1.0.102; Cursor agent JSONL; Antigravity's ``transcript.jsonl`` (public sessions: the CLI,
2026-07; the 2.0 desktop app, 2026-09). A line of a type the reader does not know is skipped with a note.
"""

from __future__ import annotations

import os
import stat
import time

from stoprule._util.jsonin import loads
from stoprule._util.jsonout import dumps
from stoprule._util.native import crc32
from stoprule._util.regex import compiled, lazy

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re
    from collections.abc import Callable, Iterator
    from typing import Any, BinaryIO

__all__ = ["FORMATS", "Scan", "detect", "observations", "records", "scan_file"]

FORMATS = ("claude", "codex", "gemini", "copilot", "cursor", "antigravity")
# Copilot's and Cursor's formats are sniffed from the file (they are not documented)
HARNESS_FORMAT = {"claude-code": "claude", "codex": "codex", "gemini": "gemini", "antigravity": "antigravity"}
MAX_FAILED = 5
MAX_FAILED_IDS = 50


def _kv(key: bytes, value: bytes) -> re.Pattern[bytes]:
    """``"key":"value"`` / ``"key": value`` in a raw line, whatever the spacing (compiled on first use)."""
    return lazy(rb'"' + key + rb'"\s*:\s*' + value)


_USER = _kv(b"type", b'"user"')
_ASSISTANT = _kv(b"type", b'"assistant"')
_GEMINI = _kv(b"type", b'"gemini"')
_IS_ERROR = _kv(b"is_error", b"true")
# Claude Code user lines that are not a human prompt
_NOT_PROMPT = (
    "[Request interrupted by user",
    "<command-name>",
    "<command-message>",
    "<command-args>",
    "<local-command-stdout>",
    "<local-command-stderr>",
    "Caveat: The messages below were generated",
    "<bash-input>",
    "<bash-stdout>",
    "<bash-stderr>",
    "<task-notification>",
)
# a failed command's exit status in a tool result's text (Codex function_call_output, Gemini shell output)
_EXIT = lazy(r"(?:Process exited with code|Exit code:|Exit Code:)\s*(-?\d+)")
# the user's own words in an Antigravity USER_INPUT step (the rest is metadata Antigravity adds)
_AGY_WANTED = (b'"USER_INPUT"', b'"PLANNER_RESPONSE"', b'"error"', b'"ERROR"', b"exit code", b"exited with code")
# a command's end in an Antigravity step: the CLI's "failed with exit code: N", the IDE's "exited with code N."
_AGY_EXIT = lazy(r"(?m)^[ \t]*The command (?:failed with exit code:|exited with code)\s*(-?\d+)")
_AGY_REQUEST = lazy(r"(?s)<USER_REQUEST>\s*(.*?)\s*(?:</USER_REQUEST>|\Z)")
_DONE = {"completed": "complete", "complete": "complete", "done": "complete"}
_SWITCH = lazy(r"(?mi)^\s*stoprule:\s*mode\s*=\s*(auto|autonomous|interactive)\s*$")
# Claude Code's built-in slash commands: run locally, not a prompt to the model (a custom command is one)
_LOCAL_COMMANDS = frozenset(
    {
        "/clear",
        "/compact",
        "/model",
        "/help",
        "/cost",
        "/exit",
        "/quit",
        "/config",
        "/status",
        "/memory",
        "/login",
        "/logout",
        "/doctor",
        "/permissions",
        "/hooks",
        "/mcp",
        "/agents",
        "/resume",
        "/context",
        "/usage",
        "/vim",
        "/theme",
        "/terminal-setup",
        "/ide",
        "/add-dir",
        "/export",
        "/rewind",
        "/todos",
        "/bashes",
        "/statusline",
        "/output-style",
        "/privacy-settings",
        "/release-notes",
        "/upgrade",
        "/feedback",
        "/bug",
        "/tasks",
        "/plugin",
    }
)
_COMMAND = lazy(r"<command-name>\s*(/?[^<\s]+)\s*</command-name>")
_OPEN = ("pending", "in_progress")


# Claude Code line types that carry nothing the stop decision reads (seen in 2.1.332's transcripts)
# Codex user messages that are context the harness adds, not the user's prompt
_CODEX_CONTEXT = (
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md",
    "<turn_aborted>",
    "<hook_prompt",
    "<user_shell_command>",
    "<permissions instructions>",
    "<collaboration_mode>",
)
# the setup message Gemini CLI sends before the user's first prompt (0.1x: plain; 0.5x: tagged)
_GEMINI_SETUP = (
    "This is the Gemini CLI. We are setting up the context",
    "<session_context>",
    "I ran the following shell command:",  # the user's `!` shell mode, recorded in the history
)
_CLAUDE_OTHER = frozenset(
    {
        "system",
        "summary",
        "attachment",
        "file-history-snapshot",
        "progress",
        "queue-operation",
        "atis-latch",
        "api-request",
        "api-request-shape",
        "api-request-blob",
        "tools-used",
        "last-prompt",
        "cost-state",
        None,
    }
)


def _status(value: Any) -> str:
    s = value if isinstance(value, str) else "pending"
    return _DONE.get(s, s)


def _title(item: dict[str, Any], *keys: str) -> str:
    for k in keys:
        v = item.get(k)
        if isinstance(v, str) and v.strip():
            return v.strip()
    return "(untitled task)"


class Scan:
    """Incremental reader of one transcript format; ``state`` is JSON-serializable."""

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
        self.on_turn: Callable[[Scan], None] | None = None  # called before a new turn starts (replay)

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

    # ---------------------------------------------------------------- lines

    def feed(self, line: bytes) -> None:
        """Take one record (a JSONL line, or a pretty-printed object's lines). A record that
        cannot be decoded (not JSON, nested too deeply, not UTF-8) is skipped and counted."""
        if not self.full and not self._wanted(line):
            return
        try:
            obj = loads(line)
        except RecursionError:
            self._skip("nested too deeply")
            return
        except ValueError:  # UnicodeDecodeError included
            self._skip("not JSON")
            return
        if isinstance(obj, list) and self.fmt == "gemini":  # a checkpoint or a /chat share export
            obj = {"history": obj}
        if not isinstance(obj, dict):
            self._skip("not a JSON object")
            return
        try:
            getattr(self, f"_{self.fmt}")(obj)
        except (RecursionError, TypeError, ValueError, KeyError, AttributeError, IndexError):
            self._skip("a record of an unexpected shape")

    def _skip(self, why: str) -> None:
        self.skipped[why] = self.skipped.get(why, 0) + 1

    def _wanted(self, line: bytes) -> bool:
        if b'": ' in line or b'" :' in line or b"\n" in line.rstrip():
            return True  # spaced or pretty-printed JSON: the byte prefilter below assumes compact lines
        if self.fmt == "claude":
            if _USER.search(line):
                return (
                    b'"tool_result"' not in line
                    or _IS_ERROR.search(line) is not None
                    or any(k.encode() in line for k in self.pending)
                )
            if _ASSISTANT.search(line):  # text, todos, and tool names (a failed tool is named by its tool_use)
                return b'"text"' in line or b'"tool_use"' in line
            return False
        if self.fmt == "codex":
            return any(
                k in line
                for k in (
                    b"turn_context",
                    b"function_call",
                    b"exec_command_end",
                    b'"assistant"',
                    b"session_meta",
                    b'"user"',
                )
            )
        if self.fmt == "gemini":
            return _USER.search(line) is not None or _GEMINI.search(line) is not None
        if self.fmt == "antigravity":
            return any(k in line for k in _AGY_WANTED)
        if self.fmt == "copilot":
            return any(
                k in line
                for k in (
                    b'"user.message"',
                    b'"assistant.message"',
                    b'"tool.execution_complete"',
                    b'"hook.end"',
                    b'"session.start"',
                )
            )
        return True

    def _prompt(self, text: Any) -> None:
        """A human prompt's text: the user's mode switch, if it has one."""
        if isinstance(text, str) and "stoprule:" in text:
            m = _SWITCH.search(text)
            if m:
                self.mode_switch = None if m.group(1).lower() == "auto" else m.group(1).lower()

    def _version(self, v: Any) -> None:
        if isinstance(v, str) and v and (not self.versions or self.versions[-1] != v):
            self.versions = (self.versions + [v])[-3:]

    def _turn(self) -> None:
        if self.on_turn is not None and self.turns:
            self.on_turn(self)
        if self.turns is not None:
            self.turns += 1
        self.failed = []

    def _fail(self, tool: str, error: Any, call_id: Any = None) -> None:
        if isinstance(call_id, str) and call_id in self.todo_undo:  # the todo call was refused
            undo = self.todo_undo.pop(call_id)
            self.tasks, self.partial_tasks = undo["tasks"], undo["partial"]
        if isinstance(call_id, str):
            if call_id in self.failed_ids:
                return
            self.failed_ids = (self.failed_ids + [call_id])[-MAX_FAILED_IDS:]
        text = error if isinstance(error, str) else dumps(error, ensure_ascii=False)[:400]
        self.failed = (self.failed + [{"tool": tool, "error": text.strip()[:200]}])[-MAX_FAILED:]

    def _set_tasks(self, items: Any, *title_keys: str, call_id: Any = None) -> None:
        if not isinstance(items, list):
            return
        # kept until the call's result: a todo call the harness refused leaves the list as it was
        self.todo_undo = (
            {call_id: {"tasks": self.tasks, "partial": self.partial_tasks}} if isinstance(call_id, str) else {}
        )
        self.tasks = [
            {"id": None, "title": _title(t, *title_keys), "status": _status(t.get("status"))}
            for t in items
            if isinstance(t, dict)
        ]
        self.partial_tasks = False
        self.pending = {}

    # ---------------------------------------------------------------- Claude Code

    def _claude(self, obj: dict[str, Any]) -> None:
        kind = obj.get("type")
        msg = obj.get("message") if isinstance(obj.get("message"), dict) else {}
        content = msg.get("content") if isinstance(msg, dict) else None
        if kind == "user":
            self._version(obj.get("version"))
            origin = obj.get("origin")
            not_human = isinstance(origin, dict) and origin.get("kind") not in (None, "human")
            if obj.get("isMeta") or obj.get("isCompactSummary") or not_human:
                if isinstance(content, list):  # a tool result still answers its call
                    self._claude_results(obj, content)
                return
            if isinstance(content, str):
                if self._claude_prompt(content):
                    self._prompt(content)
                    self._turn()
                return
            if not isinstance(content, list):
                return
            self._claude_results(obj, content)
            texts = [b.get("text") for b in content if isinstance(b, dict) and b.get("type") == "text"]
            human = [t for t in texts if isinstance(t, str) and self._claude_prompt(t)]
            if human:
                for t in human:
                    self._prompt(t)
                self._turn()
        elif kind == "assistant" and isinstance(content, list):
            for block in content:
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "text" and isinstance(block.get("text"), str):
                    self.last_text = block["text"]
                elif block.get("type") == "tool_use":
                    self._claude_tool(block)
        elif kind not in _CLAUDE_OTHER:
            self._skip(f"unknown line type {kind!r}")

    @staticmethod
    def _claude_prompt(text: str) -> bool:
        """A user line's text is a human prompt: not an interrupt, a local slash command, the
        user's ``!`` bash mode, a background task's notification ..., but a custom slash command is."""
        t = text.lstrip()
        if t.startswith("<command-name>") or t.startswith("<command-message>"):
            m = _COMMAND.search(t)
            name = m.group(1) if m else ""
            return bool(name) and ("/" + name.lstrip("/")) not in _LOCAL_COMMANDS
        return not t.startswith(_NOT_PROMPT)

    def _claude_results(self, obj: dict[str, Any], content: list[Any]) -> None:
        for block in content:
            if not isinstance(block, dict) or block.get("type") != "tool_result":
                continue
            tid = block.get("tool_use_id")
            if block.get("is_error") is True:
                name = self.names.get(tid, "tool") if isinstance(tid, str) else "tool"
                self._fail(name, block.get("content"), tid)
            if isinstance(tid, str) and tid in self.pending:
                self._created(tid, obj.get("toolUseResult"), block.get("content"))

    def _claude_tool(self, block: dict[str, Any]) -> None:
        name, tid = block.get("name"), block.get("id")
        inp: dict[str, Any] = block["input"] if isinstance(block.get("input"), dict) else {}
        if isinstance(tid, str) and isinstance(name, str):
            self.names[tid] = name
        if name == "TodoWrite":
            self._set_tasks(inp.get("todos"), "content", "activeForm", call_id=tid)
        elif name == "TaskCreate":
            self.tasks.append(
                {"id": None, "title": _title(inp, "subject", "description", "activeForm"), "status": "pending"}
            )
            if isinstance(tid, str):
                self.pending[tid] = len(self.tasks) - 1
        elif name == "TaskUpdate":
            key = next((inp[k] for k in ("taskId", "task_id", "id") if k in inp), None)
            task = next((t for t in self.tasks if t["id"] is not None and t["id"] == str(key)), None)
            if task is None:
                self.partial_tasks = True
                return
            status = inp.get("status")
            if status == "deleted":
                self.tasks.remove(task)
            elif isinstance(status, str):
                task["status"] = _status(status)
            if isinstance(inp.get("subject"), str):
                task["title"] = inp["subject"]

    def _created(self, tid: str, result: Any, content: Any) -> None:
        index = self.pending.pop(tid)
        if index >= len(self.tasks):
            return
        found = None
        if isinstance(result, dict):
            task: dict[str, Any] = result["task"] if isinstance(result.get("task"), dict) else result
            found = next((task[k] for k in ("id", "taskId", "task_id") if k in task), None)
        if found is None:
            text = content if isinstance(content, str) else dumps(content)
            m = compiled(r"#(\w+)").search(text)
            found = m.group(1) if m else None
        if found is None:  # Claude Code numbers tasks 1, 2, ... in creation order
            found = str(sum(1 for t in self.tasks[: index + 1]))
        self.tasks[index]["id"] = str(found)

    # ---------------------------------------------------------------- Codex

    def _codex(self, obj: dict[str, Any]) -> None:
        kind, payload = obj.get("type"), obj.get("payload")
        if not isinstance(payload, dict):
            self._skip("no payload")
            return
        ptype = payload.get("type")
        if kind == "session_meta":
            self._version(payload.get("cli_version"))
            source = payload.get("source")
            if source == "exec":
                self.mode_signal = ["autonomous", "Codex rollout session_meta source=exec (codex exec)"]
            elif isinstance(source, str) and source in ("cli", "vscode"):
                self.mode_signal = ["interactive", f"Codex rollout session_meta source={source}"]
        elif kind == "turn_context":
            turn = payload.get("turn_id")
            counted, self.prompt_turn = self.prompt_turn, False
            if not isinstance(turn, str):  # Codex <= 0.6x: one per model request, not per prompt
                self.legacy_turns = True
            elif turn != self.last_turn:
                if not counted:  # (the prompt before the first turn_context began this turn)
                    self._turn()
                self.last_turn = turn
        elif kind == "response_item":
            if ptype in ("function_call", "custom_tool_call") and isinstance(payload.get("call_id"), str):
                name = payload.get("name")
                ns = payload.get("namespace")
                if isinstance(name, str):
                    self.names[payload["call_id"]] = f"{ns}.{name}" if isinstance(ns, str) and ns else name
            if ptype in ("function_call_output", "custom_tool_call_output"):  # custom: apply_patch (0.5x+)
                self._codex_output(payload)
            elif ptype == "function_call" and payload.get("name") == "update_plan":
                args = payload.get("arguments")
                try:
                    parsed = loads(args) if isinstance(args, str) else args
                except ValueError:
                    self._skip("update_plan arguments not JSON")
                    return
                if isinstance(parsed, dict):
                    self._set_tasks(parsed.get("plan"), "step", call_id=payload.get("call_id"))
            elif ptype == "message" and payload.get("role") == "user":
                parts = payload.get("content")
                texts = [p.get("text") for p in parts if isinstance(p, dict)] if isinstance(parts, list) else []
                text = "\n".join(t for t in texts if isinstance(t, str))
                if text.strip() and not text.lstrip().startswith(_CODEX_CONTEXT):
                    self._prompt(text)
                    if self.legacy_turns:
                        self._turn()
                    elif self.last_turn is None and not self.prompt_turn:
                        # before any turn_context (the VS Code extension, 0.40, writes the prompt
                        # first): a turn; its turn_context, with or without a turn_id, is not another
                        self._turn()
                        self.prompt_turn = True
            elif ptype == "message" and payload.get("role") == "assistant":
                parts = payload.get("content")
                texts = [p.get("text") for p in parts if isinstance(p, dict)] if isinstance(parts, list) else []
                text = "\n".join(t for t in texts if isinstance(t, str))
                if text:
                    self.last_text = text
        elif kind == "event_msg":
            if ptype == "exec_command_end":
                code = payload.get("exit_code")
                if isinstance(code, int) and code != 0:
                    cid = payload.get("call_id")
                    name = self.names.get(cid, "shell") if isinstance(cid, str) else "shell"
                    self._fail(name, payload.get("aggregated_output") or f"exit code {code}", cid)
        elif kind != "compacted":
            self._skip(f"unknown line type {kind!r}")

    def _codex_output(self, payload: dict[str, Any]) -> None:
        """A tool's output: a failed command says ``Process exited with code N`` (or, in older
        versions, carries JSON with ``metadata.exit_code``)."""
        out, cid = payload.get("output"), payload.get("call_id")
        code: int | None = None
        text = out if isinstance(out, str) else dumps(out, ensure_ascii=False) if out is not None else ""
        if isinstance(out, str) and out.startswith("{"):
            try:
                parsed = loads(out)
            except ValueError:
                parsed = None
            meta = parsed.get("metadata") if isinstance(parsed, dict) else None
            if isinstance(meta, dict) and isinstance(meta.get("exit_code"), int):
                code = meta["exit_code"]
                text = parsed.get("output") if isinstance(parsed.get("output"), str) else text
        if code is None:
            m = _EXIT.search(text)
            code = int(m.group(1)) if m else None
        if code is None and text.startswith(("unsupported call:", "apply_patch verification failed")):
            code = -1
        if code:
            name = self.names.get(cid, "shell") if isinstance(cid, str) else "shell"
            self._fail(name, _after_output(text), cid)

    # ---------------------------------------------------------------- Gemini

    def _gemini(self, obj: dict[str, Any]) -> None:
        if isinstance(obj.get("history"), list) and "type" not in obj:  # a checkpoint (/chat save, /chat share)
            self._gemini_history(obj["history"])
            return
        if isinstance(obj.get("messages"), list) and "type" not in obj:  # the single-document .json chat
            self.document = True
            for message in obj["messages"]:
                if isinstance(message, dict):
                    self._gemini(message)
            return
        if "$rewindTo" in obj or "$set" in obj:
            return
        kind = obj.get("type")
        if kind == "user":
            # tool responses are recorded as user records too (Gemini CLI >= 0.44): not a turn
            content = obj.get("content")
            parts = content if isinstance(content, list) else []
            if parts and all(isinstance(p, dict) and "text" not in p for p in parts):
                return
            self._prompt(
                content
                if isinstance(content, str)
                else "\n".join(p.get("text", "") for p in parts if isinstance(p, dict))
            )
            self._turn()
        elif kind == "gemini":
            content = obj.get("content")
            if isinstance(content, list):
                content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
            if isinstance(content, str) and content.strip():
                self.last_text = content
            calls = obj.get("toolCalls")
            for call in calls if isinstance(calls, list) else []:
                if not isinstance(call, dict):
                    continue
                name = str(call.get("name") or "tool")
                if name == "write_todos" and isinstance(call.get("args"), dict) and call.get("status") != "error":
                    self._set_tasks(call["args"].get("todos"), "description")
                if call.get("status") == "error":
                    self._fail(name, call.get("result"), call.get("id"))
                elif call.get("status") == "success":
                    m = _EXIT.search(_gemini_output(call.get("result")))
                    if m and int(m.group(1)) != 0:
                        self._fail(name, _gemini_output(call.get("result")), call.get("id"))
        elif kind in ("model",):  # some versions name the agent's records "model"
            self._gemini({**obj, "type": "gemini"})
        elif kind is None and not ({"sessionId", "projectHash", "startTime", "lastUpdated", "kind"} & obj.keys()):
            self._skip("a record without a type")
        elif kind not in ("info", "error", "warning", None):
            self._skip(f"unknown line type {kind!r}")

    def _gemini_history(self, history: list[Any]) -> None:
        """Gemini CLI's model history as ``/chat save`` checkpoints and ``/chat share`` JSON exports
        hold it: ``[{"role": "user"|"model", "parts": [{"text"}|{"functionCall"}|{"functionResponse"}]}]``.
        The CLI's own setup message is not a turn, nor is a tool response, a command the user
        ran in shell mode (``!``: recorded as "I ran the following shell command"), or the same
        prompt again right after a tool round the model left unanswered (the CLI sends it again)."""
        self.document = True
        prompt, tool_round = None, False
        for item in history:
            parts = item.get("parts") if isinstance(item, dict) else None
            if not isinstance(parts, list):
                self._skip("a history entry without parts")
                continue
            parts = [p for p in parts if isinstance(p, dict)]
            text = "".join(p["text"] for p in parts if isinstance(p.get("text"), str))
            if item.get("role") == "user":
                for p in parts:
                    resp = p.get("functionResponse")
                    out = resp.get("response") if isinstance(resp, dict) else None
                    if isinstance(resp, dict) and isinstance(out, dict) and "error" in out:
                        self._fail(str(resp.get("name") or "tool"), out["error"], resp.get("id"))
                if any(isinstance(p.get("functionResponse"), dict) for p in parts):
                    tool_round = True
                if not text.strip() or text.lstrip().startswith(_GEMINI_SETUP) or (text == prompt and tool_round):
                    continue
                self._prompt(text)
                self._turn()
                prompt, tool_round = text, False
            elif item.get("role") == "model":
                if text.strip():
                    self.last_text, tool_round = text, False
                for p in parts:
                    call = p.get("functionCall")
                    args = call.get("args") if isinstance(call, dict) else None
                    if isinstance(call, dict) and call.get("name") == "write_todos" and isinstance(args, dict):
                        self._set_tasks(args.get("todos"), "description")
            else:
                self._skip(f"unknown history role {item.get('role')!r}")

    # ---------------------------------------------------------------- Copilot CLI

    def _copilot(self, obj: dict[str, Any]) -> None:
        kind, data = obj.get("type"), obj.get("data")
        if not isinstance(data, dict):
            return
        if kind == "session.start":
            self._version(data.get("copilotVersion"))
        if kind == "user.message":
            if not self.after_block:  # a hook's block reason comes back as a user message
                self._prompt(data.get("content"))
                self._turn()
            self.after_block = False
        elif kind == "hook.end":
            out = data.get("output")
            self.after_block = isinstance(out, dict) and out.get("decision") == "block"
        elif kind == "assistant.message":
            text = data.get("content")
            if isinstance(text, str) and text.strip():
                self.last_text = text
            for req in data.get("toolRequests") or []:
                cid = req.get("toolCallId") if isinstance(req, dict) else None
                if isinstance(cid, str) and isinstance(req.get("name"), str):
                    self.names[cid] = req["name"]
        elif kind == "tool.execution_complete":
            shell = data.get("shellExecution")
            code = shell.get("exitCode") if isinstance(shell, dict) else None
            if data.get("success") is False or (isinstance(code, int) and code != 0):
                cid = data.get("toolCallId")
                name = self.names.get(cid, "tool") if isinstance(cid, str) else "tool"
                result = data.get("result")
                text = result.get("content") if isinstance(result, dict) else result
                self._fail(name, text if text is not None else data.get("error"), cid)

    # ---------------------------------------------------------------- Antigravity

    def _antigravity(self, obj: dict[str, Any]) -> None:
        """Antigravity's ``brain/<conversation>/.system_generated/logs/transcript.jsonl``: one step a
        line, ``{step_index, source, type, status, created_at, content, ...}``. A turn is a
        ``USER_INPUT`` the user sent (``source`` ``USER_EXPLICIT``; other sources are injected),
        its words inside ``<USER_REQUEST>``; the last message is the latest ``PLANNER_RESPONSE``
        with text; a step with an ``error`` (or status ``ERROR``), or whose command ended with a code N
        other than 0 (a ``RUN_COMMAND`` or ``GENERIC`` step, or a background task's ``SYSTEM_MESSAGE``:
        "failed with exit code: N" in the CLI, "exited with code N." in the IDE), failed."""
        kind = obj.get("type")
        if not isinstance(kind, str):
            self._skip("a step without a type")
            return
        text = obj["content"] if isinstance(obj.get("content"), str) else ""
        if kind == "USER_INPUT":
            if obj.get("source") == "USER_EXPLICIT":
                m = _AGY_REQUEST.search(text)
                self._prompt(m.group(1) if m else text)
                self._turn()
        elif kind == "PLANNER_RESPONSE":
            if text.strip():
                self.last_text = text
        else:
            step, error = f"step-{obj.get('step_index')}", obj.get("error")
            m = _AGY_EXIT.search(text) if kind in ("RUN_COMMAND", "GENERIC", "SYSTEM_MESSAGE") else None
            if (isinstance(error, str) and error.strip()) or obj.get("status") == "ERROR":
                self._fail(kind.lower(), error if isinstance(error, str) and error.strip() else text, step)
            elif m and int(m.group(1)) != 0:
                self._fail("run_command", text[m.start() :], step)

    # ---------------------------------------------------------------- Cursor

    def _cursor(self, obj: dict[str, Any]) -> None:
        """Cursor agent transcripts: ``{"role":"user"|"assistant","message":{"content":[{"type":"text",...}]}}``.
        The user's own prompts are wrapped in ``<user_query>``; once one was seen, a user
        message without it (a follow-up a stop hook generated) is not a turn. The todo list is
        the latest ``TodoWrite``/``todo_write`` call (``merge``: by id)."""
        role = obj.get("role")
        msg = obj.get("message")
        content = msg.get("content") if isinstance(msg, dict) else None
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        texts = [b.get("text") for b in blocks if isinstance(b, dict) and b.get("type") == "text"]
        text = "\n".join(t for t in texts if isinstance(t, str))
        if role == "user" and text.strip():
            if "<user_query>" in text:
                self.user_query = True
            elif self.user_query:
                return  # generated (a stop hook's follow-up), not the user's
            self._prompt(text.replace("<user_query>", "").replace("</user_query>", ""))
            self._turn()
        elif role == "assistant":
            if text.strip():
                self.last_text = text
            for b in blocks:
                if isinstance(b, dict) and b.get("type") in ("tool_use", "tool-call", "tool_call"):
                    self._cursor_tool(b)
        elif role is not None:
            self._skip(f"unknown role {role!r}")

    def _cursor_tool(self, block: dict[str, Any]) -> None:
        name = block.get("name") or block.get("toolName")
        args = block.get("input") if isinstance(block.get("input"), dict) else block.get("args")
        if name not in ("TodoWrite", "todo_write", "todoWrite") or not isinstance(args, dict):
            return
        todos = args.get("todos")
        if not isinstance(todos, list):
            return
        if args.get("merge") is True and self.tasks:
            by_id = {t["id"]: t for t in self.tasks if t.get("id")}
            for item in todos:
                if not isinstance(item, dict):
                    continue
                key = str(item.get("id")) if item.get("id") is not None else None
                if key in by_id:
                    if isinstance(item.get("status"), str):
                        by_id[key]["status"] = _status(item["status"])
                    if isinstance(item.get("content"), str):
                        by_id[key]["title"] = item["content"]
                else:
                    self.tasks.append(
                        {"id": key, "title": _title(item, "content"), "status": _status(item.get("status"))}
                    )
            return
        self._set_tasks(todos, "content")
        for task, item in zip(self.tasks, [t for t in todos if isinstance(t, dict)], strict=False):
            if item.get("id") is not None:
                task["id"] = str(item["id"])


def _after_output(text: str) -> str:
    """The command's own output in a Codex tool result (after its ``Output:`` header)."""
    head, sep, rest = text.partition("\nOutput:\n")
    return rest if sep and rest.strip() else text


def _gemini_output(result: Any) -> str:
    """The text of a Gemini tool call's result (``[{"functionResponse":{"response":{"output":...}}}]``)."""
    out: list[str] = []
    for part in result if isinstance(result, list) else [result]:
        resp = part.get("functionResponse", {}).get("response") if isinstance(part, dict) else None
        value = resp.get("output") if isinstance(resp, dict) else part
        if isinstance(value, str):
            out.append(value)
    return "\n".join(out)


def detect(path: str, harness: str | None = None) -> str | None:
    """The transcript's format: from the harness when it has one, else sniffed from its last line."""
    if harness in HARNESS_FORMAT:
        return HARNESS_FORMAT[harness]
    try:
        with open(path, "rb") as fh:
            fh.seek(max(0, os.fstat(fh.fileno()).st_size - 65536))
            lines = [ln for ln in fh.read().split(b"\n") if ln.strip()]
    except OSError:
        return None
    if lines and lines[-1].strip() in (b"}", b"]"):  # a pretty-printed document: Gemini CLI's .json chats, checkpoints
        try:
            with open(path, "rb") as fh:
                doc = loads(fh.read(MAX_RECORD_BYTES))
        except (OSError, ValueError):
            doc = None
        if isinstance(doc, dict) and isinstance(doc.get("messages") or doc.get("history"), list):
            return "gemini"
        if isinstance(doc, list) and doc and all(isinstance(d, dict) and "role" in d and "parts" in d for d in doc):
            return "gemini"
    for line in reversed(lines[-20:]):
        try:
            obj = loads(line)
        except ValueError:
            continue
        if not isinstance(obj, dict):
            continue
        if {"timestamp", "type", "payload"} <= obj.keys():
            return "codex"
        if {"step_index", "source", "type"} <= obj.keys():
            return "antigravity"
        if {"type", "data", "id"} <= obj.keys() and "." in str(obj.get("type")):
            return "copilot"
        if "role" in obj and "message" in obj and "type" not in obj:
            return "cursor"
        if "parentUuid" in obj or "sessionId" in obj and "message" in obj:
            return "claude"
        if obj.get("type") in ("user", "gemini", "info") and "content" in obj:
            return "gemini"
    return None


MAX_RECORD_BYTES = 8 << 20  # a pretty-printed record longer than this is skipped
_HEAD = 4096  # bytes fingerprinted at the start of the file, and before the read position


def records(data: bytes, base: int = 0) -> Iterator[tuple[bytes, int]]:
    """The records of complete lines in ``data``: ``(record, offset after it)`` (``base`` +
    the position in ``data``). A record is one line of JSONL, or the lines of a pretty-printed
    object (from a line opening ``{`` to a line ``}`` at column 0 that completes it) or array
    (a line ``[`` to a line ``]``: Gemini CLI's checkpoints and ``/chat share`` exports). A blank
    line is a blank record; an object still open at the end of ``data`` is not yielded (nor
    consumed: the returned offsets stop before it), but a document whose closing line merely
    lacks its newline is (Gemini CLI writes its ``.json`` chats so)."""
    pos, start, n = 0, -1, len(data)
    while pos < n:
        nl = data.find(b"\n", pos)
        if nl < 0:  # a last line without its newline: incomplete, unless it closes a whole document
            if start >= 0 and data[pos:].rstrip() in (b"}", b"]") and _complete(data[start:]):
                yield data[start:].rstrip(), base + n  # Gemini CLI writes its .json chats without one
            return
        line, end = data[pos:nl], nl + 1
        if start >= 0:  # inside a pretty-printed object
            if line.rstrip() in (b"}", b"},", b"]"):
                rec = data[start:nl].rstrip().rstrip(b",") if line.rstrip() == b"}," else data[start:nl]
                if _complete(rec):
                    start = -1
                    yield rec, base + end
            elif end - start > MAX_RECORD_BYTES:
                start = -1
                yield data[pos:nl], base + end  # too long: the last line stands for it (skipped)
            pos = end
            continue
        stripped = line.strip()
        if (stripped.startswith(b"{") and not stripped.endswith(b"}") or line == b"[") and not _complete(stripped):
            start = pos  # an object opened on this line and continued on the next ones
        else:
            yield line, base + end  # a blank line too (empty record: the position moves past it)
        pos = end


def _complete(record: bytes) -> bool:
    try:
        loads(record)
    except (ValueError, RecursionError):
        return False
    return True


def _fingerprint(fh: BinaryIO, offset: int) -> list[int]:
    """crc32 of the file's first bytes and of the bytes just before ``offset``: a file
    replaced in place (or a new file on a reused inode) differs in one of them."""
    fh.seek(0)
    head = fh.read(min(_HEAD, offset))
    fh.seek(max(0, offset - 256))
    tail = fh.read(min(256, offset))
    return [crc32(head), len(head), crc32(tail), len(tail)]


def _resumable(saved: Any, path: str, fmt: str, st: os.stat_result) -> bool:
    return (
        isinstance(saved, dict)
        and saved.get("path") == path
        and saved.get("fmt") == fmt
        and saved.get("inode") == st.st_ino
        and isinstance(saved.get("offset"), int)
        and 0 <= saved["offset"] <= st.st_size
        and isinstance(saved.get("scan"), dict)
        and isinstance(saved.get("mark"), list)
    )


def scan_file(
    path: str,
    fmt: str,
    saved: dict[str, Any] | None,
    *,
    tail: int = 262144,
    max_scan: int = 8388608,
    deadline: float | None = None,
) -> tuple[dict[str, Any], list[str]]:
    """Read what is new in ``path`` since ``saved`` (a previous return value for the same
    file), or all of it (only its tail when longer than ``max_scan``). Returns the new saved
    state (``scan``, the read position and a fingerprint of the bytes read) and notes.
    A file replaced since (another inode, shorter, or other bytes before the position) is
    read again from the start, with a note. OSError if the file cannot be read."""
    notes: list[str] = []
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)
    with os.fdopen(os.open(path, flags), "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise OSError(f"{path} is not a regular file")
        size = st.st_size
        same = _resumable(saved, path, fmt, st)
        if same and saved is not None and _fingerprint(fh, saved["offset"]) != saved["mark"]:
            same = False
            if not (saved.get("scan") or {}).get("document"):
                notes.append("the transcript was replaced or rewritten since the last stop: read again from the start")
        elif saved is not None and not same and saved.get("path") == path:
            notes.append("the transcript changed (another file, or shorter) since the last stop: read again")
        if same and saved is not None and size - saved["offset"] <= max_scan:
            start, scan = saved["offset"], _scan(fmt, saved.get("scan"))
        elif size <= max_scan:
            start, scan = 0, Scan(fmt)
        else:
            start = size - tail
            scan = Scan(fmt, {"turns": None, "partial_tasks": True})
            notes.append(f"transcript is {size} bytes: read its last {tail} only, so the turn count is unknown")
        fh.seek(start)
        data = fh.read(size - start)
        if start and not same:
            cut = data.find(b"\n")
            data = data[cut + 1 :] if cut >= 0 else b""
            start = size - len(data)
        offset, stopped = start, False
        for n, (record, end) in enumerate(records(data, start)):
            if deadline is not None and n % 256 == 0 and time.monotonic() > deadline:
                notes.append("transcript reading stopped: time budget spent")
                stopped = True
                break
            offset = end  # advances past every record, decoded or skipped
            if record.strip():
                scan.feed(record)
        if not stopped and offset < size and data[offset - start :].strip():
            notes.append("the transcript's last line is incomplete (still being written?): ignored")
        mark = _fingerprint(fh, offset)
    for why, count in scan.skipped.items():
        notes.append(f"{count} transcript line(s) skipped: {why}")
    state = {"path": path, "fmt": fmt, "inode": st.st_ino, "offset": offset, "mark": mark, "scan": scan.state()}
    return state, notes


def _scan(fmt: str, state: Any) -> Scan:
    """A scan resumed from a saved state; a damaged state starts afresh."""
    try:
        scan = Scan(fmt, state if isinstance(state, dict) else None)
        dumps(scan.state())
        if not (scan.turns is None or isinstance(scan.turns, int)) or not isinstance(scan.tasks, list):
            raise TypeError
        return scan
    except (TypeError, ValueError, AttributeError):
        return Scan(fmt)


def observations(scan: dict[str, Any]) -> dict[str, Any]:
    """Neutral observations (``turns``, ``current_task`` ...) from a scan's state."""
    out: dict[str, Any] = {}
    if scan.get("turns") is not None:
        out["turns"] = scan["turns"]
    tasks = [t for t in scan.get("tasks") or [] if t.get("status") not in ("deleted",)]
    if tasks:
        first_open = next((i for i, t in enumerate(tasks) if t["status"] in _OPEN), len(tasks))
        cur_i = next((i for i, t in enumerate(tasks) if t["status"] == "in_progress"), None)
        if cur_i is None:
            done = [i for i, t in enumerate(tasks[:first_open]) if t["status"] == "complete"]
            cur_i = done[-1] if done else None
        nxt = next((t for t in tasks[(cur_i + 1 if cur_i is not None else 0) :] if t["status"] == "pending"), None)
        if cur_i is not None:
            cur = tasks[cur_i]
            out["current_task"] = cur["id"] or cur["title"]
            if cur["status"] in ("pending", "in_progress", "complete", "failed"):
                out["task_state"] = cur["status"]
        out["next_task"] = (nxt["id"] or nxt["title"]) if nxt else None
        out["next_task_known"] = nxt is not None
        out["available_tasks"] = [t["title"] for t in tasks if t["status"] in _OPEN]
    if scan.get("failed"):
        out["failed_tools"] = scan["failed"]
    return out
