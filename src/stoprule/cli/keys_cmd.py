"""``stoprule keys``: the retry-token signing keys kept beside the ledger.

    stoprule keys list              key ids, when made, which one signs, which are retired
    stoprule keys rotate            add a signing key (and sign the ledger head with it); older keys keep verifying
    stoprule keys retire KEY_ID     delete a key's secret: tokens it signed are refused

``rotate`` and ``retire`` need an existing ledger (they never create one); ``rotate`` on a ledger
without a key file creates it. Secrets are never printed.
Exit 0 ok, 2 bad input (unknown key, the active key, no ledger, unusable files).
"""

from __future__ import annotations

import argparse
import json
from typing import IO

from stoprule.cli.common import config_error, ledger_target
from stoprule.cli.flags import add_ledger_flag
from stoprule.diagnostics import CommandError, ConfigError
from stoprule.ledger import keys
from stoprule.ledger.backend import keys_file, open_ledger
from stoprule.ledger.keys import KeyRing

__all__ = ["add_arguments", "run"]

HELP = "manage retry-token signing keys: list, rotate, retire"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = "Manage the retry-token signing keys beside the ledger. Exit 0 ok, 2 bad input."
    sub = p.add_subparsers(dest="keys_command", metavar="SUBCOMMAND")
    sub.required = True
    specs = (
        ("list", "key ids and their state (never the secrets)"),
        ("rotate", "add a new signing key; older keys keep verifying until retired"),
        ("retire", "retire a key: tokens it signed are refused from now on"),
    )
    for name, help_text in specs:
        sp = sub.add_parser(name, help=help_text, description=help_text)
        if name == "retire":
            sp.add_argument("key", metavar="KEY_ID")
        sp.add_argument("--format", choices=("pretty", "json"), default="pretty")
        add_ledger_flag(sp)


def _table(ring: KeyRing) -> str:
    if not ring.keys:
        return f"no keys yet in {ring.path} (made with the first recorded decision, or `stoprule keys rotate`)"
    lines = []
    for k in ring.keys.values():
        state = "active" if k.id == ring.active else ("retired " + k.retired if k.retired else "verifies")
        lines.append(f"{k.id}  created {k.created}  {state}")
    return "\n".join(lines)


def run(args: argparse.Namespace, stdin: IO[bytes], stdout: IO[str], stderr: IO[str]) -> int:
    try:
        path, _ = ledger_target(args.ledger)
    except ConfigError as exc:
        return config_error(exc, stderr)
    try:
        if args.keys_command == "list":
            ring = keys.load(keys_file(path))
            note = ""
        else:  # both need the ledger (it holds the head the keys sign), and neither creates one
            with open_ledger(path, create=False) as ledger:
                if args.keys_command == "rotate":
                    ring, key = keys.rotate(ledger)
                    note = f"{key.id} now signs new retry tokens; older keys keep verifying until retired"
                else:
                    ring, changed = keys.retire(ledger, args.key)
                    note = (
                        f"{args.key} retired: tokens it signed are refused"
                        if changed
                        else f"{args.key} was already retired"
                    )
    except OSError as exc:
        raise CommandError(str(exc)) from None
    if args.format == "json":
        out = {"path": ring.path, "active": ring.active, "keys": [k.to_dict() for k in ring.keys.values()]}
        stdout.write(json.dumps(out) + "\n")
    else:
        stdout.write((note + "\n" if note else "") + _table(ring) + "\n")
    return 0
