"""Antigravity CLI's ``hooks.json`` and a plugin's ``plugin.json`` checked as Antigravity loads
them, for ``stoprule doctor``.

Antigravity (``agy``) drops the **whole** file, silently and with exit 0, on one load error, so
every hook in it (not only stoprule's) stops running; a key it does not know is discarded and the
hook it configures never fires. The rules are its published ones, as measured on agy 1.1.25
(``stbenjam/skillsaw``, ``docs/rules/antigravity-hooks-valid.md``):

- errors (nothing in the file loads): not strict JSON (a comment, a trailing comma, ``NaN``);
  a root that is not an object of named hooks; an ``enabled`` key at the root; a named hook that
  is not an object, or its ``enabled`` not a boolean; an event whose value is not a list; a group
  or handler that is not an object; a ``matcher`` that is not a string; a group's ``hooks`` not a
  list; a handler ``type`` other than ``command`` or ``prompt`` (case-sensitive); a command
  handler with ``prompt`` or ``model``, a prompt handler with ``command``; a ``timeout`` that is
  not a whole number within 32 bits;
- warnings (the file loads, something in it never runs): an event name it does not dispatch
  (names match case-insensitively); an unknown key on a group or handler; a command handler
  without a command. While an error stands the warnings are held back (nothing has loaded).

``PreToolUse`` and ``PostToolUse`` hold ``{matcher, hooks: [handler]}`` groups; the other events
a flat list of handlers. Each finding names the file, its line and the field (a JSON path).

A plugin's ``plugin.json`` (``stbenjam/skillsaw``, ``docs/rules/antigravity-plugin-json-valid.md``,
agy 1.1.25; the schema in ``danicat/skills`` ``agy-extensions``): a manifest that does not load
leaves the folder no plugin at all, its ``hooks.json`` unread. Errors: missing, a byte-order mark,
not strict JSON, a key written twice (protobuf JSON refuses it), a root that is not an object,
``name``/``description``/``logo`` not a string or ``disabled`` not a boolean (``null`` reads as
absent). Warnings: no ``name`` or one outside ``[A-Za-z0-9_-]`` (``agy plugin install`` refuses
it; discovery falls back to the folder's name), a key outside the published schema (agy 1.1.25
discarded them; the schema says the CLI refuses them).
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass
from typing import Any

__all__ = ["EVENTS", "Finding", "check_file", "check_manifest", "check_manifest_text", "check_text"]

GROUPED = ("PreToolUse", "PostToolUse")
EVENTS = (*GROUPED, "PreInvocation", "PostInvocation", "Stop", "SessionStart")
HANDLER_KEYS = ("type", "command", "prompt", "model", "timeout")
GROUP_KEYS = ("matcher", "hooks")
INT32 = (-(2**31), 2**31 - 1)
MANIFEST_TYPES = {"name": str, "description": str, "logo": str, "disabled": bool}
MANIFEST_KEYS = (*MANIFEST_TYPES, "$schema", "skills")  # skills: listed in the manifest since agy 1.3.2

Path = tuple[Any, ...]


@dataclass(frozen=True)
class Finding:
    path: str  # the file
    line: int
    field: str  # a JSON path: ``stoprule.Stop[0].timeout``
    error: bool  # False: a warning
    message: str

    def render(self) -> str:
        return f"{self.path}:{self.line}: {self.field or '(root)'}: {self.message}"


class _Parser:
    """Strict JSON with the line of every value (``lines``, by JSON path): as ``json`` reads it,
    minus what Go's ``encoding/json`` refuses (``NaN``, ``Infinity``)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.decoder = json.JSONDecoder(parse_constant=self._constant)
        self.lines: dict[Path, int] = {}
        self.repeated: list[Path] = []  # keys written twice in one object

    @staticmethod
    def _constant(name: str) -> Any:
        raise ValueError(f"{name} is not JSON")

    def line(self, at: int) -> int:
        return self.text.count("\n", 0, at) + 1

    def _ws(self, at: int) -> int:
        while at < len(self.text) and self.text[at] in " \t\r\n":
            at += 1
        return at

    def _fail(self, at: int, what: str) -> json.JSONDecodeError:
        return json.JSONDecodeError(what, self.text, at)

    def value(self, at: int, path: Path) -> tuple[Any, int]:
        at = self._ws(at)
        self.lines[path] = self.line(at)
        ch = self.text[at : at + 1]
        if ch == "{":
            out: dict[str, Any] = {}
            at = self._ws(at + 1)
            if self.text[at : at + 1] == "}":
                return out, at + 1
            while True:
                at = self._ws(at)
                if self.text[at : at + 1] != '"':
                    raise self._fail(at, "expected a key in double quotes")
                key, at = self.decoder.raw_decode(self.text, at)
                if key in out:
                    self.repeated.append((*path, key))
                at = self._ws(at)
                if self.text[at : at + 1] != ":":
                    raise self._fail(at, "expected ':'")
                out[key], at = self.value(at + 1, (*path, key))
                at = self._ws(at)
                if self.text[at : at + 1] == "}":
                    return out, at + 1
                if self.text[at : at + 1] != ",":
                    raise self._fail(at, "expected ',' or '}'")
                at += 1
        if ch == "[":
            items: list[Any] = []
            at = self._ws(at + 1)
            if self.text[at : at + 1] == "]":
                return items, at + 1
            while True:
                item, at = self.value(at, (*path, len(items)))
                items.append(item)
                at = self._ws(at)
                if self.text[at : at + 1] == "]":
                    return items, at + 1
                if self.text[at : at + 1] != ",":
                    raise self._fail(at, "expected ',' or ']'")
                at += 1
        try:
            value, end = self.decoder.raw_decode(self.text, at)
        except json.JSONDecodeError:
            raise
        except ValueError as exc:  # NaN, Infinity
            raise self._fail(at, str(exc)) from None
        if isinstance(value, float) and not math.isfinite(value):
            raise self._fail(at, "a number out of range")
        return value, end

    def document(self) -> Any:
        value, at = self.value(0, ())
        if self._ws(at) != len(self.text):
            raise self._fail(self._ws(at), "extra data after the document")
        return value


def _field(path: Path) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _check_handler(h: Any, where: Path, add: Any) -> None:
    if not isinstance(h, dict):
        add(where, True, "a handler must be an object")
        return
    kind = h.get("type", "command")
    if kind not in ("command", "prompt"):
        add((*where, "type"), True, f"type {kind!r} is not 'command' or 'prompt' (case-sensitive)")
    elif kind == "command":
        for key in ("prompt", "model"):
            if key in h:
                add((*where, key), True, f"a command hook cannot carry '{key}'")
        command = h.get("command")
        if not isinstance(command, str) or not command.strip():
            add((*where, "command"), False, "a command hook without a command runs nothing")
    elif "command" in h:
        add((*where, "command"), True, "a prompt hook cannot carry 'command'")
    if "timeout" in h:
        t = h["timeout"]
        if not isinstance(t, int) or isinstance(t, bool) or not INT32[0] <= t <= INT32[1]:
            add((*where, "timeout"), True, f"timeout {json.dumps(t)} is not a whole number of seconds (32-bit)")
    for key in h:
        if key not in HANDLER_KEYS:
            add((*where, key), False, f"unknown key {key!r}: Antigravity discards it")


def _check(doc: Any, add: Any) -> None:
    if not isinstance(doc, dict):
        add((), True, "the root must be an object of named hooks")
        return
    known = {e.lower(): e for e in EVENTS}
    for name, hook in doc.items():
        if name == "enabled":
            add((name,), True, "'enabled' at the root is read as a hook's name: put it inside a named hook")
            continue
        if not isinstance(hook, dict):
            add((name,), True, "a named hook must be an object of events")
            continue
        for event, entries in hook.items():
            where = (name, event)
            if event == "enabled":
                if not isinstance(entries, bool):
                    add(where, True, "'enabled' must be true or false")
                continue
            canonical = known.get(event.lower())
            if canonical is None:
                add(where, False, f"Antigravity does not dispatch {event!r}: these hooks never run")
            if not isinstance(entries, list):
                add(where, True, "an event's value must be a list")
                continue
            for i, entry in enumerate(entries):
                at = (*where, i)
                if canonical not in GROUPED:
                    _check_handler(entry, at, add)
                    continue
                if not isinstance(entry, dict):
                    add(at, True, "a group must be an object")
                    continue
                if "matcher" in entry and not isinstance(entry["matcher"], str):
                    add((*at, "matcher"), True, "'matcher' must be a string")
                for key in entry:
                    if key not in GROUP_KEYS:
                        add((*at, key), False, f"unknown key {key!r}: Antigravity discards it")
                inner = entry.get("hooks", [])
                if not isinstance(inner, list):
                    add((*at, "hooks"), True, "a group's 'hooks' must be a list")
                    continue
                for j, h in enumerate(inner):
                    _check_handler(h, (*at, "hooks", j), add)


def _findings(text: str, path: str, check: Any) -> list[Finding]:
    """What ``check(doc, parser, add)`` finds in a JSON document's text (not strict JSON: one
    error); with an error among the findings, only the errors (nothing has loaded)."""
    parser = _Parser(text)
    try:
        doc = parser.document()
    except json.JSONDecodeError as exc:
        return [Finding(path, exc.lineno, "", True, f"not strict JSON ({exc.msg}, column {exc.colno})")]
    found: list[Finding] = []

    def add(where: Path, error: bool, message: str) -> None:
        line = parser.lines.get(where) or parser.lines.get(where[:-1]) or 1
        found.append(Finding(path, line, _field(where), error, message))

    check(doc, parser, add)
    errors = [f for f in found if f.error]
    return errors or found


def check_text(text: str, path: str) -> list[Finding]:
    """Every finding in one hooks file's text; with an error among them, only the errors."""
    return _findings(text, path, lambda doc, _parser, add: _check(doc, add))


def _read(path: str) -> str | Finding:
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except (OSError, UnicodeDecodeError) as exc:
        return Finding(path, 1, "", True, f"unreadable: {exc}")


def check_file(path: str) -> list[Finding]:
    """:func:`check_text` of the file (an unreadable file is one error)."""
    text = _read(path)
    return [text] if isinstance(text, Finding) else check_text(text, path)


def _check_manifest(doc: Any, parser: _Parser, add: Any) -> None:
    for where in parser.repeated:
        add(where, True, "a key written twice: Antigravity refuses the manifest")
    if not isinstance(doc, dict):
        add((), True, "the root must be an object")
        return
    for key, value in doc.items():
        kind = MANIFEST_TYPES.get(key)
        if kind is not None and value is not None and not isinstance(value, kind):
            add((key,), True, f"'{key}' must be {'true or false' if kind is bool else 'a string'}")
        elif key not in MANIFEST_KEYS:
            add((key,), False, f"unknown key {key!r}: not in Antigravity's plugin schema")
    name = doc.get("name")
    if not name:
        add(("name",), False, "no name: `agy plugin install` refuses it (the folder's name stands in)")
    elif isinstance(name, str) and (name.startswith(".") or not re.fullmatch(r"[A-Za-z0-9_-]+", name)):
        add(("name",), False, f"name {name!r} is not letters, digits, '-' and '_': `agy plugin install` refuses it")


def check_manifest_text(text: str, path: str) -> list[Finding]:
    """Every finding in a plugin's ``plugin.json``; with an error among them, only the errors."""
    if text.startswith("\ufeff"):
        return [Finding(path, 1, "", True, "a byte-order mark: Antigravity does not strip it")]
    return _findings(text, path, _check_manifest)


def check_manifest(path: str) -> list[Finding]:
    """:func:`check_manifest_text` of the file (missing or unreadable: one error, no plugin)."""
    if not os.path.isfile(path):
        return [Finding(path, 1, "", True, "no plugin.json: Antigravity does not load the folder as a plugin")]
    text = _read(path)
    return [text] if isinstance(text, Finding) else check_manifest_text(text, path)
