"""The compiled-pack cache read, warm, in one process: what a stop spends loading the default pack
from its cache entry (:mod:`stoprule.engine.packs`), beside a commit's (before/after).

    python benchmarks/bench_pack_cache.py [--rounds 5] [--calls 300] [--baseline COMMIT]

Each round is a fresh process per tree (this one, then ``--baseline COMMIT``'s ``src/`` and
``policies/`` with this tree's built C modules), taking turns so that noise hits both alike; a
round times each step ``--calls`` times, interleaved, and reports its medians:

    read       the entry read and parsed (``packs._read``)
    load       the compiled pack from the entry (``packs.from_data``: ``tagged.load`` and the records)
    hit        a whole cache hit (``packs.compile_policy``: the stats, the read, the load)

Printed: the median over rounds of each step's median (microseconds), the entry's size, and the
ratio to the baseline. ``bench_coldstart.py --phases N`` shows the same steps in a fresh stop.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import REPO, tree_state

# one round, in a fresh process whose stoprule is the tree measured: prints the medians as JSON
CHILD = r"""
import json, os, statistics, sys, tempfile, time
os.environ["STOPRULE_CACHE_DIR"] = tempfile.mkdtemp(prefix="stoprule-bench-pack-")
os.environ.pop("STOPRULE_NO_CACHE", None)
calls = int(sys.argv[1])
from stoprule.engine import packs
root = packs.pack_path(None, {}, None)
packs.compile_policy(root)  # fills the cache
packs.compile_policy(root)
path = packs._entry_path(packs.cache_dir(), root)
found = packs._read(path)
args = (found[0]["compiled"], found[1]) if type(found) is tuple else (found["compiled"],)  # the texts apart, or not
steps = {
    "read": lambda: packs._read(path),
    "load": lambda: packs.from_data(*args),
    "hit": lambda: packs.compile_policy(root),
}
times = {k: [] for k in steps}
for _ in range(calls):
    for k, f in steps.items():
        t = time.perf_counter()
        f()
        times[k].append(time.perf_counter() - t)
out = {k: statistics.median(v) * 1e6 for k, v in times.items()}
out["bytes"] = os.path.getsize(path)
print(json.dumps(out))
"""


def _baseline_tree(commit: str, into: Path) -> Path:
    """``commit``'s src/ and policies/ under ``into``, with this tree's built C modules."""
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", commit, "src", "policies"], capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    for built in (REPO / "src").rglob("*.so"):
        target = into / built.relative_to(REPO)
        if target.parent.is_dir():
            shutil.copy2(built, target)
    return into / "src"


def _round(src: Path, calls: int) -> dict[str, float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STOPRULE_")}
    env["PYTHONPATH"] = str(src)
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(calls)], capture_output=True, text=True, env=env, cwd=src, check=True
    )
    return json.loads(proc.stdout.splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5, help="fresh processes per tree")
    ap.add_argument("--calls", type=int, default=300, help="timed calls of each step per round")
    ap.add_argument("--baseline", metavar="COMMIT", help="also measure this commit (before/after)")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="stoprule-bench-pack-"))
    try:
        trees = {"this tree": REPO / "src"}
        if args.baseline:
            trees[args.baseline] = _baseline_tree(args.baseline, tmp)
        load = os.getloadavg()
        print(
            f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, load average {load[0]:.2f} (5 min: {load[1]:.2f})"
        )
        print(f"tree: {tree_state()}; the default pack; {args.rounds} rounds of {args.calls} calls per step")
        results: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
        for _ in range(args.rounds):
            for name, src in trees.items():
                results[name].append(_round(src, args.calls))
        steps = ("read", "load", "hit")
        print(f"  {'tree':<16} {'entry':>9} " + " ".join(f"{s + ' (us)':>11}" for s in steps))
        medians = {
            name: {k: statistics.median(r[k] for r in rs) for k in (*steps, "bytes")} for name, rs in results.items()
        }
        for name, m in medians.items():
            print(f"  {name:<16} {m['bytes'] / 1024:7.1f} KB " + " ".join(f"{m[s]:11.1f}" for s in steps))
        if args.baseline:
            now, before = medians["this tree"], medians[args.baseline]
            print(
                f"  {'ratio':<16} {now['bytes'] / before['bytes']:8.2f}x "
                + " ".join(f"{now[s] / before[s]:10.2f}x" for s in steps)
            )
        print(f"load average after: {os.getloadavg()[0]:.2f}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
