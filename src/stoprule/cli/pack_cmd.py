"""``stoprule pack path|init``: find the bundled default pack, or copy it into a project."""

from __future__ import annotations

import argparse
import os
import shutil
from typing import IO

from stoprule.diagnostics import CommandError
from stoprule.engine.packs import bundled_pack
from stoprule.project import STATE_DIR, ensure_state_dir

__all__ = ["add_arguments", "init_command", "run"]

DEFAULT_TARGET = os.path.join(STATE_DIR, "policies")


def init_command(target: str, force: bool, stdout: IO[str], stderr: IO[str]) -> int:
    """Copy the bundled pack (YAML files, editor schema, case files) to ``target``.

    An existing ``target`` is refused (copying twice never nests a second copy inside the
    first); ``force`` overwrites the files the bundled pack has and keeps any others.
    """

    source = bundled_pack()
    if os.path.exists(target) and not force:
        raise CommandError(f"{target} already exists; edit it, or pass --force to overwrite its bundled files")
    try:
        parent = os.path.dirname(os.path.abspath(target))
        if os.path.basename(parent) == STATE_DIR:  # a project's .stoprule/: made with its .gitignore
            ensure_state_dir(parent)
        shutil.copytree(source, target, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__", ".*"))
    except OSError as exc:
        raise CommandError(f"cannot copy the pack to {target}: {exc}") from None
    stdout.write(f"copied the default pack to {target}; `stoprule check` now uses it\n")
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = "Print where the bundled default pack is, or copy it into this project to edit."
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    sub.add_parser("path", help="print the bundled default pack's directory")
    init = sub.add_parser("init", help=f"copy the bundled pack to DIR (default {DEFAULT_TARGET})")
    init.add_argument("dir", nargs="?", default=DEFAULT_TARGET, metavar="DIR")
    init.add_argument("--force", action="store_true", help="overwrite the bundled pack's files in an existing DIR")


def run(args: argparse.Namespace, stdin: object, stdout: IO[str], stderr: IO[str]) -> int:
    if args.action == "path":
        stdout.write(f"{bundled_pack()}\n")
        return 0
    return init_command(args.dir, args.force, stdout, stderr)
