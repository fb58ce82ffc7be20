"""``stoprule check``: validate and compile a pack, print diagnostics or a summary."""

from __future__ import annotations

import argparse
import json
import os
from typing import IO

from stoprule.cli.flags import add_policy_flags
from stoprule.cli.style import painter
from stoprule.cli.watch import watch
from stoprule.diagnostics import CommandError, PolicyError
from stoprule.engine.build import compile_pack
from stoprule.engine.packs import select_pack
from stoprule.language.files import layers
from stoprule.project import find_project

__all__ = ["add_arguments", "check_command", "run"]


def check_command(policy: str | None, fmt: str, stdout: IO[str], stderr: IO[str]) -> int:
    """Compile the selected pack; print a summary (exit 0) or its diagnostics (exit 2)."""
    root = select_pack(policy)
    try:
        ctx = compile_pack(root)
    except PolicyError as exc:  # the diagnostics are this command's product: on stdout
        if fmt == "json":
            diags = [d.to_dict() for d in exc.diagnostics]
            stdout.write(json.dumps({"ok": False, "pack": str(root), "total": exc.total, "diagnostics": diags}) + "\n")
        else:
            stdout.write(exc.render() + "\n")
        raise CommandError(f"{exc.total} error(s) in {root}") from None
    c = ctx.compiled
    assert c is not None

    project = find_project()
    summary = {
        "ok": True,
        "pack": str(root),
        "project": project,
        "name": c.name,
        "files": len(c.files),
        "rules": len(c.rules),
        "verdicts": len(c.verdicts),
        "high_risk_stops": len(c.stops),
        "rulesets": len(c.rulesets),
        "digest": c.digest,
    }
    if fmt == "json":
        stdout.write(json.dumps(summary) + "\n")
    else:
        ok = painter(stdout)("ok", "bold green")
        stdout.write(
            f"{ok}: {c.name} ({root}): {summary['files']} files, {summary['rules']} rules, "
            f"{summary['verdicts']} verdict kinds, {summary['high_risk_stops']} high-risk stops, "
            f"{c.digest}\n"
        )
        if project:  # which project state the hook and the ledger use from here
            stdout.write(f"project state: {project}\n")

        used, shadowed, glob = layers(root)
        if glob is not None:  # `stoprule inspect layers` tells more
            names = ", ".join(os.path.basename(p) for p in used) or "no file"
            hidden = f"; shadowed: {', '.join(os.path.basename(p) for p in shadowed)}" if shadowed else ""
            stdout.write(f"global pack: {glob} (layered under it: {names}{hidden})\n")
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = "Validate and compile a pack; print diagnostics. Exit 0 clean, 2 on any error."
    add_policy_flags(p, default_format="pretty")
    p.add_argument("--watch", "-w", action="store_true", help="check again whenever a pack file changes (Ctrl-C stops)")


def run(args: argparse.Namespace, stdin: object, stdout: IO[str], stderr: IO[str]) -> int:
    if args.watch:
        return watch(
            [str(select_pack(args.policy))], lambda: check_command(args.policy, args.format, stdout, stderr), stderr
        )
    return check_command(args.policy, args.format, stdout, stderr)
