"""``stoprule blocker add``: log a blocker from a script or an agent without MCP (the MCP ``blocker`` tool's fields).

Exit codes: 0 logged (or already logged within the cooldown), 1 not logged (limit
reached, logging off, or the write failed), 2 invalid arguments or config.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import IO, Any

from stoprule.agent.blockers.service import open_service
from stoprule.agent.hook.remote import attach_mirror
from stoprule.cli.common import ledger_target
from stoprule.diagnostics import EXIT_NOT_OK, EXIT_OK, CommandError
from stoprule.ledger.backend import open_ledger
from stoprule.ledger.recorder import Recorder
from stoprule.project import STATE_DIR, ensure_state_dir

__all__ = ["add_arguments", "record_in_ledger", "run"]

HELP = "log a blocker (same fields as the MCP blocker tool)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="blocker_command", metavar="SUBCOMMAND")
    sub.required = True
    sp = sub.add_parser("add", help="log one blocker to the project's store and blockers.md")
    sp.add_argument("--category", required=True, help="a blocker category of the pack (hard or soft)")
    sp.add_argument("--question", required=True, help="the question or permission you would ask the user")
    sp.add_argument("--context", default="", help="what you were doing")
    g = sp.add_mutually_exclusive_group(required=True)
    g.add_argument("--blocks-progress", dest="blocks", action="store_true", help="the current task cannot go on")
    g.add_argument("--no-blocks-progress", dest="blocks", action="store_false", help="other work can go on")
    sp.add_argument("--option", action="append", default=[], metavar="TEXT", help="an option considered (repeat)")
    sp.add_argument("--chosen-option", metavar="TEXT", help="soft categories: the option chosen")
    sp.add_argument("--chosen-reasoning", metavar="TEXT", help="soft categories: why")
    sp.add_argument("--task", metavar="TEXT", help="the task it is about (default: the task in progress)")
    sp.add_argument(
        "--session",
        metavar="ID",
        help="session (run) id (default: $STOPRULE_SESSION, then the session the harness started, then 'default')",
    )
    sp.add_argument("--policy", metavar="PATH", help="policy pack directory (default: as `stoprule eval`)")
    sp.add_argument("--format", choices=("text", "json"), default="text")


def record_in_ledger(service: Any, session: str, fact: dict[str, Any]) -> None:
    """The ledger side of ``blockers.ledger: true``: record ``fact`` as a decision of run ``session``
    in the project's ledger (``$STOPRULE_LEDGER``, else the config's ``ledger.url``, else ``.stoprule/ledger.db``)."""
    path, default = ledger_target(None, start=service.project_dir)
    if default:
        path = os.path.join(ensure_state_dir(os.path.join(service.project_dir, STATE_DIR)), "ledger.db")
    with open_ledger(path, create=True) as ledger:
        Recorder(ledger, service.evaluator).record(session, fact)


def run(args: argparse.Namespace, stdin: IO[bytes], stdout: IO[str], stderr: IO[str]) -> int:
    service = open_service(policy=args.policy, recorder=record_in_ledger)

    attach_mirror(service)  # the team server, when the project names one: the blocker is copied there
    reply = service.log_blocker(
        args.session,
        {
            "category": args.category,
            "question": args.question,
            "context": args.context,
            "blocksProgress": args.blocks,
            "options": args.option,
            "chosenOption": args.chosen_option,
            "chosenReasoning": args.chosen_reasoning,
            "task": args.task,
        },
    )
    if args.format == "json":
        stdout.write(json.dumps({"ok": reply.ok, "message": reply.text, **reply.data}, ensure_ascii=False) + "\n")
    elif reply.ok:
        stdout.write(reply.text + "\n")
    if not reply.ok:
        raise CommandError(reply.text)
    return EXIT_OK if reply.data.get("status") in ("logged", "duplicate") else EXIT_NOT_OK
