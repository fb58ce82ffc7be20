"""Redaction: recall per format over real scanners' test data, false positives on ordinary
code and prose, with and without the optional detect-secrets pass, and the time of
``redact`` on ordinary text and on adversarial megabytes (medians).

Corpus and sources: tests/fixtures/secrets/README.md. Targets: >= 98 % recall, 0 false
positive lines, every adversarial megabyte in linear time (the old assignment pattern
took 47.5 s on 10 KB).

    .venv/bin/python benchmarks/bench_redaction.py [--markdown]   # ~1 min
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections import Counter

from _common import REPO, tree_state

sys.path.insert(0, str(REPO / "src"))

from stoprule._util import redact as R  # noqa: E402

FIX = REPO / "tests" / "fixtures" / "secrets"
MB = 1 << 20
ADVERSARIAL = {
    '"a-" * 512K': "a-" * (MB // 2),
    '"a=" * 512K': "a=" * (MB // 2),
    '"\\"a\\":" * 256K': '"a":' * (MB // 4),
    '"password=" * 116K': "password=" * (MB // 9),
    '"x://y:" * 174K': "x://y:" * (MB // 6),
    '"mysql -p" * 131K': "mysql -p" * (MB // 8),
    '"eyJ" * 349K': "eyJ" * (MB // 3),
    "env lines of random values": ("k=" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tV9" + "\n") * (MB // 31),
}


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


def median_s(fn, repeats: int = 5) -> float:  # noqa: ANN001
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> int:
    markdown = "--markdown" in sys.argv
    rows = [json.loads(line) for line in (FIX / "corpus.jsonl").read_text(encoding="utf-8").splitlines()]
    print(f"tree: {tree_state()}; {len(rows)} cases, {len({r['format'] for r in rows})} formats")
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
        print(f"| {fmt} | {total[fmt]} | {caught[fmt]} ({pct:.0f} %) |" if markdown else
              f"  {fmt:30} {caught[fmt]:3}/{total[fmt]:<3} {pct:5.0f} %")  # fmt: skip
    prose = (FIX / "negatives" / "stoprule_agents.md").read_text(encoding="utf-8")
    t = median_s(lambda: R.redact(prose))
    print(f"\nordinary prose: {len(prose) / 1024:.0f} KB in {t * 1000:.1f} ms ({len(prose) / t / MB:.1f} MB/s)")
    print("adversarial megabytes (median of 3):")
    worst = 0.0
    for name, text in ADVERSARIAL.items():
        t = median_s(lambda text=text: R.redact(text), 3)
        worst = max(worst, t)
        print(f"  {name:32} {t * 1000:8.0f} ms")
    ok = sum(caught.values()) >= 0.98 * sum(total.values()) and results["patterns"][2] == 0
    print(f"\ntargets (>= 98 % recall, 0 false positives): {'met' if ok else 'NOT met'}; worst megabyte {worst:.2f} s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
