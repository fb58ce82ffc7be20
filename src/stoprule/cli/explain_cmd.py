"""``stoprule explain``: why a fact got its verdict, rule by rule."""

from __future__ import annotations

import argparse
import json
from typing import IO

from stoprule.analysis.explain import explain, render_pretty
from stoprule.cli.common import policy_error
from stoprule.cli.flags import add_policy_flags
from stoprule.cli.output import input_name
from stoprule.diagnostics import EXIT_INVALID, EXIT_NOT_OK, EvaluationError, FactError, PolicyError
from stoprule.engine.build import compile_pack
from stoprule.engine.evaluator import Evaluator
from stoprule.engine.packs import select_pack
from stoprule.facts.parse import parse_facts, read_input

__all__ = ["add_arguments", "run"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Explain the verdict of a fact: the winning rule, the rules that matched but lost, and for every "
        "other rule the first condition that failed. Exit codes as for eval."
    )
    add_policy_flags(p, default_format="pretty")
    p.add_argument(
        "fact",
        nargs="?",
        default="-",
        metavar="FACT",
        help="a JSON fact file (or NDJSON: each fact explained); - or omitted reads stdin",
    )


def run(args: argparse.Namespace, stdin: IO[bytes], stdout: IO[str], stderr: IO[str]) -> int:
    """Explain every fact in ``args.fact``; exit codes as for ``eval``."""
    data = read_input(args.fact, stdin, stderr)
    if data is None:
        return EXIT_INVALID
    root = select_pack(args.policy)
    try:
        ctx = compile_pack(root)
    except PolicyError as exc:
        return policy_error(exc, root, stderr)
    assert ctx.compiled is not None
    evaluator = Evaluator(ctx.compiled)
    code = 0
    for line, item in parse_facts(data):
        try:
            if isinstance(item, FactError):
                raise item
            verdict, exp = explain(ctx.checked, evaluator, item)
        except EvaluationError as exc:
            exc.line = exc.line if exc.line is not None else line
            stderr.write(f"stoprule: {input_name(args.fact)}: {exc}\n")
            if args.format == "json":
                stdout.write(json.dumps({"error": exc.to_dict()}) + "\n")
            code = EXIT_INVALID
            continue
        if not verdict.ok and code == 0:
            code = EXIT_NOT_OK
        stdout.write((json.dumps(exp) if args.format == "json" else render_pretty(exp)) + "\n")
    return code
