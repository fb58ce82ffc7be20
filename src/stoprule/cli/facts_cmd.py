"""``stoprule facts set|clear|show``: declare facts for a session (the ``state`` provider reads them).

    stoprule facts set [--session ID] FIELD=VALUE...   VALUE is JSON if it parses, else a string
    stoprule facts set [--session ID] --json FILE      a JSON object of fields (- : stdin)
    stoprule facts clear [--session ID] [FIELD...]     drop fields (none named: all)
    stoprule facts show [--session ID]                 what the hook would read, as JSON

Without ``--session`` (or ``$STOPRULE_SESSION``) facts hold for every session of the project.
Stored in the nearest ``.stoprule/`` (else the user state directory), ``state/facts/``,
normalised and redacted (a secret in a value is stored as ``[REDACTED]``).
"""

from __future__ import annotations

import argparse
import json
import os
from typing import IO, Any

from stoprule import codes
from stoprule._util.files import read_bounded
from stoprule._util.hints import closest
from stoprule._util.redact import redact
from stoprule._util.text import clean
from stoprule.agent.hook.declare import clear_facts, set_facts
from stoprule.agent.hook.runner import state_home
from stoprule.agent.hook.state import StateError, read_facts
from stoprule.cli.common import policy_error
from stoprule.diagnostics import CommandError, FactError, PolicyError
from stoprule.engine.packs import load_policy

__all__ = ["add_arguments", "run"]

MAX_FACTS_FILE_BYTES = 16 << 20


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = "Declare facts for a session (read by `stoprule hook`'s state provider)."
    sub = p.add_subparsers(dest="facts_command", metavar="SUBCOMMAND", required=True)
    for name, help_text in (
        ("set", "set fields"),
        ("clear", "drop fields (all when none named)"),
        ("show", "print the declared facts"),
    ):
        sp = sub.add_parser(name, help=help_text)
        sp.add_argument(
            "--session", metavar="ID", help="the harness's session id (default: $STOPRULE_SESSION; none: every session)"
        )
        if name == "set":
            sp.add_argument("fields", nargs="*", metavar="FIELD=VALUE")
            sp.add_argument("--json", metavar="FILE", help="a JSON object of fields (- reads stdin)")
            sp.add_argument(
                "--policy",
                metavar="PATH",
                help="the pack whose fact schema checks the values (default: the one the hook uses)",
            )
        elif name == "clear":
            sp.add_argument("fields", nargs="*", metavar="FIELD")


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _refused(policy: str | None, fields: dict[str, Any]) -> list[Exception]:
    """What the pack the hook would use says against each field, as ``eval`` says it (a declared
    value the schema refuses would make every stop of the session fail)."""
    schema = load_policy(policy).schema
    root = schema.root
    out: list[Exception] = []
    for name, value in fields.items():
        canonical = root.lookup.get(name)
        if canonical is None:
            best = closest(name, root.lookup)
            hint = f" (did you mean {root.lookup[best]!r}?)" if best else ""
            out.append(FactError(codes.FACT_UNKNOWN_FIELD, "not a field of the schema" + hint, name))
            continue
        try:
            schema.check_value(root.fields[canonical], value)
        except FactError as exc:
            sub = exc.field
            exc.field = canonical + (sub if sub.startswith("[") or not sub else "." + sub)
            out.append(exc)
    return out


def run(args: argparse.Namespace, stdin: IO[bytes], stdout: IO[str], stderr: IO[str]) -> int:
    session = args.session or os.environ.get("STOPRULE_SESSION") or None
    project, home = state_home(None, os.environ)
    try:
        if args.facts_command == "set":
            fields: dict[str, Any] = {}
            if args.json:
                # a FIFO or a huge file is refused unread
                raw = stdin.read() if args.json == "-" else read_bounded(args.json, MAX_FACTS_FILE_BYTES)
                obj = json.loads(raw)
                if not isinstance(obj, dict):
                    raise CommandError("--json must hold a JSON object")
                fields.update(obj)
            for item in args.fields:
                name, eq, value = item.partition("=")
                if not eq or not name:
                    raise CommandError(f"{redact(repr(item))} is not FIELD=VALUE")
                fields[name] = _value(value)
            if not fields:
                raise CommandError("nothing to set (give FIELD=VALUE or --json)")
            refused = _refused(args.policy, fields)
            if refused:
                stderr.writelines(f"stoprule: {e}\n" for e in refused)
                raise CommandError("nothing set (the pack's fact schema refuses these values)")
            set_facts(home, session, fields)
        elif args.facts_command == "clear":
            clear_facts(home, session, args.fields or None)
        stdout.write(json.dumps(read_facts(home, session), ensure_ascii=False, sort_keys=True) + "\n")
        if project is None:
            stderr.write(f"stoprule: no .stoprule/ found upward; facts are kept in {home}\n")
        return 0
    except PolicyError as exc:
        return policy_error(exc, getattr(args, "policy", None) or "the pack", stderr)
    except (StateError, OSError, ValueError) as exc:
        raise CommandError(redact(clean(str(exc)))) from None
