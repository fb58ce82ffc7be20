"""Redaction: recall per format over real scanners' test data, false positives on ordinary
code and prose, with and without the optional detect-secrets pass, and the time of
``redact`` on ordinary text and on adversarial megabytes (medians).

Corpus and sources: tests/fixtures/secrets/README.md. Targets: >= 98 % recall, 0 false
positive lines, every adversarial megabyte in linear time (the old assignment pattern
took 47.5 s on 10 KB): each megabyte <= 100 ms CPU, aim <= 60 ms.

    .venv/bin/python benchmarks/bench_redaction.py [--markdown] [--only PATTERN]   # ~3 min
    .venv/bin/python benchmarks/bench_redaction.py --per-regex   # ~4 min: each regex alone

``--per-regex`` times each compiled regex of the redaction module alone (one full
``finditer`` scan, no replacement, no Python judgement of candidates) on every adversarial
megabyte and prints its slowest input: the linear-time bound is a property of each regex.

The adversarial inputs (tests/_util/redact_inputs.py) are one family per pattern: many real
matches (fixed and random), near matches, glued matches, long runs, the literal alone. Each
run prints the load average (other jobs inflate CPU times too: compare runs at like loads).
"""

from __future__ import annotations

import json
import os
import re
import statistics
import sys
import time
from collections import Counter

from _common import REPO, tree_state

sys.path.insert(0, str(REPO / "src"))

from stoprule._util import redact as R  # noqa: E402

sys.path.insert(0, str(REPO / "tests" / "_util"))

from redact_inputs import MB, TRIVIAL, families  # noqa: E402

FIX = REPO / "tests" / "fixtures" / "secrets"
BOUND_MS, AIM_MS = 100, 60  # per adversarial megabyte: the bound, and the aim (CPU, median)


def recall(rows: list[dict[str, str]]) -> tuple[Counter[str], Counter[str]]:
    total, caught = Counter[str](), Counter[str]()
    for r in rows:
        total[r["format"]] += 1
        caught[r["format"]] += r["secret"] not in R.redact(r["text"])
    return total, caught


def false_positives() -> tuple[int, int]:
    lines = changed = 0
    for f in sorted((FIX / "negatives").iterdir()):
        text = f.read_text(encoding="utf-8")
        out = R.redact(text)
        a, b = text.splitlines(), out.splitlines()
        lines += len(a)
        changed += sum(x != y for x, y in zip(a, b, strict=True))
    return changed, lines


def median_cpu(fn, repeats: int) -> float:  # noqa: ANN001
    times = []
    for _ in range(repeats):
        t = time.process_time()
        fn()
        times.append(time.process_time() - t)
    return statistics.median(times)


def adversarial(markdown: bool, repeats: int, only: str | None) -> tuple[float, list[str], int, int]:
    """CPU ms (median) of ``redact`` on every adversarial megabyte, and its ratio to one
    trivial ``re.sub`` over the same text; returns the worst, the inputs over the bound, how
    many inputs were measured and how many are over the aim."""
    print(f"\nadversarial megabytes (CPU, median of {repeats}; ratio to re.sub(r'\\s+', ' ', text)):")
    print(
        "\n| pattern | inputs | worst input | ms | ratio | inputs over 60 ms |\n| --- | --- | --- | --- | --- | --- |"
        if markdown
        else ""
    )
    worst, over, count, over_aim = 0.0, [], 0, 0
    for pattern, inputs in families(MB).items():
        if only and only not in pattern:
            continue
        rows = []
        for name, text in inputs.items():
            base = median_cpu(lambda text=text: TRIVIAL.sub(" ", text), repeats)
            t = median_cpu(lambda text=text: R.redact(text), repeats)
            rows.append((t, name, t / max(base, 1e-6)))
            if t * 1000 > BOUND_MS:
                over.append(f"{pattern}: {name} ({t * 1000:.0f} ms)")
            if not markdown:
                print(f"  {pattern:28} {name:32} {t * 1000:7.1f} ms {t / max(base, 1e-6):7.1f}x")
        t, name, ratio = max(rows)
        worst = max(worst, t)
        slow = [n for tt, n, _ in rows if tt * 1000 > AIM_MS]
        count, over_aim = count + len(rows), over_aim + len(slow)
        if markdown:
            print(f"| {pattern} | {len(rows)} | {name} | {t * 1000:.0f} | {ratio:.0f}x | {', '.join(slow) or '-'} |")
    return worst, over, count, over_aim


def regexes() -> dict[str, re.Pattern[str]]:
    """Every compiled regex of the redaction module (lazy ones compiled), by where it is defined."""
    found: dict[str, tuple[str, re.Pattern[str]]] = {}

    def add(name: str, value: object) -> None:
        if isinstance(value, R._Lazy):
            value = value.compiled()
        if isinstance(value, re.Pattern):
            found.setdefault(value.pattern, (name, value))
        elif isinstance(value, (list, tuple)):
            for i, item in enumerate(value):
                add(f"{name}[{i}]", item)

    for name, value in vars(R).items():
        add(name, value)
    return dict(found.values())


def load() -> str:
    return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def per_regex(repeats: int) -> float:
    """The slowest full scan of each regex over the adversarial megabytes; returns the worst."""
    print(f"tree: {tree_state()}; {load()}")
    inputs = [(f"{p}: {n}", t) for p, d in families(MB).items() for n, t in d.items()]
    print(f"\neach regex alone, its slowest of {len(inputs)} adversarial megabytes (CPU, median of {repeats}):")
    worst = 0.0
    for name, rx in regexes().items():

        def scan(text: str, rx: re.Pattern[str] = rx) -> None:
            for _ in rx.finditer(text):
                pass

        t, where = max((median_cpu(lambda text=text: scan(text), repeats), label) for label, text in inputs)
        worst = max(worst, t)
        print(f"  {name:24} {t * 1000:7.1f} ms  {where}{'  OVER' if t * 1000 > BOUND_MS else ''}", flush=True)
    print(f"worst regex scan: {worst * 1000:.0f} ms (bound {BOUND_MS} ms); {load()}")
    return worst


def main() -> int:
    if "--per-regex" in sys.argv:
        return 0 if per_regex(1) * 1000 <= BOUND_MS else 1
    markdown = "--markdown" in sys.argv
    rows = [json.loads(line) for line in (FIX / "corpus.jsonl").read_text(encoding="utf-8").splitlines()]
    print(f"tree: {tree_state()}; {len(rows)} cases, {len({r['format'] for r in rows})} formats; {load()}")
    results = {}
    for mode in ("patterns", "patterns + detect-secrets"):
        on = R.use_detect_secrets(mode != "patterns")
        if mode != "patterns" and not on:
            print("detect-secrets is not installed: its mode is skipped")
            continue
        total, caught = recall(rows)
        fp, lines = false_positives()
        results[mode] = (total, caught, fp, lines)
        n, hit = sum(total.values()), sum(caught.values())
        print(f"{mode}: recall {hit}/{n} ({100 * hit / n:.1f} %), false positives {fp} of {lines} lines")
    R.use_detect_secrets(False)
    total, caught, _, _ = results["patterns"]
    print("\n| format | cases | redacted |\n| --- | --- | --- |" if markdown else "\nrecall per format:")
    for fmt in sorted(total):
        pct = 100 * caught[fmt] / total[fmt]
        print(
            f"| {fmt} | {total[fmt]} | {caught[fmt]} ({pct:.0f} %) |"
            if markdown
            else f"  {fmt:30} {caught[fmt]:3}/{total[fmt]:<3} {pct:5.0f} %"
        )
    prose = (FIX / "negatives" / "stoprule_agents.md").read_text(encoding="utf-8")
    t = median_cpu(lambda: R.redact(prose), 5)
    print(f"\nordinary prose: {len(prose) / 1024:.0f} KB in {t * 1000:.1f} ms ({len(prose) / t / MB:.1f} MB/s)")
    repeats = 3
    only = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else None
    worst, over, count, over_aim = adversarial(markdown, repeats, only)
    ok = sum(caught.values()) >= 0.98 * sum(total.values()) and results["patterns"][2] == 0
    print(
        f"\ntargets (>= 98 % recall, 0 false positives): {'met' if ok else 'NOT met'}; worst megabyte "
        f"{worst * 1000:.0f} ms CPU; of {count} inputs over {BOUND_MS} ms: {len(over)}, over {AIM_MS} ms: "
        f"{over_aim}; {load()}"
    )
    for line in over:
        print(f"  over the bound: {line}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
