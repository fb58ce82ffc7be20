"""``stoprule guard HARNESS``: refuse the agent's tool calls that would switch the gate off;
``stoprule guard on|off|status``: the user's switch.

As a hook (wired by ``stoprule init`` before every write or shell tool call, and on Claude
Code's settings changes): reads the harness's payload on stdin, prints exactly the harness's
refusal (or nothing, where that means "no decision"), always exits 0; a refusal is named on
stderr and written to the session's attempts journal (the next stop names it to the user).
See :mod:`stoprule.agent.guard` and docs/agents.md ("Threat model").

``off`` lets every call through in this project from the next session on (a session that
started with the guard on keeps it); ``on`` undoes it. Only the user runs them: inside an
agent's session they are refused.

The harnesses run the guard by its own entry (``agent/guard/__main__.py``, ``stoprule init`` wires
it): this command is the same guard for a person or a script.
"""

from __future__ import annotations

import os
import time
from types import SimpleNamespace

from stoprule.agent.guard.run import answer
from stoprule.diagnostics import CommandError
from stoprule.project import GUARD_OFF_FILE, find_project

__all__ = ["add_arguments", "parse_simple", "run"]

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from typing import IO

HARNESSES = ("claude-code", "codex", "gemini", "cursor", "copilot", "opencode")
SWITCH = ("on", "off", "status")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = (
        "As a harness's pre-tool hook: refuse the agent's writes to stoprule's files and the harness's hooks, "
        "and its runs of stoprule's mutating commands (payload on stdin, the harness's answer on stdout, always "
        "exit 0). on | off | status: the user's switch for this project (off: from the next session on)."
    )
    p.add_argument(
        "target", choices=(*HARNESSES, *SWITCH), metavar="HARNESS|on|off|status", help=" | ".join((*HARNESSES, *SWITCH))
    )


def parse_simple(argv: list[str]) -> SimpleNamespace | None:
    """``HARNESS`` alone, as the hook configs run it (no argparse: the guard's cold start)."""
    if len(argv) != 1 or argv[0] not in HARNESSES:
        return None
    return SimpleNamespace(command="guard", target=argv[0])


def _switch(target: str, stdout: IO[str], stderr: IO[str]) -> int:
    project = find_project()
    if project is None:
        raise CommandError("no .stoprule/ found upward (run stoprule init first)")
    path = os.path.join(project, GUARD_OFF_FILE)
    if target == "off":
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(f"guard switched off by the user at {time.strftime('%Y-%m-%dT%H:%M:%S%z')}\n")
        stdout.write(
            f"the guard is off for {os.path.dirname(project)} from the next agent session on "
            f"({path}; `stoprule guard on` undoes it)\n"
        )
    elif target == "on":
        if os.path.exists(path):
            os.unlink(path)
        stdout.write(f"the guard is on for {os.path.dirname(project)}\n")
    else:
        stdout.write(
            f"guard: {'off' if os.path.exists(path) else 'on'} ({os.path.dirname(project)}); "
            "`stoprule doctor` lists where it is wired\n"
        )
    return 0


def run(args: argparse.Namespace | SimpleNamespace, stdin: IO[bytes], stdout: IO[str], stderr: IO[str]) -> int:
    if args.target in SWITCH:
        return _switch(args.target, stdout, stderr)
    return answer(args.target, stdin, stdout, stderr)
