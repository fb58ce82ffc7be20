"""``stoprule`` entry point: one table of commands, each a module with two functions.

A command module defines ``HELP`` (one line), ``add_arguments(parser)`` and
``run(args, stdin, stdout, stderr) -> int``; the module is imported only when its
command runs (the CLI's cold start). Adding a command is one module and one row.
A module may also define ``parse_simple(argv) -> namespace | None``: its most common
command line (the words after the command) parsed without argparse, as argparse would
(None: anything else, which argparse then parses).

Errors have one handler (:func:`stoprule.cli.common.handled`, around every command here and
around each run of ``--watch``): a command raises a :class:`~stoprule.diagnostics.StopruleError`
(:class:`~stoprule.diagnostics.CommandError` for its own refusals), and the handler prints its
:meth:`~stoprule.diagnostics.StopruleError.report` on standard error and returns its ``exit_code``.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

import sys

from stoprule._util import oslite as os

__all__ = ["COMMANDS", "EXIT_AT_ONCE", "command_module", "main", "run"]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import IO, Any

# name -> (module, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "eval": ("eval_cmd", "evaluate one JSON fact or NDJSON facts"),
    "check": ("check_cmd", "validate and compile a policy pack"),
    "test": ("test_cmd", "run a pack's case files; --coverage for rule, condition and MC/DC coverage"),
    "explain": ("explain_cmd", "explain why a fact gets its verdict, rule by rule"),
    "schema": ("schema_cmd", "print the JSON Schema of policy files or of the pack's facts"),
    "audit": ("audit_cmd", "find gaps, conflicts, dead rules and unused declarations; map verdicts over the domain"),
    "diff": ("diff_cmd", "compare two packs: where verdicts change, and which declarations changed"),
    "log": ("log_cmd", "read the decision ledger: status, show, runs, export, verify"),
    "keys": ("keys_cmd", "manage retry-token signing keys: list, rotate, retire"),
    "pack": ("pack_cmd", "where the bundled pack is (path), or copy it into this project to edit (init)"),
    "hook": ("hook_cmd", "be an agent harness's stop hook: its payload in, its answer out (always exit 0)"),
    "guard": ("guard_cmd", "be a harness's pre-tool hook refusing the agent's tampering with the gate; on|off|status"),
    "init": ("init_cmd", "wire stoprule into an agent harness's hook config and create .stoprule/config.yaml"),
    "doctor": ("doctor_cmd", "check the hook wiring of each configured harness and run one synthetic stop"),
    "facts": ("facts_cmd", "declare facts for a session (set, clear, show) for the hook's state provider"),
    "replay": ("replay_cmd", "what a policy would have decided at each stop of recorded transcripts"),
    "blocker": ("blocker_cmd", "log a blocker (same fields as the MCP blocker tool)"),
    "blockers": ("blockers_cmd", "the project's blockers: on, off, status, list, export, resolve ID"),
    "report": ("report_cmd", "show a task's blocked report"),
    "mcp": ("mcp_cmd", "serve the blocker tools over MCP stdio (blocker, report_status, ...)"),
    "serve": ("serve_cmd", "serve decisions over HTTP: evaluate, batch, hooks, policy, metrics"),
    "console": ("console_cmd", "this project's runs, stops, blockers and policy in a browser (loopback)"),
    "inspect": ("inspect_cmd", "show a pack's rules, priorities, verdicts, sets, stops, fact schema and layering"),
    "completion": ("completion_cmd", "print a shell completion script: bash, zsh or fish"),
    "fmt": ("fmt_cmd", "rewrite pack and case files in the canonical layout, comments kept (--check for CI)"),
    "plugin": ("plugin_cmd", "write stoprule as a harness plugin or extension, for the harness to install"),
    "resident": ("resident_cmd", "the user's resident process deciding stops warm: serve, status, stop"),
}


# commands whose process ends when their output is flushed (see main): the stop hook
EXIT_AT_ONCE = frozenset({"hook", "guard"})


def command_module(name: str) -> Any:
    """The module of command ``name`` (imported now: the table names modules, the cold path imports one;
    ``__import__`` rather than ``importlib``, which a start would pay for)."""
    module = f"stoprule.cli.{COMMANDS[name][0]}"
    __import__(module)
    return sys.modules[module]


def run(argv: list[str], stdin: IO[bytes], stdout: IO[str], stderr: IO[str]) -> int:
    """Run one command with the given streams; returns the exit code (a
    :class:`~stoprule.diagnostics.StopruleError` it raises: its report on ``stderr``, its code)."""
    if argv[:1] == ["hook"]:  # the user's resident process decides it, when one is listening
        from stoprule.cli.resident import forward

        code, stdin = forward(argv, stdin, stdout, stderr)
        if code is not None:
            return code
    from stoprule.cli.common import handled  # (here: the resident process's client needs none of it)

    return handled(lambda: _run(argv, stdin, stdout, stderr), stderr)


def _run(argv: list[str], stdin: IO[bytes], stdout: IO[str], stderr: IO[str]) -> int:
    if argv and argv[0] in COMMANDS:
        command: Any = command_module(argv[0])
        simple = getattr(command, "parse_simple", None)
        args = simple(argv[1:]) if simple is not None else None
        if args is not None:  # the command's usual line, argparse not needed (cold start)
            return int(command.run(args, stdin, stdout, stderr))
    from stoprule.cli.parsing import parser_for

    parser, module = parser_for(argv, COMMANDS, command_module)
    if not argv:  # bare `stoprule`: what it can do
        parser.print_help(stdout)
        return 0
    # argparse writes --help, --version and usage errors to sys.stdout / sys.stderr: the given streams
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = stdout, stderr
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on usage errors, 0 on --help
        return int(exc.code or 0)
    finally:
        sys.stdout, sys.stderr = saved
    assert module is not None
    command = module
    if argv[0] not in ("eval", "hook"):  # (their lines change nothing)
        from stoprule.cli.in_session import refuse_in_session

        refuse_in_session(argv)
    return int(command.run(args, stdin, stdout, stderr))


def main(argv: list[str] | None = None) -> int:
    """The console script: :func:`run` on ``sys.argv`` (or ``argv``) with the process's streams.

    As the process's entry (``argv`` None), a command in :data:`EXIT_AT_ONCE` runs without the
    cyclic garbage collector (a short process: the collections its imports would trigger free
    nothing it keeps) and ends the process as soon as its output is flushed, unless a tracer or
    profiler is attached: the interpreter's teardown (every module freed, a last collection:
    ~3 ms) does nothing for it (its files are closed, its log written unbuffered)."""
    args = sys.argv[1:] if argv is None else argv
    at_once = argv is None and args[:1] and args[0] in EXIT_AT_ONCE and sys.gettrace() is sys.getprofile() is None
    if at_once:
        import gc

        gc.disable()
    try:
        code = run(args, sys.stdin.buffer, sys.stdout, sys.stderr)
        if at_once:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
        return code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
