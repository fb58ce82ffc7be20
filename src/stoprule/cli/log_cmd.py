"""``stoprule log``: read the decision ledger; and the recording side of ``stoprule eval --run``.

    stoprule log status RUN             the run's tip, verdict and counters (one indexed lookup)
    stoprule log show RUN               the run's DAG: tree (pretty: and the agent's refused attempts), JSON, or Mermaid
    stoprule log runs                   recent runs with their status
    stoprule log export [--run RUN]     NDJSON records (with --facts-only: facts `stoprule eval` reads)
    stoprule log verify [RUN]           recompute hash chains and the signed ledger head; exit 1 naming what broke
    stoprule log import [FILE]          append `log export` records to another ledger (SQLite <-> PostgreSQL)
    stoprule log upgrade                bring a ledger made by an older stoprule to the current schema

The read-only commands never create anything: where there is no ledger they say so (exit 2).
Exit codes: 0 ok, 1 a chain is broken (verify), 2 bad input (unknown run, no or unusable ledger).
"""

from __future__ import annotations

import argparse
import json
import os
from typing import IO, Any

from stoprule.cli.common import config_error, ledger_target, policy_error
from stoprule.cli.flags import add_ledger_flag
from stoprule.cli.output import fact_error, input_name, json_line, line_safe, render_verdict
from stoprule.cli.progress import Bar
from stoprule.config.fields import DEFAULT_FIELDS
from stoprule.diagnostics import (
    EXIT_INVALID,
    EXIT_NOT_OK,
    EXIT_OK,
    CommandError,
    ConfigError,
    EvaluationError,
    PolicyError,
)
from stoprule.engine.packs import load_policy, select_pack
from stoprule.facts.parse import parse_facts, read_input
from stoprule.ledger.backend import open_ledger
from stoprule.ledger.errors import LedgerError
from stoprule.ledger.events import verdict_from_event
from stoprule.ledger.protocols import LedgerBackend
from stoprule.ledger.recorder import Outcome, Recorder
from stoprule.ledger.render import run_json, run_mermaid, run_tree, runs_table, status_line
from stoprule.ledger.store import TIP, check_run_id, corrupt
from stoprule.ledger.transfer import import_records
from stoprule.ledger.verification import verify
from stoprule.project import ensure_state_dir

__all__ = ["add_arguments", "record_command", "run"]

HELP = "read the decision ledger: status, show, runs, export, verify"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = "Read the decision ledger. Exit 0 ok, 1 a broken chain (verify), 2 bad input."
    sub = p.add_subparsers(dest="log_command", metavar="SUBCOMMAND")
    sub.required = True

    sp = sub.add_parser("status", help="a run's status: tip node, verdict, decisions, attempts")
    sp.add_argument("run", metavar="RUN")
    sp.add_argument("--format", choices=("pretty", "json"), default="pretty")
    add_ledger_flag(sp)

    sp = sub.add_parser("show", help="a run's DAG as a tree, JSON or Mermaid")
    sp.add_argument("run", metavar="RUN")
    sp.add_argument("--format", choices=("pretty", "json", "mermaid"), default="pretty")
    add_ledger_flag(sp)

    sp = sub.add_parser("runs", help="recent runs with their status")
    sp.add_argument("--limit", type=int, default=20, metavar="N", help="at most N runs (0: all; default 20)")
    sp.add_argument("--format", choices=("pretty", "json"), default="pretty")
    add_ledger_flag(sp)

    sp = sub.add_parser("export", help="every decision as NDJSON, in append order")
    sp.add_argument("--run", metavar="RUN", help="only this run")
    sp.add_argument("--facts-only", action="store_true", help="only the facts, one per line (input for `eval`)")
    add_ledger_flag(sp)

    sp = sub.add_parser("verify", help="recompute hash chains and the signed ledger head; name what broke")
    sp.add_argument(
        "run", metavar="RUN", nargs="?", help="only this run's chain (default: every run and the ledger head)"
    )
    sp.add_argument("--format", choices=("pretty", "json"), default="pretty")
    sp.add_argument("--quiet", "-q", action="store_true", help="no progress bar on a terminal")
    add_ledger_flag(sp)

    sp = sub.add_parser("import", help="append exported records (`log export`) to this ledger, exactly as recorded")
    sp.add_argument("file", nargs="?", default="-", metavar="FILE", help="NDJSON from `log export` (default: stdin)")
    add_ledger_flag(sp)

    sp = sub.add_parser("upgrade", help="upgrade a ledger made by an older stoprule (checks every run first)")
    add_ledger_flag(sp)


def _open(explicit: str | None, *, write: bool = False) -> LedgerBackend:
    path, default = ledger_target(explicit)
    if write and default:  # the project's .stoprule/, made with its .gitignore (the ledger and keys stay out of git)
        ensure_state_dir(os.path.dirname(os.path.abspath(path)))
    return open_ledger(path, create=write, readonly=not write)


def _dump(value: Any) -> str:
    return json_line(value)


def _status(ledger: LedgerBackend, args: argparse.Namespace, stdout: IO[str]) -> int:
    st = ledger.require(args.run)
    stdout.write((_dump(st.to_dict()) if args.format == "json" else status_line(st)) + "\n")
    return 0


def _show(ledger: LedgerBackend, args: argparse.Namespace, stdout: IO[str]) -> int:
    st = ledger.require(args.run)
    nodes = ledger.nodes(args.run)
    if args.format == "json":
        stdout.write(_dump(run_json(st, nodes)) + "\n")
    elif args.format == "mermaid":
        stdout.write(run_mermaid(st, nodes) + "\n")
    else:
        stdout.write(run_tree(st, nodes) + "\n")
        _attempts(ledger, args.run, stdout)
    return 0


def _attempts(ledger: LedgerBackend, run: str, stdout: IO[str]) -> None:
    """The agent's refused attempts the run's stops saw (each stop's fact holds the session's so
    far), each once, with the first node that saw it."""
    field = DEFAULT_FIELDS["guard.attempts"]
    if field is None:  # the pack does not record them
        return
    first: dict[str, str] = {}
    for node, fact in ledger.records(run):
        if field not in fact:  # (cheap: most facts have none)
            continue
        try:
            found = json.loads(fact).get(field)
        except (TypeError, ValueError, AttributeError):
            continue
        for attempt in found if isinstance(found, list) else []:
            first.setdefault(str(attempt), node.node)
    if first:
        stdout.write(f"refused attempts by the agent ({len(first)}):\n")
        stdout.writelines(f"  {node}: {attempt}\n" for attempt, node in first.items())


def _runs(ledger: LedgerBackend, args: argparse.Namespace, stdout: IO[str]) -> int:
    rows = ledger.runs(args.limit if args.limit > 0 else None)
    if args.format == "json":
        stdout.write(_dump([r.to_dict() for r in rows]) + "\n")
    else:
        stdout.write(runs_table(rows) + "\n")
    return 0


def _export(ledger: LedgerBackend, args: argparse.Namespace, stdout: IO[str]) -> int:
    if args.run is not None:
        ledger.require(args.run)
    for node, fact in ledger.records(args.run):
        if args.facts_only:
            stdout.write(line_safe(fact) + "\n")  # the stored canonical JSON, one line for every reader
            continue
        b = node.body
        rec = {"run": node.run, "seq": node.seq, **node.to_dict()}
        rec["fact_digest"] = rec.pop("fact")
        envelope = verdict_from_event(b).to_dict()  # as recorded; matched possibly truncated
        rec.update(envelope=envelope, matched_total=b["matched_total"], matched_cut=b["matched_cut"])
        try:
            rec["fact"] = json.loads(fact)
        except (TypeError, ValueError):
            damaged = f"the stored fact {node.fact} of run {node.run!r} node {node.node} is damaged"
            raise corrupt(ledger.path, damaged) from None
        stdout.write(_dump(rec) + "\n")
    return 0


def _verify(ledger: LedgerBackend, args: argparse.Namespace, stdout: IO[str], stderr: IO[str]) -> int:
    with Bar(stderr, "verify", unit="runs", quiet=args.quiet) as bar:
        report = verify(ledger, args.run, bar)
    if args.format == "json":
        stdout.write(_dump(report.to_dict()) + "\n")
    elif report.ok:
        head = report.head
        signed = ""
        if head:
            anchors = f" (anchor {head['anchors']})" if "anchors" in head else ""
            signed = f"; ledger head {head['hash']}{anchors} over {head['events']} event(s), signed by {head['key']}"
        stdout.write(f"ok: {report.runs} run(s), {report.events} event(s); every hash chain verifies{signed}\n")
        if report.unanchored:
            stdout.write(
                f"note: {report.unanchored} run(s) written since the last anchor (anchored within the "
                "anchor interval; until then a whole run removed would not be seen)\n"
            )
    else:
        for br in report.breaks:
            stdout.write(f"BROKEN: {br.format()}\n")
    if not report.ok:
        runs = sum(br.run is not None for br in report.breaks)
        wide = len(report.breaks) - runs
        stderr.write(
            f"stoprule: {runs} of {report.runs} run(s) have a broken hash chain"
            + (f"; {wide} ledger-wide finding(s)" if wide else "")
            + "\n"
        )
    return EXIT_OK if report.ok else EXIT_NOT_OK


def _upgrade(ledger: LedgerBackend, args: argparse.Namespace, stdout: IO[str]) -> int:
    if ledger.upgraded_from is not None:
        stdout.write(f"{ledger.path}: upgraded from ledger schema {ledger.upgraded_from} to {ledger.schema}\n")
    else:
        stdout.write(f"{ledger.path}: already at ledger schema {ledger.schema}; nothing to do\n")
    return 0


def _import(ledger: LedgerBackend, args: argparse.Namespace, stdin: IO[bytes], stdout: IO[str], stderr: IO[str]) -> int:
    data = read_input(args.file, stdin, stderr)
    if data is None:
        return EXIT_INVALID
    runs, events = import_records(ledger, data, input_name(args.file))
    stdout.write(f"imported {events} decision(s) of {runs} run(s) into {ledger.path}\n")
    return 0


_ACTIONS = {"status": _status, "show": _show, "runs": _runs, "export": _export}


def run(args: argparse.Namespace, stdin: IO[bytes], stdout: IO[str], stderr: IO[str]) -> int:
    try:
        if args.log_command == "upgrade":  # writes, but never creates a ledger
            with open_ledger(ledger_target(args.ledger)[0], create=False) as ledger:
                return _upgrade(ledger, args, stdout)
        if args.log_command == "import":
            with _open(args.ledger, write=True) as ledger:
                return _import(ledger, args, stdin, stdout, stderr)
        with _open(args.ledger) as ledger:
            if args.log_command == "verify":
                return _verify(ledger, args, stdout, stderr)
            return _ACTIONS[args.log_command](ledger, args, stdout)
    except ConfigError as exc:
        return config_error(exc, stderr)


# ---------------------------------------------------------------------- stoprule eval --run


def _ledger_lines(env: dict[str, Any]) -> str:
    kind = env["kind"] + (f" ({'retryable' if env['retryable'] else 'terminal'})" if not env["ok"] else "")
    parent = f", parent {env['parent']}" if env["parent"] else ""
    replayed = "; replayed: nothing appended" if env.get("replayed") else ""
    out = f"  ledger: run {env['run']}, node {env['node']} {kind}, attempt {env['attempt']}{parent}{replayed}"
    if "retry_token" in env:
        out += f"\n  retry token: {env['retry_token']}"
    return out


def _emit(outcome: Outcome, fmt: str, stdout: IO[str]) -> None:
    env = outcome.envelope()
    if fmt == "json":
        stdout.write(json.dumps(env) + "\n")  # ASCII: every non-ASCII character escaped
    else:
        stdout.write(render_verdict(outcome.verdict) + "\n" + _ledger_lines(env) + "\n")


def _misuse(args: argparse.Namespace) -> str | None:
    """What is wrong with the combination of ledger flags, if anything."""
    if args.run is None:
        flags = (("--parent", args.parent), ("--retry", args.retry), ("--checkpoint", args.checkpoint),
                 ("--ledger", args.ledger))  # fmt: skip
        given = next(f for f, v in flags if v is not None and v is not False)
        return f"{given} needs --run RUN_ID (without --run eval records nothing)"
    if args.retry is not None and args.parent is not None:
        return "--retry and --parent cannot be combined: a retry's parent is the node its token names"

    try:
        check_run_id(args.run)
    except LedgerError as exc:
        return str(exc)
    return None


def _retry(
    recorder: Recorder, args: argparse.Namespace, items: list[Any], name: str, stdout: IO[str], stderr: IO[str]
) -> int:
    line, fact = items[0]
    try:
        if isinstance(fact, EvaluationError):
            raise fact
        outcome = recorder.retry(args.run, args.retry, fact, checkpoint=args.checkpoint)
    except EvaluationError as exc:
        exc.line = exc.line if exc.line is not None else line
        fact_error(exc, f"{name}: ", args.format, stdout, stderr)
        return EXIT_INVALID
    _emit(outcome, args.format, stdout)
    return EXIT_OK if outcome.verdict.ok else EXIT_NOT_OK


def _batch(
    recorder: Recorder, args: argparse.Namespace, items: list[Any], name: str, stdout: IO[str], stderr: IO[str]
) -> int:
    code = 0
    parent = TIP if args.parent is None else args.parent
    results = recorder.record_many(args.run, [fact for _, fact in items], parent=parent, checkpoint=args.checkpoint)
    for (line, _), result in zip(items, results, strict=False):  # results come once their transaction committed
        if isinstance(result, EvaluationError):
            result.line = result.line if result.line is not None else line
            fact_error(result, f"{name}: ", args.format, stdout, stderr)
            code = EXIT_INVALID
            continue
        if not result.verdict.ok and code == 0:
            code = EXIT_NOT_OK
        _emit(result, args.format, stdout)
    return code


def record_command(args: argparse.Namespace, stdin: IO[bytes], stdout: IO[str], stderr: IO[str]) -> int:
    """``stoprule eval --run RUN [--parent N | --retry TOKEN] [--checkpoint] [--ledger PATH] FACT``."""
    problem = _misuse(args)
    if problem:
        raise CommandError(f"{problem}")
    if len(args.file) != 1:
        raise CommandError("recording (--run) reads one input at a time")
    name = input_name(args.file[0])
    data = read_input(args.file[0], stdin, stderr)
    if data is None:
        return EXIT_INVALID
    items = parse_facts(data)
    if args.retry is not None and len(items) != 1:
        raise CommandError(f"--retry takes exactly one fact, {name} holds {len(items)}")
    if all(isinstance(fact, EvaluationError) for _, fact in items):  # nothing to record: do not touch the ledger
        for _, err in items:
            fact_error(err, f"{name}: ", args.format, stdout, stderr)
        return EXIT_INVALID

    try:
        evaluator = load_policy(args.policy)
    except PolicyError as exc:
        return policy_error(exc, select_pack(args.policy), stderr)

    try:
        with _open(args.ledger, write=True) as ledger:
            recorder = Recorder(ledger, evaluator)
            if args.retry is not None:
                return _retry(recorder, args, items, name, stdout, stderr)
            return _batch(recorder, args, items, name, stdout, stderr)
    except LedgerError as exc:
        fact_error(exc, "", args.format, stdout, stderr)
        return EXIT_INVALID
    except ConfigError as exc:
        return config_error(exc, stderr)
    except OSError as exc:  # making ./.stoprule/ for the default ledger
        raise CommandError(f"cannot create the ledger directory: {exc}") from None
