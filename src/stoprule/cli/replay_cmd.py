"""``stoprule replay TRANSCRIPT...``: what the policy would have decided at each stop.

Formats: ``pretty`` (one line per stop, then the summary), ``json`` (NDJSON: transcript,
boundary, line, fact, verdict), ``facts`` (NDJSON facts only: input for ``stoprule eval``
and ``stoprule audit --corpus``), ``summary`` (how many stops would have been blocked, by
which rule). Exit 0, or 2 when a transcript cannot be read or the pack does not compile.
"""

from __future__ import annotations

import argparse
import io
import json
import os
from typing import IO, Any

from stoprule.agent.hook.replay import boundaries
from stoprule.agent.hook.runner import state_home
from stoprule.agent.hook.transcripts.scan import detect
from stoprule.cli.common import policy_error
from stoprule.cli.flags import add_jobs_flag
from stoprule.cli.progress import Bar, add_quiet_flag
from stoprule.config.reader import read_settings
from stoprule.diagnostics import EXIT_INVALID, CommandError, EvaluationError, PolicyError
from stoprule.engine.compiled import CompiledPolicy
from stoprule.engine.evaluator import Evaluator
from stoprule.engine.packs import compile_policy, select_pack
from stoprule.facts.batch import map_ordered, resolve_jobs
from stoprule.project import CONFIG_FILE

__all__ = ["add_arguments", "replay_one", "run"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = "Walk recorded transcripts stop by stop and print the verdicts the policy would have given."
    p.add_argument(
        "transcripts",
        nargs="+",
        metavar="TRANSCRIPT",
        help="Claude Code, Codex, Gemini CLI, Copilot CLI, Cursor or Antigravity transcripts",
    )
    p.add_argument("--policy", metavar="PATH", help="policy pack (default: as `stoprule eval`)")
    p.add_argument("--format", choices=("pretty", "json", "facts", "summary"), default="pretty")
    p.add_argument(
        "--harness",
        choices=("claude-code", "codex", "gemini", "copilot", "cursor", "antigravity"),
        help="the transcripts' format (default: sniffed)",
    )
    add_jobs_flag(
        p, "replay the transcripts in N processes, one transcript at a time each (0: one per CPU); output order is kept"
    )
    add_quiet_flag(p)


class _Tally:
    """Stops seen, stops blocked, and blocked stops by rule (summed over transcripts)."""

    def __init__(self) -> None:
        self.stops = self.blocked = 0
        self.by_rule: dict[str, int] = {}

    def add(self, other: _Tally) -> None:
        self.stops += other.stops
        self.blocked += other.blocked
        for rule, n in other.by_rule.items():
            self.by_rule[rule] = self.by_rule.get(rule, 0) + n


def run(args: argparse.Namespace, stdin: object, stdout: IO[str], stderr: IO[str]) -> int:
    if args.jobs < 0:
        raise CommandError("--jobs must be 0 (one per CPU) or more")
    try:
        compiled = compile_policy(args.policy)
    except PolicyError as exc:
        return policy_error(exc, select_pack(args.policy), stderr)
    project, _ = state_home(None, os.environ)
    try:
        settings = read_settings(os.path.join(project, CONFIG_FILE) if project else None)
    except PolicyError as exc:
        return policy_error(exc, os.path.join(project or "", CONFIG_FILE), stderr)
    mapping = settings.providers["fields"]
    context = (str(select_pack(args.policy)), (settings.session or {}).get("mode"))
    code = 0
    total = _Tally()
    options = (mapping, args.harness, args.format, context)
    paths: list[str] = args.transcripts

    jobs = min(resolve_jobs(args.jobs), len(paths))
    bar = Bar(stderr, "replay", len(paths), unit="transcripts", quiet=args.quiet)
    if jobs > 1:  # workers fork here, before this process creates engine handles
        for out, err, c, tally in map_ordered(_replay_task, paths, jobs, _replay_setup, (compiled, *options)):
            stderr.write(err)
            stdout.write(out)
            code = max(code, c)
            total.add(tally)
            bar.advance()
    else:
        evaluator = Evaluator(compiled)
        for path in paths:
            c, tally = replay_one(evaluator, path, *options, stdout, stderr)
            code = max(code, c)
            total.add(tally)
            bar.advance()
    bar.close()
    summary: dict[str, Any] = {"stops": total.stops, "blocked": total.blocked, "allowed": total.stops - total.blocked,
               "blocked_by_rule": dict(sorted(total.by_rule.items(), key=lambda kv: -kv[1]))}  # fmt: skip
    if args.format == "summary":
        stdout.write(json.dumps(summary) + "\n")
    elif args.format == "pretty":
        rules = ", ".join(f"{r} {n}" for r, n in summary["blocked_by_rule"].items()) or "none"
        stdout.write(
            f"{total.stops} stop(s): {total.blocked} would have been blocked ({rules}), "
            f"{total.stops - total.blocked} allowed\n"
        )
    return code


# field mapping, harness, format, (pack, session mode setting)
_Options = tuple[dict[str, str | None], str | None, str, tuple[str, str | None]]


def _replay_setup(compiled: CompiledPolicy, *options: Any) -> tuple[Evaluator, _Options]:
    mapping, harness, fmt, context = options
    return Evaluator(compiled), (mapping, harness, fmt, context)


def _replay_task(context: tuple[Evaluator, _Options], path: str) -> tuple[str, str, int, _Tally]:
    """One transcript replayed in a worker: (stdout text, stderr text, exit code, tally)."""
    evaluator, (mapping, harness, fmt, where) = context
    out, err = io.StringIO(), io.StringIO()
    code, tally = replay_one(evaluator, path, mapping, harness, fmt, where, out, err)
    return out.getvalue(), err.getvalue(), code, tally


def replay_one(
    evaluator: Evaluator,
    path: str,
    mapping: dict[str, str | None],
    harness: str | None,
    fmt: str,
    where: tuple[str, str | None],
    stdout: IO[str],
    stderr: IO[str],
) -> tuple[int, _Tally]:
    """Replay one transcript, writing its lines; its exit code (0 or 2) and tally. ``where``:
    the pack (its question patterns) and the config's session mode."""
    tally = _Tally()
    kind = detect(path, harness)
    if kind is None:
        stderr.write(f"stoprule: {path}: unreadable or not a transcript of a supported harness\n")
        return EXIT_INVALID, tally
    try:
        found = boundaries(path, kind, mapping, pack=where[0], mode_setting=where[1])
    except OSError as exc:
        stderr.write(f"stoprule: cannot read {path}: {exc.strerror}\n")
        return EXIT_INVALID, tally
    code = 0
    for b in found:
        try:
            v = evaluator.evaluate(b.fact)
        except EvaluationError as exc:
            stderr.write(f"stoprule: {path}:{b.line}: stop {b.index}: {exc}\n")
            code = EXIT_INVALID
            continue
        tally.stops += 1
        if v.stop == "block":
            tally.blocked += 1
            tally.by_rule[v.rule] = tally.by_rule.get(v.rule, 0) + 1
        if fmt == "facts":
            stdout.write(json.dumps(b.fact, ensure_ascii=False) + "\n")
        elif fmt == "json":
            rec: dict[str, Any] = {"transcript": path, "boundary": b.index, "line": b.line, "fact": b.fact,
                                   "verdict": v.to_dict()}  # fmt: skip
            stdout.write(json.dumps(rec, ensure_ascii=False) + "\n")
        elif fmt == "pretty":
            msg = v.message if len(v.message) <= 100 else v.message[:97] + "..."
            stdout.write(f"{path}:{b.line}: stop {b.index}: {v.stop.upper()} {v.verdict}/{v.reason} — {msg}\n")
    return code, tally
