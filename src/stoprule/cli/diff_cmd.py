"""``stoprule diff``: where two packs decide differently, and what their declarations changed."""

from __future__ import annotations

import argparse
import json
from typing import IO

from stoprule import codes
from stoprule.analysis import AnalysisLimit, diff_packs
from stoprule.analysis.explore import Progress
from stoprule.analysis.render import render_diff
from stoprule.cli.common import diagnostics_error, policy_error
from stoprule.cli.flags import add_backend_flag
from stoprule.diagnostic import Diagnostic
from stoprule.diagnostics import EXIT_NOT_OK, EXIT_OK, CommandError, PolicyError
from stoprule.engine.build import compile_pack

__all__ = ["add_arguments", "diff_command", "run"]


def diff_command(
    old: str, new: str, fmt: str, stdout: IO[str], stderr: IO[str], backend: str = "auto", timeout: float | None = None
) -> int:
    """Compare two packs; exit 0 no verdict changes, 1 some, 2 bad input."""
    ctxs = []
    for root in (old, new):
        try:
            ctxs.append(compile_pack(root).checked)
        except PolicyError as exc:
            return policy_error(exc, root, stderr)
    try:
        report = diff_packs(ctxs[0], ctxs[1], Progress(stderr), backend=backend, timeout=timeout)
    except AnalysisLimit as exc:
        diag = Diagnostic(new, 1, 1, codes.AUDIT_LIMIT, str(exc))
        return diagnostics_error(PolicyError([diag]), "the packs are beyond the analysis", stderr)
    if fmt == "json":
        stdout.write(json.dumps(report.to_dict()) + "\n")
    else:
        stdout.write(render_diff(report) + "\n")
    if report.bugs:
        raise CommandError("a witness of the analysis does not reproduce: a bug in stoprule, please report it")
    return EXIT_NOT_OK if report.changed or report.unanswered else EXIT_OK


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Compare two packs over their whole fact domain: the regions whose verdict or reason changes "
        "(grouped old -> new, each with an example and the rules on each side), and the declarations "
        "added, removed or changed. Exit 0 no verdict changes, 1 some, 2 bad input."
    )
    p.add_argument("old", metavar="OLD_PACK", help="the pack before the change (a directory)")
    p.add_argument("new", metavar="NEW_PACK", help="the pack after the change (a directory)")
    p.add_argument("--format", choices=("json", "pretty"), default="pretty", help="output format (default: pretty)")
    add_backend_flag(p, "one SMT query per changed pair of rules")
    p.add_argument("--timeout", type=float, metavar="S", help="stop after S seconds (solver backend)")


def run(args: argparse.Namespace, stdin: object, stdout: IO[str], stderr: IO[str]) -> int:
    return diff_command(args.old, args.new, args.format, stdout, stderr, backend=args.backend, timeout=args.timeout)
