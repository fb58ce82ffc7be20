"""``stoprule console``: this project's runs, stops, blockers, reports and policy in a browser.

    stoprule console [--port 8475] [--ledger PATH] [--policy DIR] [--read-only]

Serves the project's ledger (as ``stoprule log`` finds it), its blockers and reports and the pack
in force, on loopback only, until Ctrl-C. The link it prints carries a key made for this run:
only a browser given that link gets in (the agent can reach the port, not the key). Started
from inside an agent's session, or with ``--read-only``, nobody can resolve blockers in it.
Exit 2: no project and no ledger, a host that is not loopback, a bad config, the port taken,
or the console's libraries missing (``pip install 'stoprule[console]'``).
"""

from __future__ import annotations

import argparse
import os
import secrets
import socket
import threading
from typing import IO

from stoprule.agent.blockers.procs import linked_session
from stoprule.cli.common import ledger_target
from stoprule.config.reader import read_settings
from stoprule.console.board import LocalBoard, NoBoard
from stoprule.console.hooklog import HookLog
from stoprule.console.policy import PACKS_DIR, PolicyView
from stoprule.console.runs import Runs
from stoprule.diagnostics import CommandError
from stoprule.engine.packs import pack_path
from stoprule.project import find_project

__all__ = ["DEFAULT_PORT", "add_arguments", "run"]

HELP = "this project's runs, stops, blockers and policy in a browser (loopback; see docs/console.md)"
DEFAULT_PORT = 8475
_LOOPBACK = ("127.0.0.1", "::1", "localhost")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Serve this project's ledger, blockers, blocked reports and policy as web pages on loopback, "
        "with new stops appearing as they happen. Open the printed link (it carries this run's key)."
    )
    p.add_argument("--host", default="127.0.0.1", help="loopback address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT}; 0: any free port)")
    p.add_argument("--ledger", metavar="PATH|URL", help="the ledger (default: as `stoprule log` finds it)")
    p.add_argument("--policy", metavar="DIR", help="the pack (default: $STOPRULE_POLICY, .stoprule/policies/, bundled)")
    p.add_argument("--read-only", action="store_true", help="show everything, resolve nothing")


def agent_session(state_dir: str | None) -> str | None:
    """Why the console must be read-only when this process runs inside an agent's session (the
    harness process linked at session start is an ancestor), else None."""
    if not state_dir:
        return None
    link = linked_session(state_dir)
    if link is None:
        return None
    return (
        f"started from inside the {link.get('harness', 'agent')} session {link['session']}: blockers are the "
        "user's to resolve (start the console from your own terminal)"
    )


def _hook_log(state_dir: str | None) -> str | None:
    if not state_dir:
        return None
    log = read_settings(os.path.join(state_dir, "config.yaml")).hook.get("log", True)
    if log is False:
        return None
    return log if isinstance(log, str) else os.path.join(state_dir, "hook.log")


def run(args: argparse.Namespace, stdin: object, stdout: IO[str], stderr: IO[str]) -> int:
    if args.host not in _LOOPBACK:
        raise CommandError("the console listens on loopback only (a team serves it with `stoprule serve`)")
    try:
        import uvicorn

        from stoprule.console.access import KeyGate
        from stoprule.console.app import create_console
    except ImportError as exc:
        raise CommandError(f"the console needs its libraries ({exc.name}): pip install 'stoprule[console]'") from None
    state_dir = find_project()
    target, default = ledger_target(args.ledger)  # a bad config: ConfigError, reported by the CLI
    log = _hook_log(state_dir)
    if state_dir is None and default:
        raise CommandError(
            "no .stoprule/ here or above: run the console inside a project (`stoprule init`), "
            "or name a ledger with --ledger"
        )
    read_only = "started with --read-only" if args.read_only else agent_session(state_dir)
    try:
        sock = socket.socket(socket.AF_INET6 if ":" in args.host else socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((args.host, args.port))
        sock.listen(128)
    except OSError as exc:
        raise CommandError(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}") from None
    port = sock.getsockname()[1]
    key = secrets.token_urlsafe(24)
    root = os.path.dirname(state_dir) if state_dir else None
    policy = PolicyView(
        lambda: pack_path(args.policy), state_dir, os.path.join(state_dir, PACKS_DIR) if state_dir else None
    )
    app = create_console(
        runs=Runs(target, HookLog(log)),
        board=LocalBoard(root) if root else NoBoard(),
        policy=policy,
        gate=KeyGate(key, port, read_only),
        title=os.path.basename(root) if root else "stoprule",
        project=os.path.basename(root) if root else None,
    )
    threading.Thread(target=_warm, args=(policy,), daemon=True).start()
    host = f"[{args.host}]" if ":" in args.host else args.host
    stdout.write(f"http://{host}:{port}/?key={key}\n")
    stdout.flush()
    stderr.write(
        f"stoprule console: open the link above; ledger {target}"
        + (f"; read-only: {read_only}" if read_only else "")
        + "; Ctrl-C stops it\n"
    )
    stderr.flush()
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off", timeout_graceful_shutdown=1))
    server.run(sockets=[sock])
    return 0


def _warm(policy: object) -> None:
    """Compile the pack in force and keep its copy (for later diffs) before anyone asks."""
    try:
        policy.current()  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - the policy page reports a pack that does not compile
        return
