"""What the commands share: common flags, the pretty verdict, and how errors are reported.

Errors, one way in every command and format (``docs/cli.md`` § Errors). Standard output
carries a command's product in the chosen format; standard error is text for people.

- a pack that fails to compile (:func:`policy_error`), and other input described by
  diagnostics (:func:`diagnostics_error`: case files, an analysis limit): exit 2, nothing
  on stdout; on stderr one ``file:line:col: code: message (at path)`` line each, then
  ``stoprule: N error(s) in PACK``. (``stoprule check``, whose product *is* the
  diagnostics, prints them on stdout in its ``--format`` instead.)
- a fact that cannot be evaluated (:func:`fact_error`): an error object (or ``ERROR:``
  line) in the fact's output slot, so output lines stay aligned with input lines, and
  the reason on stderr.
- anything else (unreadable file, usage, ledger): one ``stoprule: ...`` line on stderr.

On the cold-start path of ``stoprule eval``: imports only what that path already loads.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

import os

from stoprule._util.jsonout import dumps
from stoprule.diagnostics import EXIT_INVALID, StopruleError

__all__ = [
    "add_jobs_flag",
    "add_ledger_flag",
    "json_line",
    "line_safe",
    "add_policy_flags",
    "config_error",
    "diagnostics_error",
    "fact_error",
    "handled",
    "input_name",
    "ledger_target",
    "policy_error",
    "render_verdict",
]

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable
    from typing import IO

    from stoprule.config.reader import Settings
    from stoprule.diagnostics import EvaluationError, PolicyError
    from stoprule.engine.evaluator import Verdict
    from stoprule.ledger.errors import LedgerError


def add_policy_flags(
    sp: argparse.ArgumentParser, default_format: str = "pretty", formats: tuple[str, ...] = ()
) -> None:
    """The flags every pack-reading command shares: ``--policy`` and ``--format``."""
    sp.add_argument(
        "--policy",
        metavar="PATH",
        help="policy pack directory (default: $STOPRULE_POLICY, ./.stoprule/policies/, then the bundled pack)",
    )
    sp.add_argument(
        "--format",
        choices=formats or ("json", "pretty"),
        default=default_format,
        help=f"output format (default: {default_format})",
    )


def add_jobs_flag(p: argparse.ArgumentParser, help_text: str) -> None:
    """``--jobs N`` / ``-j N`` (``eval``, ``audit --corpus``): see :mod:`stoprule.facts.batch`."""
    p.add_argument("--jobs", "-j", type=int, default=1, metavar="N", help=help_text)


def add_backend_flag(p: argparse.ArgumentParser, solver: str) -> None:
    """``--backend auto|exhaustive|solver`` (``audit``, ``diff``); ``solver`` says what it asks."""
    p.add_argument(
        "--backend",
        choices=["auto", "exhaustive", "solver"],
        default="auto",
        help=f"exhaustive: exact shares and regions (small packs); solver: {solver} (any size); "
        "auto (default): exhaustive when it finishes within a few seconds, else the solver",
    )


def add_ledger_flag(sp: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """``--ledger PATH``, shared by ``eval --run``, ``log`` and ``keys``."""
    sp.add_argument(
        "--ledger",
        metavar="PATH",
        help="ledger file or postgresql:// URL (default: $STOPRULE_LEDGER, then `ledger: {url: ...}` in "
        ".stoprule/config.yaml, then .stoprule/ledger.db; .stoprule/ found upward)",
    )


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


# what splits a line besides "\n" for str.splitlines and for JavaScript/JSON-lines readers that JSON leaves raw
# when it does not escape non-ASCII (every other one is a control character, which JSON always escapes), and lone
# surrogates, which UTF-8 cannot encode at all (the table is made on first use: the stop hook never needs it)
_LINE_UNSAFE: dict[int, str] = {}


def line_safe(text: str) -> str:
    """JSON text with U+0085, U+2028, U+2029 and lone surrogates written as ``\\uXXXX`` escapes.

    Each may only occur inside a JSON string, where the escape means the same character: the
    result parses to the same value, is valid UTF-8, and is one line for every line splitter.
    """
    if text.isascii():
        return text
    if not _LINE_UNSAFE:
        _LINE_UNSAFE.update({c: f"\\u{c:04x}" for c in (0x85, 0x2028, 0x2029, *range(0xD800, 0xE000))})
    return text.translate(_LINE_UNSAFE)


def json_line(value: object) -> str:
    """One NDJSON record (no newline): UTF-8 kept readable, nothing that a reader could split or choke on."""
    return line_safe(dumps(value, ensure_ascii=False))


def input_name(file: str) -> str:
    """How messages name an input file (``-`` is ``<stdin>``)."""
    return file if file != "-" else "<stdin>"


def render_verdict(v: Verdict, paint: Callable[[str, str], str] | None = None) -> str:
    """A verdict as text for people (``--format pretty``); ``paint`` colours its mark (see cli/style.py)."""
    mark = "OK" if v.ok else "NOT OK"
    if paint is not None:
        mark = paint(mark, "bold green" if v.ok else "bold red")
    lines = [f"{mark}: {v.verdict} / {v.reason}  (rule {v.rule}; stop: {v.stop})", f"  {v.message}"]
    if v.requires_user_review:
        lines.append(f"  review reason: {v.review_reason}")
    if v.high_risk_stop:
        lines.append(f"  high-risk stop: {v.high_risk_stop}")
    lines.append("  matched: " + ", ".join(m.rule for m in v.matched))
    lines.append(f"  policy: {v.policy}")
    return "\n".join(lines)


def fact_error(exc: EvaluationError | LedgerError, where: str, fmt: str, stdout: IO[str], stderr: IO[str]) -> None:
    """A refused fact (or retry token): the reason on stderr, once; with ``--format json`` also an
    error object in the fact's output slot (one output line per input line)."""
    stderr.write(f"stoprule: {where}{exc}\n")
    if fmt == "json":
        stdout.write(dumps({"error": exc.to_dict()}) + "\n")


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
