"""``stoprule report show [TASK]``: a task's blocked report, rendered for people.

Without TASK, the most recently filed report. Without a report: nothing on stdout (``--format
json``: ``"report": null``), the reason on stderr, exit 1.
Exit codes: 0 a report was shown, 1 no report.
"""

from __future__ import annotations

import argparse
import json
from typing import IO

from stoprule.agent.blockers.reports import load_report, render_report
from stoprule.diagnostics import EXIT_NOT_OK, CommandError
from stoprule.project import project_root

__all__ = ["add_arguments", "run"]

HELP = "show a task's blocked report"


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="report_command", metavar="SUBCOMMAND")
    sub.required = True
    sp = sub.add_parser("show", help="render a task's blocked report (default: the latest one)")
    sp.add_argument("task", metavar="TASK", nargs="?")
    sp.add_argument("--format", choices=("text", "json"), default="text")


def run(args: argparse.Namespace, stdin: IO[bytes], stdout: IO[str], stderr: IO[str]) -> int:
    root = project_root()
    found = load_report(root, args.task) if root else None
    if found is not None:
        task, report = found
        if args.format == "json":
            stdout.write(json.dumps({"task_id": task, **report}, ensure_ascii=False, indent=2) + "\n")
        else:
            stdout.write(f"Task {task}\n" + render_report(report))
        return 0
    what = f"task {args.task}" if args.task else "this project"
    if args.format == "json":
        stdout.write(json.dumps({"task_id": args.task, "report": None}) + "\n")
    raise CommandError(
        f"no blocked report for {what} (an agent files one with the MCP tool blocked_report)", EXIT_NOT_OK
    )
