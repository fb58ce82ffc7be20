"""``stoprule`` entry point: parse arguments, dispatch to one command module."""

from __future__ import annotations

import argparse
import os
import sys
from typing import IO

__all__ = ["main", "run"]


class _Formatter(argparse.HelpFormatter):
    """Help width from $COLUMNS: argparse's default imports shutil on every run (cold start)."""

    def __init__(self, prog: str) -> None:
        try:
            width = int(os.environ.get("COLUMNS", "100"))
        except ValueError:
            width = 100
        super().__init__(prog, width=max(width, 40) - 2)


def _parser() -> argparse.ArgumentParser:
    from .. import __version__

    p = argparse.ArgumentParser(
        prog="stoprule",
        formatter_class=_Formatter,
        description="Decide what an AI coding agent must do at a task boundary.",
    )
    p.add_argument("--version", action="version", version=f"stoprule {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    def policy_flag(sp: argparse.ArgumentParser, default_format: str) -> None:
        sp.add_argument(
            "--policy",
            metavar="PATH",
            help="policy pack directory (default: $STOPRULE_POLICY, ./.stoprule/policies/, then the bundled pack)",
        )
        sp.add_argument(
            "--format",
            choices=("json", "pretty"),
            default=default_format,
            help=f"output format (default: {default_format})",
        )

    ev = sub.add_parser(
        "eval",
        help="evaluate one JSON fact or NDJSON facts",
        description="Evaluate facts; exit 0 all ok, 1 any not ok, 2 bad input.",
        formatter_class=_Formatter,
    )
    policy_flag(ev, "json")
    ev.add_argument(
        "file",
        nargs="?",
        default="-",
        metavar="FILE",
        help="a JSON object or NDJSON file; - or omitted reads stdin",
    )
    ck = sub.add_parser(
        "check",
        help="validate and compile a policy pack",
        description="Print diagnostics; exit 0 clean, 2 on any error.",
        formatter_class=_Formatter,
    )
    policy_flag(ck, "pretty")
    return p


def run(argv: list[str], stdin: IO[bytes], stdout: IO[str], stderr: IO[str]) -> int:
    """Run one command with the given streams; returns the exit code."""
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on usage errors, 0 on --help
        return int(exc.code or 0)
    if args.command == "eval":
        from .eval_cmd import eval_command

        return eval_command(args.policy, args.file, args.format, stdin, stdout, stderr)
    from .check_cmd import check_command

    return check_command(args.policy, args.format, stdout, stderr)


def main(argv: list[str] | None = None) -> int:
    try:
        return run(sys.argv[1:] if argv is None else argv, sys.stdin.buffer, sys.stdout, sys.stderr)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
