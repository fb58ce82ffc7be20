"""``stoprule blockers on|off|status|list|export|resolve ID`` (the ``/blockers`` command).

Exit codes: 0 ok, 1 no blocker with that id (resolve), 2 invalid config.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import IO

from stoprule.agent.blockers.service import open_service
from stoprule.agent.blockers.store import StoreWriteError
from stoprule.agent.hook.remote import DEFAULT_TOKEN_ENV, Remote, RemoteError, attach_mirror
from stoprule.diagnostics import EXIT_NOT_OK, CommandError

__all__ = ["add_arguments", "run"]

HELP = "the project's blockers: on, off, status, list, export, resolve ID"


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="blockers_command", metavar="SUBCOMMAND")
    sub.required = True
    sub.add_parser("on", help="turn blocker logging on for this project")
    sub.add_parser("off", help="turn blocker logging off (the tool then logs nothing, the provider adds no facts)")
    sp = sub.add_parser("status", help="on or off, where the file is, how many are open, the limits")
    sp.add_argument("--format", choices=("text", "json"), default="text")
    sp = sub.add_parser("list", help="open and resolved blockers of a session (or --all)")
    sp.add_argument("--session", metavar="ID", help="session (default: $STOPRULE_SESSION, then 'default')")
    sp.add_argument("--all", action="store_true", help="every session")
    sp.add_argument("--server", metavar="URL", help="the team's open blockers on this server, from every machine")
    sp.add_argument("--format", choices=("text", "json"), default="text")
    sp = sub.add_parser("export", help="every blocker of the current record: NDJSON (json) or blockers.md (md)")
    sp.add_argument("--format", choices=("json", "md"), default="json")
    sp = sub.add_parser("resolve", help="mark an open blocker resolved")
    sp.add_argument("id", metavar="ID")
    sp.add_argument("--note", help="how it was resolved (redacted, shown in blockers.md)")


def run(args: argparse.Namespace, stdin: IO[bytes], stdout: IO[str], stderr: IO[str]) -> int:
    if getattr(args, "server", None):
        return _team_list(args, stdout, stderr)
    service = open_service()
    store = service.store
    cmd = args.blockers_command
    try:
        if cmd in ("on", "off"):
            store.set_enabled(cmd == "on")
            stdout.write(f"blocker logging is {cmd} for {service.project_dir}\n")
            return 0
        if cmd == "status":
            items = store.blockers()
            s = service.settings
            info = {
                "enabled": store.enabled(),
                "project": service.project_dir,
                "file": os.path.relpath(store.markdown_path, service.project_dir),
                "record": os.path.relpath(store.record_path, service.project_dir),
                "open": sum(1 for b in items if b.open),
                "resolved": sum(1 for b in items if not b.open),
                "max_per_run": s.max_per_run,
                "cooldown_seconds": s.cooldown_seconds,
                "rotate_bytes": s.rotate_bytes,
                "rotate_entries": s.rotate_entries,
                "soft_categories": s.soft_categories,
                "ledger": s.ledger,
            }
            if args.format == "json":
                stdout.write(json.dumps(info) + "\n")
            else:
                stdout.write(
                    f"blockers: {'on' if info['enabled'] else 'off'} ({info['project']})\n"
                    f"  file {info['file']} (record {info['record']})\n"
                    f"  {info['open']} open, {info['resolved']} resolved (all sessions)\n"
                    f"  limits: {s.max_per_run} per run, cooldown {s.cooldown_seconds:g} s, rotation at "
                    f"{s.rotate_entries} entries or {s.rotate_bytes} bytes\n"
                )
            return 0
        if cmd == "list":
            attach_mirror(service)  # with a team server: what was resolved in its console is resolved here first
            if service.mirror is not None:
                service.mirror(service, "blocker", {})
            reply = service.list_blockers(args.session, every=args.all)
            if args.format == "json":
                stdout.write(json.dumps(reply.data, ensure_ascii=False) + "\n")
                return 0
            shown = len(reply.data["open"]) + len(reply.data["resolved"])
            others = len(store.blockers()) - shown
            head = "All sessions:" if args.all else f"Session {reply.data['session']}:"
            if others:  # `status` counts every session: say where the rest are
                head += f" ({others} more in other sessions: stoprule blockers list --all)"
            stdout.write(f"{head}\n{reply.text}\n")
            return 0
        if cmd == "export":
            stdout.write(service.export(args.format))
            return 0
        attach_mirror(service)  # the team server, when the project names one, sees it resolved
        hit = service.resolve(args.id, args.note)
    except StoreWriteError as exc:
        raise CommandError(str(exc), EXIT_NOT_OK) from None
    if hit is None:
        raise CommandError(f"no blocker {args.id!r} in {store.record_path}", EXIT_NOT_OK)
    stdout.write(f"resolved {hit.id}: {hit.question}\n")
    return 0


def _team_list(args: argparse.Namespace, stdout: IO[str], stderr: IO[str]) -> int:
    """``blockers list --server URL``: the team's open blockers (every one with ``--all``) across machines."""
    try:
        remote = Remote(args.server, os.environ.get(DEFAULT_TOKEN_ENV), 30.0)
        items = remote.call("GET", "/v1/blockers" + ("?all=1" if args.all else ""))["blockers"]
    except RemoteError as exc:
        raise CommandError(f"{args.server}: {exc}") from None
    if args.format == "json":
        stdout.write(json.dumps({"blockers": items}, ensure_ascii=False) + "\n")
        return 0
    lines = [f"Team blockers on {remote.url} ({len(items)}):"]
    lines += [
        f"  [{' ' if b.get('status', 'open') == 'open' else 'x'}] {b['project']}@{b['machine']} {b['id']} "
        f"[{b.get('category')}] {b.get('question')}" + (" (blocks progress)" if b.get("blocksProgress") else "")
        for b in items
    ]
    stdout.write("\n".join(lines) + "\n")
    return 0
