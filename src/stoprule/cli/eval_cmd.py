"""``stoprule eval``: facts in (one JSON object or NDJSON), verdict envelopes out."""

from __future__ import annotations

import argparse
import json

from ..diagnostics import FactError, PolicyError
from ..evaluator import Verdict
from ..factschema import MAX_DEPTH, check_depth

__all__ = ["MAX_FACT_BYTES", "add_arguments", "eval_command", "parse_facts", "read_input", "run"]

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


def _pretty(v: Verdict) -> str:
    mark = "OK" if v.ok else "NOT OK"
    lines = [f"{mark}: {v.verdict} / {v.reason}  (rule {v.rule}; stop: {v.stop})", f"  {v.message}"]
    if v.requires_user_review:
        lines.append(f"  review reason: {v.review_reason}")
    if v.high_risk_stop:
        lines.append(f"  high-risk stop: {v.high_risk_stop}")
    lines.append("  matched: " + ", ".join(m.rule for m in v.matched))
    lines.append(f"  policy: {v.policy}")
    return "\n".join(lines)


def eval_command(policy: str | None, file: str, fmt: str, stdin: IO[bytes], stdout: IO[str], stderr: IO[str]) -> int:
    data = read_input(file, stdin, stderr)
    if data is None:
        return 2
    from ..packs import load_policy

    try:
        evaluator = load_policy(policy)
    except PolicyError as exc:
        stderr.write(f"stoprule: policy pack has errors:\n{exc.render()}\n")
        return 2
    code = 0
    for line, item in parse_facts(data):
        result: Verdict | FactError
        if isinstance(item, FactError):
            result = item
        else:
            try:
                result = evaluator.evaluate(item)
            except FactError as exc:
                exc.line = line
                result = exc
        if isinstance(result, FactError):
            code = 2
            stderr.write(f"stoprule: {file if file != '-' else '<stdin>'}: {result}\n")
            out = {"error": result.to_dict()}
            stdout.write(json.dumps(out) + "\n" if fmt == "json" else f"ERROR: {result}\n")
            continue
        if not result.ok and code == 0:
            code = 1
        if fmt == "json":
            stdout.write(json.dumps(result.to_dict()) + "\n")
        else:
            stdout.write(_pretty(result) + "\n")
    return code


def add_arguments(p: argparse.ArgumentParser) -> None:
    from .main import add_policy_flags

    p.description = "Evaluate facts; exit 0 all ok, 1 any not ok, 2 bad input."
    add_policy_flags(p, default_format="json")
    p.add_argument(
        "file", nargs="?", default="-", metavar="FILE", help="a JSON object or NDJSON file; - or omitted reads stdin"
    )
    g = p.add_argument_group("decision ledger (see `stoprule log`)")
    g.add_argument("--run", metavar="RUN_ID", help="record each decision in this run of the ledger")
    g.add_argument("--parent", metavar="NODE_ID", help="the recorded decision's parent node (default: the run's tip)")
    g.add_argument("--checkpoint", action="store_true", help="record ok decisions as checkpoint nodes")
    g.add_argument("--retry", metavar="TOKEN", help="retry the blocked node this token names with a corrected fact")
    g.add_argument(
        "--ledger", metavar="PATH", help="ledger file (default: $STOPRULE_LEDGER, then ./.stoprule/ledger.db)"
    )


def run(args: argparse.Namespace, stdin: IO[bytes], stdout: IO[str], stderr: IO[str]) -> int:
    if args.checkpoint or any(v is not None for v in (args.run, args.parent, args.retry, args.ledger)):
        from .log_cmd import record_command  # the ledger (sqlite3, hmac) loads only when recording

        return record_command(args, stdin, stdout, stderr)
    return eval_command(args.policy, args.file, args.format, stdin, stdout, stderr)
