"""``stoprule eval``: facts in (one JSON object or NDJSON), verdict envelopes out."""

from __future__ import annotations

import argparse
import json

from ..diagnostics import EvaluationError, FactError, PolicyError
from ..evaluator import Verdict
from ..factio import parse_facts, read_input
from .common import add_ledger_flag, add_policy_flags, fact_error, input_name, policy_error, render_verdict

__all__ = ["add_arguments", "eval_command", "run"]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import IO

    from ..evaluator import Evaluator


def eval_command(
    policy: str | None,
    files: list[str],
    fmt: str,
    stdin: IO[bytes],
    stdout: IO[str],
    stderr: IO[str],
    *,
    strict: bool = False,
) -> int:
    """Evaluate every fact of every file in order; exit 0 all ok, 1 any not ok, 2 bad input or pack."""
    from ..packs import load_policy, select_pack

    try:
        evaluator = load_policy(policy)
    except PolicyError as exc:
        return policy_error(exc, select_pack(policy), stderr)
    code = 0
    for file in files:
        data = read_input(file, stdin, stderr)
        if data is None:
            code = 2
            continue
        code = max(code, _eval_file(evaluator, input_name(file), data, fmt, stdout, stderr, strict))
    return code


def _eval_file(
    evaluator: Evaluator, name: str, data: bytes, fmt: str, stdout: IO[str], stderr: IO[str], strict: bool
) -> int:
    code = 0
    for line, item in parse_facts(data):
        result: Verdict | EvaluationError
        if isinstance(item, FactError):
            result = item
        else:
            try:
                result = evaluator.evaluate(item, strict=strict)
            except EvaluationError as exc:
                exc.line = line
                result = exc
            except Exception as exc:  # noqa: BLE001 - one fact must not end the batch
                result = EvaluationError("internal.error", f"{type(exc).__name__}: {exc}", line=line)
        if isinstance(result, EvaluationError):
            code = 2
            fact_error(result, f"{name}: ", fmt, stdout, stderr)
            continue
        for w in result.warnings:
            at = f"{w['field']}: " if w["field"] else ""
            stderr.write(f"stoprule: {name}: line {line}: warning: {w['code']}: {at}{w['message']}\n")
        if not result.ok and code == 0:
            code = 1
        if fmt == "json":
            stdout.write(json.dumps(result.to_dict()) + "\n")
        else:
            stdout.write(render_verdict(result) + "\n")
    return code


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = "Evaluate facts; exit 0 all ok, 1 any not ok, 2 bad input."
    add_policy_flags(p, default_format="json")
    p.add_argument(
        "file", nargs="*", default=["-"], metavar="FILE", help="JSON object or NDJSON files; - or none reads stdin"
    )
    p.add_argument(
        "--strict", action="store_true", help="an unknown fact field (or an empty fact) is an error, not a warning"
    )
    g = p.add_argument_group("decision ledger (see `stoprule log`)")
    g.add_argument("--run", metavar="RUN_ID", help="record each decision in this run of the ledger")
    g.add_argument("--parent", metavar="NODE_ID", help="the recorded decision's parent node (default: the run's tip)")
    g.add_argument("--checkpoint", action="store_true", help="record ok decisions as checkpoint nodes")
    g.add_argument("--retry", metavar="TOKEN", help="retry the blocked node this token names with a corrected fact")
    add_ledger_flag(g)


def run(args: argparse.Namespace, stdin: IO[bytes], stdout: IO[str], stderr: IO[str]) -> int:
    if args.checkpoint or any(v is not None for v in (args.run, args.parent, args.retry, args.ledger)):
        from .log_cmd import record_command  # the ledger (sqlite3, hmac) loads only when recording

        return record_command(args, stdin, stdout, stderr)
    return eval_command(args.policy, args.file, args.format, stdin, stdout, stderr, strict=args.strict)
