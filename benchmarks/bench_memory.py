"""Memory: RSS after 100,000 and after 1,000,000 evaluations in one process.

    python benchmarks/bench_memory.py [--total 1000000] [--pool 10000] [--chunk 1000]

Evaluates facts from a pool of generated facts (``facts.py``) in chunks with
``evaluate_many`` (results dropped after each chunk), and reads VmRSS from
/proc/self/status (after ``gc.collect()``) every 100,000 evaluations. Prints RSS
at 100k and at 1M and the difference (target: within 5 MB), plus the trace, so
steady growth (a leak in the engine handles or a cache) can be told from a
one-off step (allocator arenas).
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import tree_state  # noqa: E402

from facts import generate  # noqa: E402
from stoprule import load_policy  # noqa: E402

TARGET_MB = 5.0


def rss_kb() -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS in /proc/self/status")


def hwm_kb() -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--total", type=int, default=1_000_000)
    ap.add_argument("--pool", type=int, default=10_000)
    ap.add_argument("--chunk", type=int, default=1_000)
    ap.add_argument("--every", type=int, default=100_000, help="read RSS every this many evaluations")
    ap.add_argument("--seed", type=int, default=20250101)
    args = ap.parse_args()
    if args.every % args.chunk or args.total % args.every:
        raise SystemExit("--every must be a multiple of --chunk, --total a multiple of --every")

    rss0 = rss_kb()
    ev = load_policy(HERE.parent / "policies", cache=False)
    pool = generate(args.pool, args.seed)
    gc.collect()
    rss_loaded = rss_kb()
    chunks = [pool[i : i + args.chunk] for i in range(0, len(pool), args.chunk)]
    print(f"tree: {tree_state()}")
    print(
        f"python {sys.version.split()[0]}; pool {len(pool)} facts, chunks of {args.chunk}, {args.total:,} evaluations"
    )
    print(
        f"RSS at start {rss0 / 1024:.1f} MB; after loading the pack and generating the pool {rss_loaded / 1024:.1f} MB"
    )

    done = 0
    ci = 0
    trace: list[tuple[int, int, float]] = []
    t0 = time.perf_counter()
    while done < args.total:
        out = ev.evaluate_many(chunks[ci % len(chunks)])
        done += len(out)
        del out
        ci += 1
        if done % args.every == 0:
            gc.collect()
            trace.append((done, rss_kb(), time.perf_counter() - t0))
    elapsed = time.perf_counter() - t0

    print(f"\n{'evaluations':>12} {'VmRSS':>10} {'vs 100k':>10} {'elapsed':>9}")
    at = dict((n, r) for n, r, _ in trace)
    first = at.get(100_000, trace[0][1])
    for n, r, t in trace:
        print(f"{n:>12,} {r / 1024:8.1f} MB {(r - first) / 1024:+8.2f} MB {t:8.1f}s")
    last_n, last = trace[-1][0], trace[-1][1]
    diff_mb = (last - first) / 1024
    print(f"\n{'RSS after 100,000 evaluations':<34}: {first / 1024:.1f} MB")
    print(f"{f'RSS after {last_n:,} evaluations':<34}: {last / 1024:.1f} MB")
    print(
        f"{'difference':<34}: {diff_mb:+.2f} MB  -> target within {TARGET_MB:.0f} MB: "
        f"{'MET' if abs(diff_mb) <= TARGET_MB else 'NOT MET'}"
    )
    # growth per 100k over the second half: a leak shows as a steady slope
    half = [x for x in trace if x[0] > last_n // 2]
    if len(half) >= 2:
        slope = (half[-1][1] - half[0][1]) / 1024 / ((half[-1][0] - half[0][0]) / 100_000)
        print(f"{'slope over the second half':<34}: {slope:+.3f} MB per 100k evaluations")
    print(f"{'peak RSS (VmHWM)':<34}: {hwm_kb() / 1024:.1f} MB")
    print(f"{'throughput while measuring':<34}: {done / elapsed:,.0f} facts/s")


if __name__ == "__main__":
    main()
