"""``stoprule replay TRANSCRIPT...``: what the policy would have decided at each stop.

Formats: ``pretty`` (one line per stop, then the summary), ``json`` (NDJSON: transcript,
boundary, line, fact, verdict), ``facts`` (NDJSON facts only: input for ``stoprule eval``
and ``stoprule audit --corpus``), ``summary`` (how many stops would have been blocked, by
which rule). Exit 0, or 2 when a transcript cannot be read or the pack does not compile.
"""

from __future__ import annotations

import argparse
import json
from typing import IO, Any

from ..diagnostics import EvaluationError, PolicyError
from .common import policy_error

__all__ = ["add_arguments", "run"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = "Walk recorded transcripts stop by stop and print the verdicts the policy would have given."
    p.add_argument("transcripts", nargs="+", metavar="TRANSCRIPT", help="Claude Code, Codex or Gemini JSONL")
    p.add_argument("--policy", metavar="PATH", help="policy pack (default: as `stoprule eval`)")
    p.add_argument("--format", choices=("pretty", "json", "facts", "summary"), default="pretty")
    p.add_argument(
        "--harness", choices=("claude-code", "codex", "gemini"), help="the transcripts' format (default: sniffed)"
    )


def run(args: argparse.Namespace, stdin: object, stdout: IO[str], stderr: IO[str]) -> int:
    import os

    from ..hooks.replay import boundaries
    from ..hooks.runner import state_home
    from ..hooks.settings import hook_settings
    from ..hooks.transcripts import detect
    from ..packs import load_policy, select_pack

    try:
        evaluator = load_policy(args.policy)
    except PolicyError as exc:
        return policy_error(exc, select_pack(args.policy), stderr)
    project, _ = state_home(None, os.environ)
    try:
        mapping = hook_settings(os.path.join(project, "config.yaml") if project else None)["providers"]["fields"]
    except PolicyError as exc:
        return policy_error(exc, os.path.join(project or "", "config.yaml"), stderr)
    code = 0
    stops = blocked = 0
    by_rule: dict[str, int] = {}
    for path in args.transcripts:
        fmt = detect(path, args.harness)
        if fmt is None:
            stderr.write(f"stoprule: {path}: unreadable or not a Claude Code, Codex or Gemini transcript\n")
            code = 2
            continue
        try:
            found = boundaries(path, fmt, mapping)
        except OSError as exc:
            stderr.write(f"stoprule: cannot read {path}: {exc.strerror}\n")
            code = 2
            continue
        for b in found:
            try:
                v = evaluator.evaluate(b.fact)
            except EvaluationError as exc:
                stderr.write(f"stoprule: {path}:{b.line}: stop {b.index}: {exc}\n")
                code = 2
                continue
            stops += 1
            if v.stop == "block":
                blocked += 1
                by_rule[v.rule] = by_rule.get(v.rule, 0) + 1
            if args.format == "facts":
                stdout.write(json.dumps(b.fact, ensure_ascii=False) + "\n")
            elif args.format == "json":
                rec: dict[str, Any] = {"transcript": path, "boundary": b.index, "line": b.line, "fact": b.fact,
                                       "verdict": v.to_dict()}  # fmt: skip
                stdout.write(json.dumps(rec, ensure_ascii=False) + "\n")
            elif args.format == "pretty":
                msg = v.message if len(v.message) <= 100 else v.message[:97] + "..."
                stdout.write(f"{path}:{b.line}: stop {b.index}: {v.stop.upper()} {v.verdict}/{v.reason} — {msg}\n")
    summary: dict[str, Any] = {"stops": stops, "blocked": blocked, "allowed": stops - blocked,
               "blocked_by_rule": dict(sorted(by_rule.items(), key=lambda kv: -kv[1]))}  # fmt: skip
    if args.format == "summary":
        stdout.write(json.dumps(summary) + "\n")
    elif args.format == "pretty":
        rules = ", ".join(f"{r} {n}" for r, n in summary["blocked_by_rule"].items()) or "none"
        stdout.write(f"{stops} stop(s): {blocked} would have been blocked ({rules}), {stops - blocked} allowed\n")
    return code
