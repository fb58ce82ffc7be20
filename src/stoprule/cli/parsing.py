"""The ``stoprule`` command line as argparse parses it: a command line that is not its
command's usual one (:mod:`stoprule.cli.main` runs that without argparse), ``--help``,
``--version`` and usage errors.

On the cold path (tools/import_graph.py) of `stoprule eval`, and of the hook when its command
line holds more than its harness (``--event session-start``, ...): its imports stay few, light
and lazy.
"""

from __future__ import annotations

import sys

from stoprule._util import oslite as os
from stoprule.version import __version__

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable
    from typing import Any

__all__ = ["parser_for"]


def _formatter() -> type[argparse.HelpFormatter]:
    import argparse

    class _Formatter(argparse.HelpFormatter):
        """Help width from $COLUMNS: argparse's default imports shutil on every run (cold start)."""

        def __init__(self, prog: str) -> None:
            try:
                width = int(os.environ.get("COLUMNS", "100"))
            except ValueError:
                width = 100
            super().__init__(prog, width=max(width, 40) - 2)

    return _Formatter


def _version_action() -> type[argparse.Action]:
    """``--version``: the version and the evaluation backend (the engine imported only then)."""
    import argparse

    class _Version(argparse.Action):
        def __call__(self, parser: Any, namespace: object, values: object, option_string: str | None = None) -> None:
            from stoprule.engine.batches import describe_backend

            sys.stdout.write(f"stoprule {__version__}\n{describe_backend()}\n")
            parser.exit()

    return _Version


def parser_for(
    argv: list[str], commands: dict[str, tuple[str, str]], command_module: Callable[[str], Any]
) -> tuple[argparse.ArgumentParser, object | None]:
    """The parser of ``argv``: the program's, with the sub-parser of its command (``commands``:
    :data:`stoprule.cli.main.COMMANDS`, ``command_module`` its importer) wired in full, or every
    command's for usage and help; and the command's module (None for an unknown command)."""
    import argparse

    _Formatter = _formatter()
    p = argparse.ArgumentParser(
        prog="stoprule",
        formatter_class=_Formatter,
        description="Decide what an AI coding agent must do at a task boundary.",
    )
    version = _version_action()
    help_text = "show program's version number and exit"
    p.add_argument("-V", "--version", action=version, nargs=0, default=argparse.SUPPRESS, help=help_text)
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    chosen = next((a for a in argv if not a.startswith("-")), None)
    module = None
    # a known command builds only its own sub-parser (cold start); otherwise all, for usage and help
    for name in [chosen] if chosen in commands else commands:
        help_text = commands[name][1]
        sp = sub.add_parser(name, help=help_text, description=help_text, formatter_class=_Formatter)
        if name == chosen:  # only the command that runs is imported and wired in full
            module = command_module(name)
            module.add_arguments(sp)
    return p, module
