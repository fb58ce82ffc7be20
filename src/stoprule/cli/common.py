"""What the commands share: how errors are reported, and which ledger a command opens (the
flags they share: :mod:`stoprule.cli.flags`; the pretty verdict and output lines:
:mod:`stoprule.cli.output`).

Errors, one way in every command and format (``docs/cli.md`` § Errors). Standard output
carries a command's product in the chosen format; standard error is text for people.

- a pack that fails to compile (:func:`policy_error`), and other input described by
  diagnostics (:func:`diagnostics_error`: case files, an analysis limit): exit 2, nothing
  on stdout; on stderr one ``file:line:col: code: message (at path)`` line each, then
  ``stoprule: N error(s) in PACK``. (``stoprule check``, whose product *is* the
  diagnostics, prints them on stdout in its ``--format`` instead.)
- a fact that cannot be evaluated (:func:`stoprule.cli.output.fact_error`): an error object (or ``ERROR:``
  line) in the fact's output slot, so output lines stay aligned with input lines, and
  the reason on stderr.
- anything else (unreadable file, usage, ledger): one ``stoprule: ...`` line on stderr.

On the cold-start path of ``stoprule eval``: imports only what that path already loads.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

from stoprule._util import oslite as os
from stoprule.diagnostics import EXIT_INVALID, StopruleError

__all__ = ["config_error", "diagnostics_error", "handled", "ledger_target", "policy_error"]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import IO

    from stoprule.config.reader import Settings
    from stoprule.diagnostics import PolicyError


def ledger_target(
    explicit: str | None, start: str | None = None, *, settings: Settings | None = None
) -> tuple[str, bool]:
    """The ledger to open and whether it is the default file: ``--ledger``, else ``$STOPRULE_LEDGER``,
    else ``ledger.url`` in the nearest ``.stoprule/config.yaml`` (a relative path is relative to that
    directory), else ``ledger.db`` in it (``./.stoprule/ledger.db`` without one). ``start``: where the
    search for ``.stoprule/`` begins (default: the working directory); ``settings``: that config's
    settings, already read (the stop hook's).

    Raises :class:`~stoprule.diagnostics.ConfigError` (file, line, field) for a bad config."""
    if explicit:
        return explicit, False
    if os.environ.get("STOPRULE_LEDGER"):
        return os.environ["STOPRULE_LEDGER"], False
    from stoprule.project import CONFIG_FILE, find_project

    project = find_project(start)
    if project is None:
        from stoprule.ledger.store import DEFAULT_PATH

        return DEFAULT_PATH, True
    if settings is None:
        from stoprule.config.reader import read_settings

        settings = read_settings(os.path.join(project, CONFIG_FILE))
    url = settings.ledger.get("url")
    if url:
        from stoprule.ledger.backend import is_url

        return (url if is_url(url) else os.path.join(project, url)), False
    return os.path.join(project, "ledger.db"), True


def handled(command: Callable[[], int], stderr: IO[str]) -> int:
    """The exit code of ``command()``; a :class:`~stoprule.diagnostics.StopruleError` it raises is
    the one way errors end a command: its report on ``stderr``, its ``exit_code`` returned."""
    try:
        return command()
    except StopruleError as exc:
        stderr.write(exc.report() + "\n")
        return exc.exit_code


def diagnostics_error(exc: PolicyError, summary: str, stderr: IO[str]) -> int:
    """Bad input described by diagnostics: one line each, then ``stoprule: SUMMARY``, on stderr; returns 2."""
    stderr.write(f"{exc.render()}\nstoprule: {summary}\n")
    return EXIT_INVALID


def config_error(exc: PolicyError, stderr: IO[str]) -> int:
    """A ``.stoprule/config.yaml`` that does not validate: its diagnostics (file:line:col, field) on stderr; 2."""
    return diagnostics_error(exc, f"{exc.total} error(s) in the project's config", stderr)


def policy_error(exc: PolicyError, pack: str | os.PathLike[str], stderr: IO[str]) -> int:
    """A pack that failed to load or compile: its diagnostics and ``N error(s) in PACK`` on stderr; returns 2."""
    return diagnostics_error(exc, f"{exc.total} error(s) in {os.fspath(pack)}", stderr)
