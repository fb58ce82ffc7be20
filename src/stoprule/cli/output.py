"""What commands write: the verdict as text for people, a refused fact in its output slot, and
NDJSON lines no reader splits.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

from stoprule._util.jsonout import dumps

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import IO

    from stoprule.diagnostics import EvaluationError
    from stoprule.engine.evaluator import Verdict
    from stoprule.ledger.errors import LedgerError

__all__ = ["fact_error", "input_name", "json_line", "line_safe", "render_verdict"]


# what splits a line besides "\n" for str.splitlines and for JavaScript/JSON-lines readers that JSON leaves raw
# when it does not escape non-ASCII (every other one is a control character, which JSON always escapes), and lone
# surrogates, which UTF-8 cannot encode at all (the table is made on first use: the stop hook never needs it)
_LINE_UNSAFE: dict[int, str] = {}


def line_safe(text: str) -> str:
    """JSON text with U+0085, U+2028, U+2029 and lone surrogates written as ``\\uXXXX`` escapes.

    Each may only occur inside a JSON string, where the escape means the same character: the
    result parses to the same value, is valid UTF-8, and is one line for every line splitter.
    """
    if text.isascii():
        return text
    if not _LINE_UNSAFE:
        _LINE_UNSAFE.update({c: f"\\u{c:04x}" for c in (0x85, 0x2028, 0x2029, *range(0xD800, 0xE000))})
    return text.translate(_LINE_UNSAFE)


def json_line(value: object) -> str:
    """One NDJSON record (no newline): UTF-8 kept readable, nothing that a reader could split or choke on."""
    return line_safe(dumps(value, ensure_ascii=False))


def input_name(file: str) -> str:
    """How messages name an input file (``-`` is ``<stdin>``)."""
    return file if file != "-" else "<stdin>"


def render_verdict(v: Verdict, paint: Callable[[str, str], str] | None = None) -> str:
    """A verdict as text for people (``--format pretty``); ``paint`` colours its mark (see cli/style.py)."""
    mark = "OK" if v.ok else "NOT OK"
    if paint is not None:
        mark = paint(mark, "bold green" if v.ok else "bold red")
    lines = [f"{mark}: {v.verdict} / {v.reason}  (rule {v.rule}; stop: {v.stop})", f"  {v.message}"]
    if v.requires_user_review:
        lines.append(f"  review reason: {v.review_reason}")
    if v.high_risk_stop:
        lines.append(f"  high-risk stop: {v.high_risk_stop}")
    lines.append("  matched: " + ", ".join(m.rule for m in v.matched))
    lines.append(f"  policy: {v.policy}")
    return "\n".join(lines)


def fact_error(exc: EvaluationError | LedgerError, where: str, fmt: str, stdout: IO[str], stderr: IO[str]) -> None:
    """A refused fact (or retry token): the reason on stderr, once; with ``--format json`` also an
    error object in the fact's output slot (one output line per input line)."""
    stderr.write(f"stoprule: {where}{exc}\n")
    if fmt == "json":
        stdout.write(dumps({"error": exc.to_dict()}) + "\n")
