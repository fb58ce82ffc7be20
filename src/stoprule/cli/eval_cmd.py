"""``stoprule eval``: facts in (one JSON object or NDJSON), verdict envelopes out.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

import argparse
import json

from stoprule import codes
from stoprule.cli.common import policy_error
from stoprule.cli.flags import add_jobs_flag, add_ledger_flag, add_policy_flags
from stoprule.cli.output import fact_error, input_name, render_verdict
from stoprule.diagnostics import (
    EXIT_INVALID,
    EXIT_NOT_OK,
    CommandError,
    EvaluationError,
    FactError,
    PolicyError,
)
from stoprule.engine.evaluator import Verdict
from stoprule.facts.parse import parse_facts, read_input

__all__ = ["add_arguments", "eval_command", "run"]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import IO, Any

    from stoprule.engine.compiled import CompiledPolicy
    from stoprule.engine.evaluator import Evaluator
    from stoprule.facts.batch import Chunk


def eval_command(
    policy: str | None,
    files: list[str],
    fmt: str,
    stdin: IO[bytes],
    stdout: IO[str],
    stderr: IO[str],
    *,
    strict: bool = False,
    jobs: int = 1,
    quiet: bool = False,
) -> int:
    """Evaluate every fact of every file in order; exit 0 all ok, 1 any not ok, 2 bad input or pack.

    ``jobs`` > 1 (0: one per CPU): a large NDJSON input is evaluated in that many processes;
    the output is the same, in the same order. A large input shows a progress bar on a terminal
    (not with ``quiet``)."""
    from stoprule.engine.packs import compile_policy, select_pack

    try:
        compiled = compile_policy(policy)
    except PolicyError as exc:
        return policy_error(exc, select_pack(policy), stderr)
    evaluator: Evaluator | None = None  # created on first use: workers fork before any engine handle
    code = 0
    for file in files:
        data = read_input(file, stdin, stderr)
        if data is None:
            code = EXIT_INVALID
            continue
        name = input_name(file)
        if jobs != 1:
            from stoprule.facts.batch import parallel_chunks, resolve_jobs

            n = resolve_jobs(jobs)
            chunks = parallel_chunks(data, n)
            if chunks is not None:
                with _bar(stderr, name, data, quiet) as bar:
                    code = max(code, _eval_parallel(compiled, name, data, chunks, fmt, stdout, stderr, strict, n, bar))
                continue
        if evaluator is None:
            from stoprule.engine.evaluator import Evaluator

            evaluator = Evaluator(compiled)
        # large NDJSON a chunk at a time: fewer live objects for the GC to walk, less memory
        from stoprule.facts.batch import chunk_items, sequential_chunks

        parts = sequential_chunks(data)
        if parts is None:
            code = max(code, eval_items(evaluator, name, parse_facts(data), fmt, stdout, stderr, strict))
            continue
        with _bar(stderr, name, data, quiet) as bar:
            for c in parts:
                code = max(code, eval_items(evaluator, name, chunk_items(data, c), fmt, stdout, stderr, strict))
                bar.at(c[2])
    return code


def _bar(stderr: IO[str], name: str, data: bytes, quiet: bool) -> Any:
    """The progress of a large input, in facts (lines) from the byte offset reached."""
    from stoprule._util import oslite as os
    from stoprule.cli.progress import ByteBar

    return ByteBar(stderr, f"eval {os.path.basename(name)}", data, unit="facts", quiet=quiet)


def _eval_parallel(
    compiled: CompiledPolicy,
    name: str,
    data: bytes,
    chunks: Iterable[Chunk],
    fmt: str,
    stdout: IO[str],
    stderr: IO[str],
    strict: bool,
    jobs: int,
    bar: Any,
) -> int:
    from stoprule.facts.batch import map_ordered

    code = 0
    setup = (compiled, data, name, fmt, strict)
    for out, err, c, end in map_ordered(_eval_chunk, chunks, jobs, _worker_setup, setup, ahead=4 * jobs):
        stderr.write(err)
        stdout.write(out)
        code = max(code, c)
        bar.at(end)
    return code


def _worker_setup(
    compiled: CompiledPolicy, data: bytes, name: str, fmt: str, strict: bool
) -> tuple[Evaluator, bytes, str, str, bool]:
    from stoprule.engine.evaluator import Evaluator

    return Evaluator(compiled), data, name, fmt, strict


def _eval_chunk(context: tuple[Evaluator, bytes, str, str, bool], chunk: Chunk) -> tuple[str, str, int, int]:
    """One chunk of NDJSON evaluated in a worker: (stdout text, stderr text, exit code, its end offset)."""
    import io

    from stoprule.facts.batch import chunk_items

    evaluator, data, name, fmt, strict = context
    out, err = io.StringIO(), io.StringIO()
    code = eval_items(evaluator, name, chunk_items(data, chunk), fmt, out, err, strict)
    return out.getvalue(), err.getvalue(), code, chunk[2]


def eval_items(
    evaluator: Evaluator,
    name: str,
    items: list[tuple[int, Any]],
    fmt: str,
    stdout: IO[str],
    stderr: IO[str],
    strict: bool,
) -> int:
    """Evaluate parsed ``(line, fact or FactError)`` items, writing envelopes and errors; the exit code."""
    from stoprule._util.gcpause import paused_gc

    code = 0
    paint = None
    if fmt == "pretty" and getattr(stdout, "isatty", bool)():  # colour on a terminal only (rich is imported then)
        from stoprule.cli.style import painter

        paint = painter(stdout)
    with paused_gc():  # see gcpause: the parsed facts would be walked again and again
        decided = iter(_decide_all(evaluator, [item for _, item in items if not isinstance(item, FactError)], strict))
        for line, item in items:
            result = item if isinstance(item, FactError) else next(decided)  # a parse error has its line
            if isinstance(result, EvaluationError):
                if result is not item:
                    result.line = line
                code = EXIT_INVALID
                fact_error(result, f"{name}: ", fmt, stdout, stderr)
                continue
            for w in result.warnings:
                at = f"{w['field']}: " if w["field"] else ""
                stderr.write(f"stoprule: {name}: line {line}: warning: {w['code']}: {at}{w['message']}\n")
            if not result.ok and code == 0:
                code = EXIT_NOT_OK
            if fmt == "json":
                stdout.write(json.dumps(result.to_dict()) + "\n")
            else:
                stdout.write(render_verdict(result, paint) + "\n")
    return code


def _decide_all(evaluator: Evaluator, facts: list[Any], strict: bool) -> list[Verdict | EvaluationError]:
    """Every fact's verdict or error, in order: as one batch (:meth:`Evaluator.evaluate_many`),
    or fact by fact if the batch fails unexpectedly (that fact alone is then an internal error)."""
    try:
        return evaluator.evaluate_many(facts, on_error="return", strict=strict)
    except Exception:  # noqa: BLE001, S110 - one fact must not end the batch: find it below
        pass
    out: list[Verdict | EvaluationError] = []
    for fact in facts:
        try:
            out.append(evaluator.evaluate(fact, strict=strict))
        except EvaluationError as exc:
            out.append(exc)
        except Exception as exc:  # noqa: BLE001 - one fact must not end the batch
            out.append(EvaluationError(codes.INTERNAL_ERROR, f"{type(exc).__name__}: {exc}"))
    return out


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = "Evaluate facts; exit 0 all ok, 1 any not ok, 2 bad input."
    add_policy_flags(p, default_format="json")
    p.add_argument(
        "file", nargs="*", default=["-"], metavar="FILE", help="JSON object or NDJSON files; - or none reads stdin"
    )
    p.add_argument(
        "--strict", action="store_true", help="an unknown fact field (or an empty fact) is an error, not a warning"
    )
    add_jobs_flag(p, "evaluate large NDJSON inputs in N processes (0: one per CPU); output order is kept")
    p.add_argument(
        "--server", metavar="URL", help="ask this server (default $STOPRULE_SERVER; token $STOPRULE_SERVER_TOKEN)"
    )
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar on a terminal")
    g = p.add_argument_group("decision ledger (see `stoprule log`)")
    g.add_argument("--run", metavar="RUN_ID", help="record each decision in this run of the ledger")
    g.add_argument("--parent", metavar="NODE_ID", help="the recorded decision's parent node (default: the run's tip)")
    g.add_argument("--checkpoint", action="store_true", help="record ok decisions as checkpoint nodes")
    g.add_argument("--retry", metavar="TOKEN", help="retry the blocked node this token names with a corrected fact")
    add_ledger_flag(g)


def run(args: argparse.Namespace, stdin: IO[bytes], stdout: IO[str], stderr: IO[str]) -> int:
    from stoprule._util import oslite as os

    server = args.server or os.environ.get("STOPRULE_SERVER")
    section: dict[str, Any] = {}
    if not server and not args.ledger:
        section = _server_section()
        server = section.get("url")
    if server:
        return remote_eval(server, args, stdin, stdout, stderr, token_env=section.get("token_env"))
    if args.checkpoint or any(v is not None for v in (args.run, args.parent, args.retry, args.ledger)):
        from stoprule.cli.log_cmd import record_command  # the ledger (sqlite3, hmac) loads only when recording

        return record_command(args, stdin, stdout, stderr)
    if args.jobs < 0:
        raise CommandError("--jobs must be 0 (one per CPU) or more")
    return eval_command(
        args.policy,
        args.file,
        args.format,
        stdin,
        stdout,
        stderr,
        strict=args.strict,
        jobs=args.jobs,
        quiet=args.quiet,
    )


def _server_section() -> dict[str, Any]:
    """The ``server:`` section of the nearest ``.stoprule/config.yaml`` ({} without one). The file is
    read only when it mentions ``server:``, so a local ``eval`` pays one small read at most."""
    from stoprule._util import oslite as os
    from stoprule.project import find_project

    project = find_project()
    path = os.path.join(project, "config.yaml") if project else None
    try:
        with open(path or "", "rb") as fh:
            if b"server:" not in fh.read():
                return {}
    except OSError:
        return {}
    from stoprule.config.reader import read_settings

    return dict(read_settings(path).server)


def remote_eval(
    server: str,
    args: argparse.Namespace,
    stdin: IO[bytes],
    stdout: IO[str],
    stderr: IO[str],
    *,
    token_env: str | None = None,
) -> int:
    """``eval --server URL``: the same output and exit codes, decided (and with ``--run`` recorded) by the server."""
    from urllib.parse import urlencode

    from stoprule._util import oslite as os
    from stoprule.agent.hook.remote import DEFAULT_TOKEN_ENV, Remote, RemoteError, ndjson_chunks

    query = {k: v for k, v in (("run", args.run), ("parent", args.parent), ("retry", args.retry)) if v}
    if args.checkpoint:
        query["checkpoint"] = "1"
    if args.strict:
        query["strict"] = "1"
    if args.ledger:
        raise CommandError("--ledger cannot be combined with --server (the server records in its own ledger)")
    code = 0
    try:
        remote = Remote(server, os.environ.get(token_env or DEFAULT_TOKEN_ENV), 30.0)
        for file in args.file:
            data = read_input(file, stdin, stderr)
            if data is None:
                code = EXIT_INVALID
                continue
            name = input_name(file)
            qs = "?" + urlencode(query) if query else ""
            if args.retry:
                answers = [remote.call("POST", "/v1/evaluate" + qs, data)]
            else:  # in requests under the server's limits; each later one continues the run from its tip
                answers = []
                for n, (first, chunk) in enumerate(ndjson_chunks(data)):
                    later = {k: v for k, v in query.items() if k != "parent"}  # --parent: the first fact's
                    status, body = remote.batch(chunk, qs if n == 0 else "?" + urlencode(later) if later else "")
                    if status != 200:
                        err = json.loads(body).get("error", {}) if body.startswith(b"{") else {}
                        code_, message = err.get("code", codes.SERVER_BAD_ANSWER), err.get("message", f"HTTP {status}")
                        raise RemoteError(code_, message)
                    for line in body.splitlines():
                        if line.strip():
                            answer = json.loads(line)
                            if "error" in answer and isinstance(answer["error"].get("line"), int):
                                answer["error"]["line"] += first - 1  # the input's line, not the request's
                            answers.append(answer)
            for answer in answers:
                if "error" in answer:
                    e = answer["error"]
                    exc = EvaluationError(e["code"], e["message"], e.get("field", ""), e.get("line"))
                    fact_error(exc, f"{name}: ", args.format, stdout, stderr)
                    code = EXIT_INVALID
                    continue
                verdict = Verdict.from_dict(answer)
                if not verdict.ok and code == 0:
                    code = EXIT_NOT_OK
                stdout.write((json.dumps(answer) if args.format == "json" else render_verdict(verdict)) + "\n")
    except RemoteError as exc:
        raise CommandError(f"{server}: {exc}") from None
    return code
