"""Fact input: bytes in, facts out (one JSON document or NDJSON), each fact checked on its own.

Used by every command that reads facts (``eval``, ``explain``, ``audit --corpus``,
``eval --run``) and by the agent-hook adapters. On the CLI's cold-start path: it
imports only ``json`` and modules ``stoprule.engine.evaluator`` already loads.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

import json

from stoprule import codes
from stoprule.diagnostics import FactError

__all__ = ["MAX_FACT_BYTES", "check_finite", "complete_line", "ndjson_items", "parse_facts", "read_input"]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import IO, Any


MAX_FACT_BYTES = 1 << 20  # 1 MiB per fact
MAX_DEPTH = 32  # nesting of a fact


def check_depth(value: Any, limit: int = MAX_DEPTH) -> bool:
    """True if ``value`` nests no deeper than ``limit`` (iterative: no recursion)."""
    stack = [(value, 0)]
    while stack:
        v, d = stack.pop()
        if d > limit:
            return False
        if isinstance(v, dict):
            stack.extend((x, d + 1) for x in v.values())
        elif isinstance(v, list):
            stack.extend((x, d + 1) for x in v)
    return True


class _Refused(ValueError):
    """A JSON text the decoder parses but a fact must not hold."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        dup = next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
        raise _Refused(codes.FACT_DUPLICATE_KEY, f"key {dup!r} appears twice in one object")
    return out


def _constant(name: str) -> Any:
    raise _Refused(codes.FACT_NOT_JSON, f"{name} is not a JSON number")


class _Infinite(ValueError):
    """A number literal past a double's range (``1e999``): it would read as an infinity."""


def _float(text: str) -> float:
    value = float(text)
    if value - value != 0.0:  # an infinity: inf - inf is NaN
        raise _Infinite(text)
    return value


_loads = json.JSONDecoder(object_pairs_hook=_object, parse_constant=_constant, parse_float=_float).decode


def check_finite(fact: Any, line: int = 1) -> None:
    """FactError naming the first field of ``fact`` (decoded elsewhere) that holds a number JSON
    cannot write (an infinity or NaN: what a literal such as ``1e999`` reads as)."""
    todo: list[tuple[str, Any]] = [("", fact)]
    while todo:
        path, value = todo.pop()
        if type(value) is dict:
            todo.extend((f"{path}.{k}" if path else k, v) for k, v in reversed(value.items()))
        elif type(value) is list:
            todo.extend((f"{path}[{i}]", v) for i, v in reversed(list(enumerate(value))))
        elif type(value) is float and value - value != 0.0:
            raise FactError(
                codes.FACT_NOT_JSON,
                "the number is beyond what JSON can write (a literal such as 1e999 reads as an "
                "infinity): use a finite number",
                field=path,
                line=line,
            )


def _decode(raw: str, line: int) -> Any:
    if len(raw) > MAX_FACT_BYTES // 4 and len(raw.encode("utf-8", "surrogatepass")) > MAX_FACT_BYTES:
        raise FactError(codes.FACT_TOO_LARGE, f"fact exceeds {MAX_FACT_BYTES} bytes", line=line)
    try:
        value = _loads(raw)
    except RecursionError:
        raise FactError(codes.FACT_TOO_DEEP, f"nested deeper than {MAX_DEPTH}", line=line) from None
    except json.JSONDecodeError as exc:
        where = line + exc.lineno - 1
        raise FactError(codes.FACT_NOT_JSON, f"not valid JSON: {exc.msg} at column {exc.colno}", line=where) from None
    except _Refused as exc:
        raise FactError(exc.code, str(exc), line=line) from None
    except _Infinite:  # decoded again as Python reads it, to name the field
        check_finite(json.loads(raw), line)
        raise AssertionError("unreachable: the literal reads as an infinity") from None
    except ValueError as exc:  # e.g. an integer literal longer than Python converts (4300 digits)
        raise FactError(codes.FACT_NOT_JSON, f"not a usable JSON value: {exc}", line=line) from None
    if not isinstance(value, dict):
        raise FactError(codes.FACT_NOT_OBJECT, "a fact must be a JSON object", line=line)
    # a value nested deeper than MAX_DEPTH has more than MAX_DEPTH brackets around it: with no
    # more than that in the whole text (counting any inside strings too) the walk is not needed
    if raw.count("{") + raw.count("[") > MAX_DEPTH and not check_depth(value):
        raise FactError(codes.FACT_TOO_DEEP, f"nested deeper than {MAX_DEPTH}", line=line)
    return value


def parse_facts(data: bytes) -> list[tuple[int, Any]]:
    """Split input into facts: one JSON document (possibly pretty-printed), else NDJSON.

    NDJSON is assumed when the input is not one JSON document and its first non-blank
    line is a complete JSON value on its own; blank lines are skipped. Only ``\n``
    separates records (a U+2028 or a bare CR inside a line is part of it), and each
    line is decoded on its own: a line that is not UTF-8 is an error for that line
    only. Each entry is ``(line, decoded object or the FactError for that line)``.
    """
    lines: list[tuple[int, str | FactError]] = []
    for i, raw in enumerate(data.split(b"\n")):
        if not raw.strip():
            continue
        try:
            lines.append((i + 1, raw.decode("utf-8")))
        except UnicodeDecodeError as exc:
            lines.append((i + 1, FactError(codes.FACT_ENCODING, f"not UTF-8: {exc.reason}", line=i + 1)))
    if not lines:
        return [(1, FactError(codes.FACT_EMPTY, "no fact given (empty input)", line=1))]
    first_line, first = lines[0]
    if len(lines) > 1 and isinstance(first, str) and not _complete_value(first):
        # one multi-line document (line numbers from the top)
        bad = next((text for _, text in lines if isinstance(text, FactError)), None)
        return [(first_line, bad if bad is not None else _checked(data.decode("utf-8"), 1))]
    return [(n, text if isinstance(text, FactError) else _checked(text, n)) for n, text in lines]


def ndjson_items(data: bytes, first_line: int = 1) -> list[tuple[int, Any]]:
    """``data`` as NDJSON lines numbered from ``first_line``: what :func:`parse_facts` returns for
    NDJSON input (a part of it cut at line boundaries gives that part of the result)."""
    out: list[tuple[int, Any]] = []
    for i, raw in enumerate(data.split(b"\n")):
        if not raw.strip():
            continue
        n = first_line + i
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            out.append((n, FactError(codes.FACT_ENCODING, f"not UTF-8: {exc.reason}", line=n)))
            continue
        out.append((n, _checked(text, n)))
    return out


def complete_line(raw: bytes) -> bool:
    """Whether the first non-blank line ``raw`` makes :func:`parse_facts` read NDJSON."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return True  # an error line of its own
    return _complete_value(text)


def _complete_value(line: str) -> bool:
    """Whether ``line`` holds a JSON value by itself (or fails for a reason other than ending early)."""
    try:
        _loads(line)
    except json.JSONDecodeError as exc:
        return exc.pos < len(line.rstrip())
    except (RecursionError, ValueError):
        return True
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
