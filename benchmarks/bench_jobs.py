"""Batches: ``stoprule eval --jobs N`` vs ``--jobs 1`` on a large NDJSON file, as fresh processes.

    python benchmarks/bench_jobs.py [--n 100000] [--jobs 2] [--rounds 5] [--seed 11] [--command eval|audit]

``--command audit`` times ``stoprule audit --corpus FILE --format json`` instead (the same
report is checked, its ``seconds`` aside).

Writes N generated facts (``facts.py``; a few invalid lines mixed in, so errors are on the
path too) to a temp file, checks once that both commands print the same stdout, the same
stderr and exit with the same code, then runs them alternately ``--rounds`` times and
prints the median wall time, the median CPU time of the command and its workers (wait4),
the speed-up (wall, jobs 1 / jobs N; target >= 1.8x for 2 jobs on 2 cores) and the load
average before and after: on a shared machine other processes' load caps the speed-up
(with load L on C cores, N workers get about C / max(C, L + N - 1) of a core each).
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

from _common import tree_state  # noqa: E402
from bench_coldstart import venv_bin  # noqa: E402

from facts import generate  # noqa: E402

TARGET = 1.8


def run(cmd: list[str], env: dict[str, str], out: Path | None = None) -> tuple[float, float, int]:
    t0 = time.perf_counter()
    with open(out or os.devnull, "wb") as fh, open(str(out) + ".err" if out else os.devnull, "wb") as eh:
        p = subprocess.Popen(cmd, env=env, stdout=fh, stderr=eh)
        _, status, ru = os.wait4(p.pid, 0)
    return time.perf_counter() - t0, ru.ru_utime + ru.ru_stime, os.waitstatus_to_exitcode(status)


def output(path: Path, command: str) -> object:
    """What a run printed, timings aside (``audit`` reports the seconds its analysis took)."""
    if command != "audit":
        return path.read_bytes()
    report = json.loads(path.read_bytes())
    report.pop("seconds", None)
    return report


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--command", choices=("eval", "audit"), default="eval")
    args = ap.parse_args()
    script = str(venv_bin() / "stoprule")
    tmp = Path(tempfile.mkdtemp(prefix="stoprule-jobs-"))
    try:
        lines = [json.dumps(f) for f in generate(args.n, args.seed)]
        for i in range(7, len(lines), 9973):  # an invalid line now and then: error lines keep their place
            lines[i] = '{"turn": "seven"}' if i % 2 else "not json"
        data = tmp / "facts.ndjson"
        data.write_text("\n".join(lines) + "\n")
        env = {k: v for k, v in os.environ.items() if k not in ("STOPRULE_POLICY", "STOPRULE_NO_CACHE")}
        env["STOPRULE_CACHE_DIR"] = str(tmp / "cache")
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
        base = [script, "eval", str(data)]
        if args.command == "audit":
            base = [script, "audit", "--corpus", str(data), "--format", "json"]
        one = [*base, "--jobs", "1"]
        many = [*base, "--jobs", str(args.jobs)]
        print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus; tree: {tree_state()}")
        print(
            f"stoprule {args.command}: {args.n} facts, {data.stat().st_size / 1e6:.1f} MB NDJSON; "
            f"jobs 1 vs jobs {args.jobs}"
        )
        a, b = run(one, env, tmp / "one"), run(many, env, tmp / "many")  # warm-up and the output check
        same = output(tmp / "one", args.command) == output(tmp / "many", args.command)
        same_err = (tmp / "one.err").read_bytes() == (tmp / "many.err").read_bytes()
        print(f"same stdout: {same}; same stderr: {same_err}; exit codes {a[2]} / {b[2]}")
        load0 = os.getloadavg()[0]
        res: dict[str, list[tuple[float, float, int]]] = {"1": [], str(args.jobs): []}
        for _ in range(args.rounds):
            res["1"].append(run(one, env))
            res[str(args.jobs)].append(run(many, env))
        load1 = os.getloadavg()[0]
        med = {
            k: (statistics.median(w for w, _, _ in v), statistics.median(c for _, c, _ in v)) for k, v in res.items()
        }
        for k, (w, c) in med.items():
            runs = ", ".join(f"{w:.2f}" for w, _, _ in res[k])
            print(
                f"  --jobs {k:<3} wall {w:6.2f} s   cpu (with workers) {c:6.2f} s"
                f"   {args.n / w:>9,.0f} facts/s   runs: {runs}"
            )
        ratio = med["1"][0] / med[str(args.jobs)][0]
        met = "MET" if ratio >= TARGET else "NOT MET"
        print(f"  speed-up (wall, median): {ratio:.2f}x  (target >= {TARGET}x: {met})")
        print(f"  load average before / after the timed rounds: {load0:.2f} / {load1:.2f} on {os.cpu_count()} cpus")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
