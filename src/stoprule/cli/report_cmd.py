"""``stoprule report show [TASK]``: a task's blocked report, rendered for people.

Without TASK, the most recently filed report. A task without a report shows the
pack's fallback (the review reason of a stop at the turn limit without a report).
Exit codes: 0 a report was shown, 1 no report (the fallback was shown), 2 bad config or pack.
"""

from __future__ import annotations

import argparse
import json
from typing import IO

from stoprule.agent.fields import FIELDS
from stoprule.agent.reports import load_report, render_report
from stoprule.diagnostics import StopruleError
from stoprule.project import project_root

__all__ = ["add_arguments", "run"]

HELP = "show a task's blocked report"


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="report_command", metavar="SUBCOMMAND")
    sub.required = True
    sp = sub.add_parser("show", help="render a task's blocked report (default: the latest one)")
    sp.add_argument("task", metavar="TASK", nargs="?")
    sp.add_argument("--format", choices=("text", "json"), default="text")
    sp.add_argument("--policy", metavar="PATH", help="policy pack directory (for the fallback text)")


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
    try:  # the pack's own words for "the turn limit is reached and there is no report"
        from stoprule.engine.packs import load_policy, select_pack

        ev = load_policy(select_pack(args.policy, cwd=root))
        verdict = ev.evaluate({FIELDS["turn"]: 1, FIELDS["max_turns"]: 1})
        fallback = verdict.review_reason or verdict.message
    except StopruleError as exc:
        stderr.write(f"stoprule: {exc}\n")
        return 2
    what = f"task {args.task}" if args.task else "this project"
    if args.format == "json":
        stdout.write(json.dumps({"task_id": args.task, "report": None, "message": fallback}) + "\n")
    else:
        stdout.write(fallback + "\n")
    stderr.write(f"stoprule: no blocked report for {what}\n")
    return 1
