"""``stoprule test``: run a pack's case files; optionally measure rule, condition and MC/DC coverage."""

from __future__ import annotations

import argparse
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from stoprule.analysis.backends import engine_of
from stoprule.analysis.cases import diff_line, format_mismatches, load_cases, run_case
from stoprule.analysis.coverage import Observation, compute_coverage
from stoprule.cli.common import diagnostics_error, policy_error
from stoprule.cli.flags import add_policy_flags
from stoprule.cli.progress import Bar
from stoprule.cli.style import painter
from stoprule.cli.watch import watch
from stoprule.console.policy import PACKS_DIR, keep_pack, save_coverage
from stoprule.diagnostics import EXIT_NOT_OK, EXIT_OK, CommandError, PolicyError
from stoprule.engine.build import compile_pack
from stoprule.engine.evaluator import Evaluator
from stoprule.engine.packs import select_pack
from stoprule.project import find_project

if TYPE_CHECKING:
    from collections.abc import Callable

    from stoprule.analysis.cases import CaseResult
    from stoprule.analysis.coverage import Coverage

__all__ = ["add_arguments", "run", "test_command"]


def _label(r: CaseResult, index: int) -> str:
    c = r.case
    return f"{c.id}[{index}]" if len(c.facts) > 1 else c.id


def _jsonable(v: Any) -> Any:
    return json.loads(json.dumps(v, default=str))


def _case_dict(r: CaseResult) -> dict[str, Any]:
    c = r.case
    return {
        "name": c.name,
        "file": c.file,
        "line": c.line,
        "passed": r.passed,
        "facts": len(c.facts),
        "mismatches": [
            {"fact": m.fact_index, "key": m.key, "expected": _jsonable(m.expected), "actual": _jsonable(m.actual)}
            for m in r.mismatches
        ],
    }


def _summary(results: list[CaseResult]) -> dict[str, int]:
    failed = sum(not r.passed for r in results)
    return {
        "cases": len(results),
        "passed": len(results) - failed,
        "failed": failed,
        "facts": sum(len(r.case.facts) for r in results),
        "files": len({r.case.file for r in results}),
    }


# --- pretty --------------------------------------------------------------------------------------


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _pct(ratio: dict[str, Any]) -> str:
    return f"{ratio['percent']:5.1f}%  {ratio['covered']}/{ratio['total']}"


def _pretty_coverage(cov: Coverage, root: Path, threshold: float | None) -> list[str]:
    m = cov.mcdc_ratio()
    lines = [
        "",
        f"coverage of {root} by {cov.facts} facts:",
        f"  rules       {_pct(cov.rule_ratio())} won by some fact",
        f"  conditions  {_pct(cov.condition_ratio())} atomic conditions seen both true and false",
        f"  MC/DC       {_pct(m)} conditions ({m['unique_cause']} unique-cause, {m['masking']} masking;"
        f" {m['infeasible']} infeasible, not counted)",
    ]
    if threshold is not None:
        met = "met" if cov.mcdc_at_least(threshold) else "NOT MET"
        lines.append(f"  threshold   MC/DC >= {threshold:g}%: {met}")
    width = max((len(r.id) for r in cov.rules), default=4)
    lines += ["", f"  {'rule':<{width}}  {'won':>5}  {'matched':>7}  {'both ways':>9}  {'MC/DC':>7}"]
    for r in cov.rules:
        conds = r.conditions
        counted = [c for c in conds if c.mcdc != "infeasible"]
        both = f"{sum(c.both_ways for c in conds)}/{len(conds)}"
        mcdc = f"{sum(c.mcdc is not None for c in counted)}/{len(counted)}"
        extra = f" (+{len(conds) - len(counted)} infeasible)" if len(conds) > len(counted) else ""
        lines.append(f"  {r.id:<{width}}  {r.won:>5}  {r.matched:>7}  {both:>9}  {mcdc:>7}{extra}")
    if cov.uncovered_rules():
        lines += ["", "uncovered rules (no fact made them win):"]
        lines += [f"  {r.where}: {r.id} (matched {r.matched} facts)" for r in cov.uncovered_rules()]
    if cov.uncovered_conditions():
        lines += ["", "uncovered conditions (no MC/DC pair):"]
        for c in cov.uncovered_conditions():
            scope = f"; in {c.scope}" if c.scope else ""
            lines.append(f"  {c.where}: {c.text}  [{c.rule}{scope}] {c.note} (true {c.true}, false {c.false})")
    if cov.infeasible_conditions():
        lines += ["", "infeasible conditions (not counted in MC/DC):"]
        for c in cov.infeasible_conditions():
            lines.append(f"  {c.where}: {c.text}  [{c.rule}] {c.note}")
    if cov.unexercised:
        lines += ["", "declarations no fact exercised:"]
        lines += [f"  {u.file}:{u.line}: {u.kind.replace('_', ' ')} {u.name}: {u.note}" for u in cov.unexercised]
    for w in cov.warnings:
        lines.append(f"warning: {w}")
    return lines


def _pretty(
    results: list[CaseResult],
    cov: Coverage | None,
    root: Path,
    threshold: float | None,
    verbose: bool = False,
    paint: Callable[[str, str], str] = lambda text, style: text,
) -> str:
    def fail(r: CaseResult) -> str:
        return diff_line(r.case, r.mismatches).replace(": FAIL ", ": " + paint("FAIL", "bold red") + " ", 1)

    if verbose:
        lines = [
            f"{r.case.file}:{r.case.line}: {paint('PASS', 'green')} {r.case.name} ({r.seconds * 1000:.1f} ms)"
            if r.passed
            else fail(r)
            for r in results
        ]
    else:
        lines = [fail(r) for r in results if not r.passed]
    s = _summary(results)
    counts = f"({_plural(s['facts'], 'fact')}, {_plural(s['files'], 'file')})"
    if s["failed"]:
        lines.append(f"{paint('FAILED', 'bold red')}: {s['failed']} of {_plural(s['cases'], 'case')} {counts}")
    else:
        lines.append(f"{paint('ok', 'bold green')}: {_plural(s['cases'], 'case')} passed {counts}")
    if cov is not None:
        lines += _pretty_coverage(cov, root, threshold)
    return "\n".join(lines) + "\n"


# --- junit ---------------------------------------------------------------------------------------


def _junit(results: list[CaseResult], cov: Coverage | None, threshold: float | None) -> str:
    root = ET.Element("testsuites", name="stoprule")
    by_file: dict[str, list[CaseResult]] = {}
    for r in results:
        by_file.setdefault(r.case.file, []).append(r)
    total = failures = 0
    seconds = 0.0
    for file, rs in by_file.items():
        failed = sum(not r.passed for r in rs)
        t = sum(r.seconds for r in rs)
        suite = ET.SubElement(
            root,
            "testsuite",
            name=Path(file).name,
            file=file,
            tests=str(len(rs)),
            failures=str(failed),
            errors="0",
            skipped="0",
            time=f"{t:.6f}",
        )
        for r in rs:
            tc = ET.SubElement(
                suite,
                "testcase",
                classname=Path(file).stem,
                name=r.case.name,
                file=file,
                line=str(r.case.line),
                time=f"{r.seconds:.6f}",
            )
            if not r.passed:
                msg = "; ".join(f"{m.key}: expected {m.expected!r}, got {m.actual!r}" for m in r.mismatches)
                fail = ET.SubElement(tc, "failure", message=msg, type="mismatch")
                fail.text = format_mismatches(r.case, r.mismatches)
        total += len(rs)
        failures += failed
        seconds += t
    if cov is not None:
        suite = ET.SubElement(root, "testsuite", name="coverage", tests="0", failures="0", errors="0", skipped="0")
        props = ET.SubElement(suite, "properties")
        ratios = {"rules": cov.rule_ratio(), "conditions": cov.condition_ratio(), "mcdc": cov.mcdc_ratio()}
        for key, ratio in ratios.items():
            ET.SubElement(props, "property", name=f"{key}_percent", value=str(ratio["percent"]))
        if threshold is not None:
            tc = ET.SubElement(suite, "testcase", classname="coverage", name=f"MC/DC >= {threshold:g}%")
            suite.set("tests", "1")
            total += 1
            if not cov.mcdc_at_least(threshold):
                suite.set("failures", "1")
                failures += 1
                fail = ET.SubElement(tc, "failure", message=f"MC/DC {cov.mcdc_ratio()['percent']}% < {threshold:g}%")
                fail.text = "\n".join(f"{c.where}: {c.text} [{c.rule}] {c.note}" for c in cov.uncovered_conditions())
        out = ET.SubElement(suite, "system-out")
        out.text = "\n".join(
            [f"{r.where}: uncovered rule {r.id}" for r in cov.uncovered_rules()]
            + [f"{c.where}: uncovered condition {c.text} [{c.rule}] {c.note}" for c in cov.uncovered_conditions()]
        )
    root.set("tests", str(total))
    root.set("failures", str(failures))
    root.set("errors", "0")
    root.set("time", f"{seconds:.6f}")
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


# --- the command ---------------------------------------------------------------------------------


def test_command(
    policy: str | None,
    paths: list[str],
    fmt: str,
    coverage: bool,
    threshold: float | None,
    stdout: IO[str],
    stderr: IO[str],
    quiet: bool = False,
    pattern: str | None = None,
    verbose: bool = False,
) -> int:
    """Run the case files (default: the pack's ``tests/``); exit 0 pass, 1 failures or low coverage, 2 bad input.

    ``pattern``: only the cases whose ``file::name`` it matches (a regular expression, searched);
    ``verbose``: every case's outcome, not only the failures (pretty)."""
    root = select_pack(policy)
    coverage = coverage or threshold is not None
    try:
        ctx = compile_pack(root)
    except PolicyError as exc:
        return policy_error(exc, root, stderr)
    assert ctx.compiled is not None
    files = [Path(p) for p in paths] or [root / "tests"]
    if not paths and not files[0].is_dir():
        raise CommandError(f"no test files: {files[0]} is not a directory (name case files or folders)")
    try:
        cases = load_cases(files, ctx.compiled)
    except PolicyError as exc:
        summary = f"{exc.total} error(s) in the case files"
        return diagnostics_error(exc, summary, stderr)
    if pattern is not None:
        try:
            wanted = re.compile(pattern)
        except re.error as exc:
            raise CommandError(f"--run {pattern!r} is not a regular expression: {exc}") from None
        cases = [c for c in cases if wanted.search(c.id)]
        if not cases:
            raise CommandError(f"no case matches --run {pattern!r}")
    if not cases:
        raise CommandError(f"no cases found in {', '.join(map(str, files))}")
    evaluator = Evaluator(ctx.compiled)

    with Bar(stderr, "test", len(cases), unit="cases", quiet=quiet) as bar:
        results = []
        for c in cases:
            results.append(run_case(evaluator, c))
            bar.advance()
    cov = None
    if coverage:
        obs = [
            Observation(_label(r, run.index), run.data, run.verdict)
            for r in results
            for run in r.runs
            if run.data is not None and run.verdict is not None
        ]

        cov = compute_coverage(ctx.checked, obs, engine=engine_of(evaluator))  # witnesses re-checked by the engine
        _keep(root, ctx.compiled.digest, _summary(results), cov, stderr)
    failed = any(not r.passed for r in results)
    low = cov is not None and threshold is not None and not cov.mcdc_at_least(threshold)
    if fmt == "json":
        out: dict[str, Any] = {
            "ok": not failed and not low,
            "pack": str(root),
            "policy": ctx.compiled.digest,
            "summary": _summary(results),
            "failures": [_case_dict(r) for r in results if not r.passed],
            "cases": [_case_dict(r) for r in results],
        }
        if cov is not None:
            out["coverage"] = {**cov.to_dict(), "threshold": threshold, "threshold_met": not low}
        stdout.write(json.dumps(out) + "\n")
    elif fmt == "junit":
        stdout.write(_junit(results, cov, threshold))
        s = _summary(results)
        stderr.write(f"stoprule: {s['cases']} cases, {s['failed']} failed\n")
    else:
        stdout.write(_pretty(results, cov, root, threshold, verbose, painter(stdout)))
    if low:
        assert cov is not None
        stderr.write(f"stoprule: MC/DC coverage {cov.mcdc_ratio()['percent']}% is below the threshold {threshold:g}%\n")
    return EXIT_NOT_OK if failed or low else EXIT_OK


def _keep(root: Path, digest: str, summary: dict[str, int], cov: Coverage, stderr: IO[str]) -> None:
    """In a project (a ``.stoprule/`` here or above): keep this run as its last coverage, and a copy
    of the pack, for the console's policy page. Nothing is created where there is no project."""
    state = find_project()
    if state is None:
        return
    try:
        save_coverage(state, str(root), digest, summary, cov.to_dict())
    except OSError as exc:
        stderr.write(f"stoprule: could not keep the coverage for the console: {exc}\n")
        return
    keep_pack(str(Path(state) / PACKS_DIR), str(root), digest)


def _percent(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 <= value <= 100:
        raise argparse.ArgumentTypeError(f"must be between 0 and 100, not {text}")
    return value


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Run table-driven case files against a pack (default: the pack's tests/ folder). "
        "Exit 0 all pass (and MC/DC >= --threshold), 1 failures or coverage below the threshold, 2 bad input."
    )
    add_policy_flags(p, default_format="pretty", formats=("pretty", "json", "junit"))
    p.add_argument("paths", nargs="*", metavar="PATH", help="case files or folders of *.yaml case files")
    p.add_argument(
        "--coverage",
        action="store_true",
        help="report rule, condition and MC/DC coverage and declarations no case exercised",
    )
    p.add_argument(
        "--threshold",
        type=_percent,
        metavar="PCT",
        help="fail (exit 1) when MC/DC coverage is below PCT percent (implies --coverage)",
    )
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar on a terminal")
    p.add_argument(
        "--run", metavar="PATTERN", help="only the cases whose FILE::NAME matches this regular expression (searched)"
    )
    p.add_argument("--verbose", "-v", action="store_true", help="list every case (PASS or FAIL), not only failures")
    p.add_argument(
        "--watch", "-w", action="store_true", help="run again whenever a pack or case file changes (Ctrl-C stops)"
    )


def run(args: argparse.Namespace, stdin: object, stdout: IO[str], stderr: IO[str]) -> int:
    if args.watch:
        args.watch = False
        return watch([str(select_pack(args.policy)), *args.paths], lambda: run(args, stdin, stdout, stderr), stderr)
    return test_command(
        args.policy,
        args.paths,
        args.format,
        args.coverage,
        args.threshold,
        stdout,
        stderr,
        quiet=args.quiet,
        pattern=args.run,
        verbose=args.verbose,
    )
