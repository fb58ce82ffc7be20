"""``stoprule audit``: gaps, conflicts, dead rules and unused declarations of a pack, and its verdict map."""

from __future__ import annotations

import argparse
import json
import time
from contextlib import nullcontext
from typing import IO, TYPE_CHECKING, Any

from stoprule import codes
from stoprule.analysis import AnalysisLimit, audit_pack
from stoprule.analysis.backends import engine_of
from stoprule.analysis.corpus import corpus_counts, corpus_report, merge_counts
from stoprule.analysis.explore import Progress
from stoprule.analysis.render import render_audit
from stoprule.cli.common import diagnostics_error, policy_error
from stoprule.cli.flags import add_backend_flag, add_jobs_flag, add_policy_flags
from stoprule.cli.inspect_cmd import layering
from stoprule.cli.progress import Bar, add_quiet_flag
from stoprule.diagnostic import Diagnostic
from stoprule.diagnostics import EXIT_INVALID, EXIT_NOT_OK, EXIT_OK, CommandError, PolicyError
from stoprule.engine.build import compile_pack
from stoprule.engine.evaluator import Evaluator
from stoprule.engine.packs import compile_policy, select_pack
from stoprule.facts.batch import chunk_items, parallel_chunks, resolve_jobs, sequential_chunks, started_map
from stoprule.facts.parse import parse_facts, read_input

__all__ = ["add_arguments", "audit_command", "run"]

if TYPE_CHECKING:
    from stoprule.facts.batch import Chunk


def audit_command(
    policy: str | None,
    corpus: str | None,
    fmt: str,
    stdin: IO[bytes],
    stdout: IO[str],
    stderr: IO[str],
    jobs: int = 1,
    backend: str = "auto",
    timeout: float | None = None,
    quiet: bool = False,
) -> int:
    """Audit the selected pack (and evaluate ``corpus``, a large NDJSON one in ``jobs`` processes);
    exit 0 clean, 1 findings or questions not answered in ``timeout`` seconds, 2 bad input (or a
    witness that does not reproduce: a bug)."""
    started = time.monotonic()  # the time reported is the whole command's, the corpus included

    root = select_pack(policy)
    data = chunks = None
    running: Any = nullcontext(None)
    if corpus is not None and jobs != 1:
        try:  # the compiled pack alone (cached): the workers start before the analysis is loaded
            compiled = compile_policy(root)
        except PolicyError as exc:
            return policy_error(exc, root, stderr)
        data = read_input(corpus, stdin, stderr)
        if data is None:
            return EXIT_INVALID
        jobs = resolve_jobs(jobs)
        chunks = parallel_chunks(data, jobs)
        if chunks is not None:  # forked now: the workers evaluate while this process analyses
            running = started_map(_corpus_chunk, chunks, jobs, _corpus_setup, (compiled, data))
    with running as pending:
        try:
            ctx = compile_pack(root)
        except PolicyError as exc:
            return policy_error(exc, root, stderr)
        if corpus is not None and data is None:
            data = read_input(corpus, stdin, stderr)
            if data is None:
                return EXIT_INVALID
        try:
            made: list[Any] = []

            def engine(fact: dict[str, Any]) -> Any:  # made on first use: only the solver re-checks witnesses
                if not made:
                    made.append(engine_of(Evaluator(ctx.compiled)))
                return made[0](fact)

            shown = Progress(stderr) if not quiet else None
            report = audit_pack(ctx.checked, shown, backend=backend, timeout=timeout, engine=engine)
        except AnalysisLimit as exc:
            diag = Diagnostic(str(root), 1, 1, codes.AUDIT_LIMIT, str(exc))
            return diagnostics_error(PolicyError([diag]), "the pack is beyond the analysis", stderr)
        if data is not None:  # parsed only now: the analysis does not run with the whole corpus live
            with Bar(stderr, "audit: corpus", unit="chunks", quiet=quiet) as bar:
                if pending is not None:
                    parts = []
                    for part in pending:
                        parts.append(part)
                        bar.advance()
                else:
                    context = _corpus_setup(ctx.compiled, data)
                    pieces = sequential_chunks(data)
                    if pieces is None:
                        parts = [corpus_counts(context[0], parse_facts(data))]
                    else:
                        bar.total = len(pieces)
                        parts = []
                        for c in pieces:
                            parts.append(_corpus_chunk(context, c))
                            bar.advance()
            report.corpus = corpus_report(ctx.checked, merge_counts(parts), corpus or "")
    report.seconds = time.monotonic() - started

    layers = layering(ctx.checked, str(root))  # the global pack under this one: what it adds, shadows, ties
    if fmt == "json":
        stdout.write(json.dumps({**report.to_dict(), **({"layers": layers[0]} if layers else {})}) + "\n")
    else:
        stdout.write(render_audit(report) + "\n" + "".join(f"{ln}\n" for ln in (layers[1] if layers else [])))
    if report.bugs:
        raise CommandError(
            f"{len(report.bugs)} witness(es) of the analysis do not reproduce: a bug in stoprule, "
            "please report it with the pack (the facts are in the output)"
        )
    return EXIT_NOT_OK if report.findings or report.unanswered else EXIT_OK


def _corpus_setup(compiled: Any, data: bytes) -> tuple[Any, bytes]:
    return Evaluator(compiled), data


def _corpus_chunk(context: tuple[Any, bytes], chunk: Chunk) -> dict[str, Any]:
    ev, data = context
    return corpus_counts(ev, chunk_items(data, chunk))


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Analyse a pack over its whole fact domain (exactly, over a finite abstraction): gaps, conflicts, "
        "dead rules, unused declarations, and the share of the domain each verdict covers. "
        "Exit 0 clean, 1 findings, 2 bad input."
    )
    add_policy_flags(p, default_format="pretty")
    p.add_argument(
        "--corpus",
        metavar="FILE.ndjson",
        help="also evaluate these facts: hits per rule, verdicts, fall-through, invalid lines (- reads stdin)",
    )
    add_jobs_flag(p, "evaluate a large NDJSON corpus in N processes (0: one per CPU); the report is the same")
    add_quiet_flag(p)
    add_backend_flag(p, "one SMT query per question")
    p.add_argument(
        "--timeout",
        type=float,
        metavar="S",
        help="stop after S seconds and list the questions not answered (exit 1)",
    )


def run(args: argparse.Namespace, stdin: IO[bytes], stdout: IO[str], stderr: IO[str]) -> int:
    if args.jobs < 0:
        raise CommandError("--jobs must be 0 (one per CPU) or more")
    if args.timeout is not None and args.timeout <= 0:
        raise CommandError("--timeout must be a positive number of seconds")
    return audit_command(
        args.policy,
        args.corpus,
        args.format,
        stdin,
        stdout,
        stderr,
        jobs=args.jobs,
        backend=args.backend,
        timeout=args.timeout,
        quiet=args.quiet,
    )
