"""Fact input: bytes in, facts out (one JSON document or NDJSON), each fact checked on its own.

Used by every command that reads facts (``eval``, ``explain``, ``audit --corpus``,
``eval --run``) and by the agent-hook adapters. On the CLI's cold-start path: it
imports only ``json`` and modules ``stoprule.evaluator`` already loads.
"""

from __future__ import annotations

import json

from .diagnostics import FactError
from .factschema import MAX_DEPTH, check_depth

__all__ = ["MAX_FACT_BYTES", "parse_facts", "read_input"]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import IO, Any


MAX_FACT_BYTES = 1 << 20  # 1 MiB per fact


def _decode(raw: str, line: int) -> Any:
    if len(raw.encode("utf-8")) > MAX_FACT_BYTES:
        raise FactError("fact.too_large", f"fact exceeds {MAX_FACT_BYTES} bytes", line=line)
    try:
        value = json.loads(raw)
    except RecursionError:
        raise FactError("fact.too_deep", f"nested deeper than {MAX_DEPTH}", line=line) from None
    except json.JSONDecodeError as exc:
        where = line + exc.lineno - 1
        raise FactError("fact.not_json", f"not valid JSON: {exc.msg} at column {exc.colno}", line=where) from None
    if not isinstance(value, dict):
        raise FactError("fact.not_object", "a fact must be a JSON object", line=line)
    if not check_depth(value):
        raise FactError("fact.too_deep", f"nested deeper than {MAX_DEPTH}", line=line)
    return value


def parse_facts(data: bytes) -> list[tuple[int, Any]]:
    """Split input into facts: one JSON document (possibly pretty-printed), else NDJSON.

    NDJSON is assumed when the input is not one JSON document and its first non-blank
    line is a complete JSON value on its own; blank lines are skipped. Each entry is
    ``(line, decoded object or the FactError for that line)``.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return [(1, FactError("fact.encoding", f"input is not UTF-8: {exc.reason}", line=1))]
    lines = [(i + 1, ln) for i, ln in enumerate(text.splitlines()) if ln.strip()]
    if not lines:
        return [(1, FactError("fact.empty", "no fact given (empty input)", line=1))]
    first_line, first = lines[0]
    if len(lines) > 1 and not _complete_value(first):
        return [(first_line, _checked(text, 1))]  # one multi-line document (line numbers from the top)
    return [(n, _checked(raw, n)) for n, raw in lines]


def _complete_value(line: str) -> bool:
    """Whether ``line`` holds a JSON value by itself (or fails for a reason other than ending early)."""
    try:
        json.loads(line)
    except RecursionError:
        return True
    except json.JSONDecodeError as exc:
        return exc.pos < len(line.rstrip())
    return True


def _checked(raw: str, line: int) -> Any:
    try:
        return _decode(raw, line)
    except FactError as exc:
        return exc


def read_input(file: str, stdin: IO[bytes], stderr: IO[str]) -> bytes | None:
    """The bytes of ``file`` (``-``: stdin), or None after telling stderr why not."""
    try:
        if file == "-":
            return stdin.read()
        with open(file, "rb") as fh:
            return fh.read()
    except OSError as exc:
        stderr.write(f"stoprule: cannot read {file}: {exc.strerror}\n")
        return None
