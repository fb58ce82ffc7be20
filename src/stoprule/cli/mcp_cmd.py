"""``stoprule mcp``: the blocker tools as an MCP server over stdio (needs the ``mcp`` extra)."""

from __future__ import annotations

import argparse
from typing import IO

from stoprule.cli.blocker_cmd import record_in_ledger
from stoprule.diagnostics import EXIT_OK, CommandError

__all__ = ["add_arguments", "run"]

HELP = "serve the blocker tools (blocker, report_status, blocked_report, blockers_list) over MCP stdio"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--policy", metavar="PATH", help="policy pack directory (default: as `stoprule eval`)")
    p.add_argument("--project", metavar="DIR", help="project directory (default: the nearest .stoprule/ upward)")
    p.add_argument("--server", metavar="URL", help="also send blockers and reports to this server (default: config)")


def run(args: argparse.Namespace, stdin: IO[bytes], stdout: IO[str], stderr: IO[str]) -> int:
    try:
        from stoprule.agent.blockers.mcp import serve
    except ImportError as exc:
        raise CommandError(f"`stoprule mcp` needs the MCP SDK: pip install 'stoprule[mcp]' ({exc})") from None
    serve(project=args.project, policy=args.policy, recorder=record_in_ledger, server=args.server)
    return EXIT_OK
