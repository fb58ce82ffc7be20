"""Decision ledger: recorded decisions per second and the latency of one recorded ``eval``.

    python benchmarks/bench_ledger.py [--n 20000] [--procs 4] [--calls 200] [--seed 20250101]

1. batch, one process: ``stoprule eval --run R --ledger L facts.ndjson`` over N facts, timed
   end to end (interpreter start-up included); target >= 1,000 recorded decisions/s;
2. batch, --procs processes at once, N/procs facts each: into different runs, then into one run;
3. latency: --calls sequential ``stoprule eval --run R --ledger L fact.json`` processes (one
   decision each, the hook use), p50/p99, beside plain ``stoprule eval fact.json``;
4. in-process (no start-up): ``Recorder.record_many`` with the shipped synchronous setting and
   group commit, and one transaction per decision under synchronous=FULL and NORMAL, to show
   what the setting costs.

Every ledger is checked with ``log verify`` afterwards. Runs in a private temp dir.
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
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from facts import generate  # noqa: E402

TARGET = 1_000


def venv_bin() -> Path:
    """The venv's bin dir: the running interpreter's if it is a venv, else the repo's .venv."""
    here = Path(sys.executable).parent
    return here if (here / "stoprule").exists() else HERE.parent / ".venv" / "bin"


def run(cmd: list[str], env: dict[str, str], cwd: str) -> float:
    """Wall seconds of one command; fails loudly on exit code 2+."""
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - t0
    if proc.returncode not in (0, 1):
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr.decode(errors='replace')}")
    return wall


def parallel(cmds: list[list[str]], env: dict[str, str], cwd: str) -> float:
    t0 = time.perf_counter()
    procs = [subprocess.Popen(c, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) for c in cmds]
    for p, c in zip(procs, cmds, strict=True):
        _, err = p.communicate()
        if p.returncode not in (0, 1):
            raise SystemExit(f"failed ({p.returncode}): {' '.join(c)}\n{err.decode(errors='replace')}")
    return time.perf_counter() - t0


def verify(stoprule: str, ledger: Path, env: dict[str, str], cwd: str) -> str:
    proc = subprocess.run(
        [stoprule, "log", "verify", "--ledger", str(ledger)], env=env, cwd=cwd, capture_output=True, text=True
    )
    if proc.returncode != 0:
        raise SystemExit(f"log verify failed:\n{proc.stdout}{proc.stderr}")
    return proc.stdout.strip()


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, round(q * (len(s) - 1)))]


def in_process(facts: list[dict], work: Path) -> None:
    from stoprule import load_policy
    from stoprule.ledger import Ledger, Recorder, store

    ev = load_policy()
    shipped = store.SYNCHRONOUS
    print(f"\n== in-process Recorder.record_many (no interpreter start-up), {len(facts)} facts")
    rows = [(shipped, 256, facts), ("FULL", 1, facts[:2000]), ("NORMAL", 1, facts[:2000]), ("NORMAL", 256, facts)]
    try:
        for sync, group, subset in rows:
            store.SYNCHRONOUS = sync
            path = work / f"inproc-{sync}-{group}.db"
            with Ledger.open(str(path)) as led:
                rec = Recorder(led, ev)
                t0 = time.perf_counter()
                n = sum(1 for _ in rec.record_many("r", subset, group=group))
                dt = time.perf_counter() - t0
            label = "group commit (256/txn)" if group > 1 else "one transaction per decision"
            mark = "  <- shipped" if sync == shipped and group > 1 else ""
            print(f"  synchronous={sync:<6} {label:<30} {n / dt:>9,.0f} decisions/s{mark}")
    finally:
        store.SYNCHRONOUS = shipped


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--procs", type=int, default=4)
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--seed", type=int, default=20250101)
    args = ap.parse_args()

    from stoprule.ledger.store import SYNCHRONOUS

    stoprule = str(venv_bin() / "stoprule")
    work = Path(tempfile.mkdtemp(prefix="bench-ledger-"))
    env = {k: v for k, v in os.environ.items() if k not in ("STOPRULE_POLICY", "STOPRULE_LEDGER")}
    env["STOPRULE_CACHE_DIR"] = str(work / "cache")
    cwd = str(work)
    try:
        facts = generate(args.n, seed=args.seed)
        all_file = work / "facts.ndjson"
        all_file.write_text("".join(json.dumps(f) + "\n" for f in facts))
        per = args.n // args.procs
        parts = []
        for i in range(args.procs):
            part = work / f"part{i}.ndjson"
            part.write_text("".join(json.dumps(f) + "\n" for f in facts[i * per : (i + 1) * per]))
            parts.append(part)
        one_fact = work / "fact.json"
        one_fact.write_text(json.dumps(facts[0]))
        run([stoprule, "eval", str(one_fact)], env, cwd)  # warm the compiled-pack cache

        print(
            f"stoprule ledger benchmark: {args.n} facts, synchronous={SYNCHRONOUS}, WAL, "
            f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs"
        )

        led = work / "one.db"
        wall = run([stoprule, "eval", "--run", "batch", "--ledger", str(led), str(all_file)], env, cwd)
        rate = args.n / wall
        print(
            f"\n== batch, 1 process: {args.n} decisions in {wall:.2f}s = {rate:,.0f} decisions/s "
            f"(target >= {TARGET:,}: {'met' if rate >= TARGET else 'NOT met'}); {verify(stoprule, led, env, cwd)}"
        )

        for label, same in (("different runs", False), ("one shared run", True)):
            led = work / f"par-{int(same)}.db"
            cmds = [
                [stoprule, "eval", "--run", "shared" if same else f"p{i}", "--ledger", str(led), str(p)]
                for i, p in enumerate(parts)
            ]
            wall = parallel(cmds, env, cwd)
            total = per * args.procs
            print(
                f"== batch, {args.procs} processes, {label}: {total} decisions in {wall:.2f}s = "
                f"{total / wall:,.0f} decisions/s; {verify(stoprule, led, env, cwd)}"
            )

        led = work / "latency.db"
        plain, recorded = [], []
        for _ in range(args.calls):  # interleaved, so machine noise spreads evenly
            plain.append(run([stoprule, "eval", str(one_fact)], env, cwd))
            recorded.append(run([stoprule, "eval", "--run", "hook", "--ledger", str(led), str(one_fact)], env, cwd))
        print(f"\n== latency of one `stoprule eval` process, {args.calls} calls each (ms)")
        for name, xs in (("eval (no ledger)", plain), ("eval --run (recorded)", recorded)):
            print(
                f"  {name:<24} p50 {1e3 * statistics.median(xs):6.1f}   p99 {1e3 * pct(xs, 0.99):6.1f}   "
                f"mean {1e3 * statistics.fmean(xs):6.1f}"
            )
        print(f"  recording adds (p50)     {1e3 * (statistics.median(recorded) - statistics.median(plain)):6.1f}")
        print(f"  {verify(stoprule, led, env, cwd)}")

        in_process(facts, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
