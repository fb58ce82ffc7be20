"""``stoprule serve``: the decision service over HTTP (see docs/serve.md).

    stoprule serve --config serve.yaml [--host 127.0.0.1] [--port 8474] [--workers N]
    stoprule serve --new-token [--name NAME] [--scope SCOPE ...]   a bearer token and the config lines for it
    stoprule serve migrate --ledger URL [--grant ROLE]             make or upgrade the PostgreSQL schema (as its owner)

Exit 2 on a bad config, a pack that fails check, a ledger whose schema needs ``serve migrate``, or
a refused combination of flags.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
from dataclasses import replace
from typing import IO

from stoprule import codes
from stoprule.cli.common import policy_error
from stoprule.config.serve import ServeConfig, load_serve_config, new_token, parse_scope
from stoprule.diagnostics import EXIT_NOT_OK, CommandError, PolicyError
from stoprule.ledger.backend import is_url
from stoprule.ledger.errors import LedgerError
from stoprule.ledger.postgres import PgLedger, display_url, grant_sql, migrate
from stoprule.serve import team
from stoprule.serve.policy import PackHolder

__all__ = ["add_arguments", "run"]

HELP = "serve decisions over HTTP: evaluate, batch, hooks, policy, metrics (docs/serve.md)"
DEFAULT_PORT = 8474
_LOOPBACK = ("127.0.0.1", "::1", "localhost")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Serve decisions over HTTP with N worker processes. Bearer tokens (hashed, with their scopes) and limits "
        "come from --config; TLS belongs to a reverse proxy in front. `stoprule serve migrate` makes the "
        "PostgreSQL schema, run once by the database's owner. See docs/serve.md."
    )
    p.add_argument(
        "action",
        nargs="?",
        choices=("migrate",),
        help="migrate: make the ledger's and the team store's tables in PostgreSQL, or bring them to "
        "this stoprule's schema (as the role that owns them), then exit",
    )
    p.add_argument("--config", metavar="FILE", help="the server's YAML config (policy, tokens, ledger, limits)")
    p.add_argument("--policy", metavar="DIR", help="the pack directory (overrides the config; hot-reloaded)")
    p.add_argument("--ledger", metavar="PATH|URL", help="record decisions that name a run (overrides the config)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})")
    p.add_argument("--workers", type=int, default=1, metavar="N", help="worker processes (default 1; 0: one per CPU)")
    p.add_argument("--no-auth", action="store_true", help="accept requests without a token (loopback only)")
    p.add_argument("--new-token", action="store_true", help="print a new bearer token and its config lines, then exit")
    p.add_argument("--name", default="NAME", help="with --new-token: the token's name (the ledger records it)")
    p.add_argument(
        "--scope",
        action="append",
        metavar="SCOPE",
        help="with --new-token: what the token may do, repeatable: evaluate, record:PREFIX*, "
        "record:own, blockers:PROJECT[,PROJECT], metrics, console:read, console:resolve, * "
        "(default: evaluate)",
    )
    p.add_argument("--grant", metavar="ROLE", help="with migrate: also grant the service's ROLE what it needs, no more")
    p.add_argument("--log-level", default="warning", choices=("critical", "error", "warning", "info", "debug"))


def run(args: argparse.Namespace, stdin: IO[bytes], stdout: IO[str], stderr: IO[str]) -> int:
    if args.new_token:
        return _new_token(args, stdout)
    config = load_serve_config(args.config) if args.config else ServeConfig()
    ledger = args.ledger or os.environ.get("STOPRULE_LEDGER") or config.ledger or None  # flag > env > file
    if args.action == "migrate":
        return _migrate(ledger, args.grant, stdout)
    missing = [name for name in ("starlette", "uvicorn") if importlib.util.find_spec(name) is None]
    if missing:  # before anything is said or started: the service cannot run without them
        raise CommandError(f"`stoprule serve` needs {' and '.join(missing)}: pip install 'stoprule[serve]'")
    from stoprule.serve.run import serve  # imports the `serve` extra

    config = replace(config, policy=args.policy or config.policy, ledger=ledger, auth=not args.no_auth)
    if args.no_auth and args.host not in _LOOPBACK:
        raise CommandError("--no-auth listens on loopback only (--host 127.0.0.1)")
    if config.auth and not config.tokens:
        raise CommandError(
            "no bearer tokens configured: add `tokens:` to --config (`stoprule serve --new-token`)"
            " or run with --no-auth on loopback"
        )
    _check_schema(ledger)
    try:
        holder = PackHolder(config.policy)  # refuse to start on a pack that fails check
    except PolicyError as exc:
        return policy_error(exc, config.policy or "the selected pack", stderr)
    config = replace(config, policy=holder.root)
    workers = args.workers if args.workers > 0 else (os.cpu_count() or 1)
    unscoped = [t.name for t in config.tokens if "*" in t.scopes]
    if unscoped:
        stderr.write(f"stoprule serve: token(s) {', '.join(unscoped)} may do everything (no `scopes:`)\n")
    stderr.write(
        f"stoprule serve: http://{args.host}:{args.port} ({workers} worker(s)); pack {holder.root} "
        f"{holder.current.digest}; ledger {_shown(config.ledger)}\n"
    )
    try:
        ok = serve(config, host=args.host, port=args.port, workers=workers, log_level=args.log_level)
    except OSError as exc:
        raise CommandError(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}") from None
    if not ok:
        raise CommandError("the server's workers could not start (see the messages above)", EXIT_NOT_OK)
    return 0


def _new_token(args: argparse.Namespace, stdout: IO[str]) -> int:
    scopes = args.scope or ["evaluate"]
    try:
        for scope in scopes:
            parse_scope(scope)
    except ValueError as exc:
        raise CommandError(f"--scope: {exc}") from None
    token, digest = new_token()
    shown = ", ".join(f"'{s}'" if any(c in s for c in ":*,") else s for s in scopes)
    stdout.write(
        f"token: {token}\n# in the server's config, under tokens:\n  - name: {args.name}\n"
        f"    sha256: {digest}\n    scopes: [{shown}]\n"
    )
    return 0


def _migrate(ledger: str | None, role: str | None, stdout: IO[str]) -> int:
    """Make or upgrade the PostgreSQL schema of the ledger and the team store; grant ``role``."""
    if ledger is None or not is_url(ledger):
        raise CommandError(
            "serve migrate needs the ledger's postgresql:// URL (--ledger, $STOPRULE_LEDGER or "
            "`ledger:` in --config); a ledger file is made and upgraded by its first write"
        )
    import psycopg  # the `postgres` extra

    found, now = migrate(ledger)
    try:
        with psycopg.connect(ledger, autocommit=True, connect_timeout=10) as conn:
            conn.execute(team.DDL)
            if role:
                conn.execute(grant_sql(role))
                conn.execute(team.GRANTS.format(role='"' + role.replace('"', '""') + '"'))
    except psycopg.Error as exc:
        raise CommandError(f"serve migrate: {str(exc).strip().splitlines()[0]}") from None
    if found is None:
        what = f"made ledger schema {now}"
    else:
        what = f"ledger schema {now}: nothing to do" if found == now else f"upgraded from schema {found} to {now}"
    granted = f"; granted role {role!r} what the service needs" if role else ""
    stdout.write(f"{display_url(ledger)}: {what}; team store ready{granted}\n")
    return 0


def _check_schema(ledger: str | None) -> None:
    """Refuse to serve a PostgreSQL ledger whose schema is missing or older (``serve migrate``); a
    database that does not answer now is no reason not to start (it is asked again per request)."""
    if ledger is None or not is_url(ledger):
        return
    try:
        PgLedger.open(ledger, create=False, timeout_ms=5000).close()
    except LedgerError as exc:
        if exc.code in (codes.LEDGER_MISSING, codes.LEDGER_OLD_SCHEMA, codes.LEDGER_TOO_NEW):
            raise
        return


def _shown(ledger: str | None) -> str:
    if not ledger:
        return "none"
    if is_url(ledger):
        return display_url(ledger)
    return ledger
