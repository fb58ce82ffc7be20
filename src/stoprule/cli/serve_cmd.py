"""``stoprule serve``: the decision service over HTTP (see docs/serve.md).

    stoprule serve --config serve.yaml [--host 127.0.0.1] [--port 8474] [--workers N]
    stoprule serve --new-token          a bearer token and the hash to put in the config

Exit 2 on a bad config, a pack that fails check, or a refused combination of flags.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
from typing import IO

from stoprule.cli.common import policy_error
from stoprule.config.serve import ServeConfig, load_serve_config, new_token
from stoprule.diagnostics import EXIT_NOT_OK, CommandError, PolicyError
from stoprule.ledger.backend import is_url
from stoprule.ledger.postgres import display_url
from stoprule.serve.policy import PackHolder

__all__ = ["add_arguments", "run"]

HELP = "serve decisions over HTTP: evaluate, batch, hooks, policy, metrics (docs/serve.md)"
DEFAULT_PORT = 8474
_LOOPBACK = ("127.0.0.1", "::1", "localhost")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Serve decisions over HTTP with N worker processes. Bearer tokens (hashed) and limits come from "
        "--config; TLS belongs to a reverse proxy in front. See docs/serve.md."
    )
    p.add_argument("--config", metavar="FILE", help="the server's YAML config (policy, tokens, ledger, limits)")
    p.add_argument("--policy", metavar="DIR", help="the pack directory (overrides the config; hot-reloaded)")
    p.add_argument("--ledger", metavar="PATH|URL", help="record decisions that name a run (overrides the config)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})")
    p.add_argument("--workers", type=int, default=1, metavar="N", help="worker processes (default 1; 0: one per CPU)")
    p.add_argument("--no-auth", action="store_true", help="accept requests without a token (loopback only)")
    p.add_argument("--new-token", action="store_true", help="print a new bearer token and its hash, then exit")
    p.add_argument("--log-level", default="warning", choices=("critical", "error", "warning", "info", "debug"))


def run(args: argparse.Namespace, stdin: IO[bytes], stdout: IO[str], stderr: IO[str]) -> int:
    if args.new_token:
        token, digest = new_token()
        stdout.write(f"token: {token}\n# in the server's config, under tokens:\n  - name: NAME\n    sha256: {digest}\n")
        return 0
    missing = [name for name in ("starlette", "uvicorn") if importlib.util.find_spec(name) is None]
    if missing:  # before anything is said or started: the service cannot run without them
        raise CommandError(f"`stoprule serve` needs {' and '.join(missing)}: pip install 'stoprule[serve]'")
    from stoprule.serve.run import serve  # imports the `serve` extra

    config = load_serve_config(args.config) if args.config else ServeConfig()
    ledger = args.ledger or os.environ.get("STOPRULE_LEDGER") or config.ledger or None  # flag > env > file
    config = ServeConfig(policy=args.policy or config.policy, tokens=config.tokens, ledger=ledger,
                         limits=config.limits, reload_interval_ms=config.reload_interval_ms,
                         auth=not args.no_auth, console_resolve=config.console_resolve)  # fmt: skip
    if args.no_auth and args.host not in _LOOPBACK:
        raise CommandError("--no-auth listens on loopback only (--host 127.0.0.1)")
    if config.auth and not config.tokens:
        raise CommandError("no bearer tokens configured: add `tokens:` to --config (`stoprule serve --new-token`)"
                           " or run with --no-auth on loopback")  # fmt: skip

    try:
        holder = PackHolder(config.policy)  # refuse to start on a pack that fails check
    except PolicyError as exc:
        return policy_error(exc, config.policy or "the selected pack", stderr)
    config = ServeConfig(policy=holder.root, tokens=config.tokens, ledger=config.ledger, limits=config.limits,
                         reload_interval_ms=config.reload_interval_ms, auth=config.auth,
                         console_resolve=config.console_resolve)  # fmt: skip
    workers = args.workers if args.workers > 0 else (os.cpu_count() or 1)
    stderr.write(f"stoprule serve: http://{args.host}:{args.port} ({workers} worker(s)); pack {holder.root} "
                 f"{holder.current.digest}; ledger {_shown(config.ledger)}\n")  # fmt: skip

    try:
        ok = serve(config, host=args.host, port=args.port, workers=workers, log_level=args.log_level)
    except OSError as exc:
        raise CommandError(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}") from None
    if not ok:
        raise CommandError("the server's workers could not start (see the messages above)", EXIT_NOT_OK)
    return 0


def _shown(ledger: str | None) -> str:
    if not ledger:
        return "none"

    if is_url(ledger):
        return display_url(ledger)
    return ledger
