"""``stoprule serve``: the decision service over HTTP (see docs/serve.md).

    stoprule serve --config serve.yaml [--host 127.0.0.1] [--port 8474] [--workers N]
    stoprule serve --new-token          a bearer token and the hash to put in the config

Exit 2 on a bad config, a pack that fails check, or a refused combination of flags.
"""

from __future__ import annotations

import argparse
import os
from typing import IO

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
    import importlib.util

    from stoprule.serve.config import ConfigError, ServeConfig, load_config, new_token

    if args.new_token:
        token, digest = new_token()
        stdout.write(f"token: {token}\n# in the server's config, under tokens:\n  - name: NAME\n    sha256: {digest}\n")
        return 0
    missing = [m for m in ("starlette", "uvicorn") if importlib.util.find_spec(m) is None]
    if missing:  # before the banner: the service cannot run without them
        stderr.write(f"stoprule: `stoprule serve` needs {' and '.join(missing)}: pip install 'stoprule[serve]'\n")
        return 2
    try:
        config = load_config(args.config) if args.config else ServeConfig()
    except ConfigError as exc:
        stderr.write(f"stoprule: {exc}\n")
        return 2
    ledger = args.ledger or os.environ.get("STOPRULE_LEDGER") or config.ledger or None  # flag > env > file
    config = ServeConfig(policy=args.policy or config.policy, tokens=config.tokens, ledger=ledger,
                         limits=config.limits, reload_interval_ms=config.reload_interval_ms,
                         auth=not args.no_auth)  # fmt: skip
    if args.no_auth and args.host not in _LOOPBACK:
        stderr.write("stoprule: --no-auth listens on loopback only (--host 127.0.0.1)\n")
        return 2
    if config.auth and not config.tokens:
        stderr.write("stoprule: no bearer tokens configured: add `tokens:` to --config (`stoprule serve --new-token`)"
                     " or run with --no-auth on loopback\n")  # fmt: skip
        return 2
    from stoprule.diagnostics import PolicyError
    from stoprule.serve.policy import PackHolder

    try:
        holder = PackHolder(config.policy)  # refuse to start on a pack that fails check
    except PolicyError as exc:
        from stoprule.cli.common import policy_error

        return policy_error(exc, config.policy or "the selected pack", stderr)
    config = ServeConfig(policy=holder.root, tokens=config.tokens, ledger=config.ledger, limits=config.limits,
                         reload_interval_ms=config.reload_interval_ms, auth=config.auth)  # fmt: skip
    workers = args.workers if args.workers > 0 else (os.cpu_count() or 1)
    stderr.write(f"stoprule serve: http://{args.host}:{args.port} ({workers} worker(s)); pack {holder.root} "
                 f"{holder.current.digest}; ledger {_shown(config.ledger)}\n")  # fmt: skip
    from stoprule.serve.run import serve

    try:
        ok = serve(config, host=args.host, port=args.port, workers=workers, log_level=args.log_level)
    except OSError as exc:
        stderr.write(f"stoprule: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}\n")
        return 2
    if not ok:
        stderr.write("stoprule: the server's workers could not start (see the messages above)\n")
        return 1
    return 0


def _shown(ledger: str | None) -> str:
    if not ledger:
        return "none"
    from stoprule.ledger.backend import is_url

    if is_url(ledger):
        from stoprule.ledger.postgres import display_url

        return display_url(ledger)
    return ledger
