"""The console over a large ledger: the run list and a 1,000-node run, rendered within 1 s.

    python benchmarks/bench_console.py [--runs 2475] [--per-run 40] [--big 1000] [--repeat 9] [--keep DIR]

A ledger of 100,000 decisions (default: one run of 1,000 decisions, recorded as the stop hook
records them, with blocked attempts and their retries, plus 2,475 runs of 40) is written with
the ledger's own ``Recorder`` (facts from ``facts.py``), then ``stoprule console --port 0``
serves it as a separate process. Measured, each a median of ``--repeat`` (and the 90th
percentile), the 1-minute load average printed before and after:

1. the server: the run list page (``/``, page 1 of the list with its chains checked), the run
   page of the 1,000-node run (``/run``) and its graph data (``/api/graph``), over HTTP on
   loopback; the first request of each, which checks chains not yet checked, apart;
2. the browser (if Debian's chromium is installed), in headless Chromium driven by Playwright,
   as the page's own marks time it: from the navigation's start until the run list is painted
   (``page-ready``) and until the run page's graph is painted around the run's tip
   (``graph-ready``: every node placed, those in and near the view drawn), then from a click on
   "fit all" until all 1,000 nodes are drawn and painted (``graph-all``);
3. the baseline, same run: the same reads straight from the ledger's API in this process
   (``runs()`` and ``nodes(run)`` of an open ledger), and the ratio of each page to it.

Target: each page <= 1 s (server plus browser) on 2 shared cores. Beside each wall-clock median,
the CPU time it took (the console's process for a request; every browser process for a page):
on a busy machine the wall clock waits for the other processes, the CPU time much less. ``--keep DIR`` keeps (and
reuses) the generated ledger.
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import tree_state  # noqa: E402

from facts import generate  # noqa: E402

BIG = "big-run"
TARGET_S = 1.0
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]  # fmt: skip


def load() -> str:
    return f"{os.getloadavg()[0]:.2f}"


TICK_MS = 1000 / os.sysconf("SC_CLK_TCK")


def cpu_ms(pid: int | None = None, tag: str | None = None) -> float:
    """CPU time (user + system) of process ``pid``, or of every process whose command line holds
    ``tag`` (the browser's processes: its profile folder), in ms: steadier than wall time when
    the machine is busy."""
    total = 0
    paths = [f"/proc/{pid}"] if pid else glob.glob("/proc/[0-9]*")
    for d in paths:
        try:
            if tag and tag not in Path(f"{d}/cmdline").read_bytes().decode(errors="replace"):
                continue
            fields = Path(f"{d}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except (OSError, IndexError, ValueError):
            continue
    return total * TICK_MS


def build(ledger: Path, runs: int, per_run: int, big: int) -> float:
    """Record the ledger; seconds taken."""
    from stoprule import load_policy
    from stoprule.ledger import Ledger, Recorder

    ev = load_policy()
    t0 = time.perf_counter()
    facts = generate(per_run * 50 + big, 20260101)
    with Ledger.open(str(ledger)) as led:
        rec = Recorder(led, ev)
        for i in range(big):  # as the hook records: a stop after a retryable block is its retry
            rec.record_stop(BIG, facts[i % len(facts)])
        for r in range(runs):
            start = (r * per_run) % (len(facts) - per_run)
            list(rec.record_many(f"run-{r:05d}", facts[start : start + per_run]))
            if r % 250 == 0:
                done = big + (r + 1) * per_run
                print(f"  recorded {done:,} decisions ({time.perf_counter() - t0:.0f} s)", flush=True)
    return time.perf_counter() - t0


def baseline(ledger: Path, repeat: int) -> dict[str, list[float]]:
    from stoprule.ledger.backend import open_ledger

    out: dict[str, list[float]] = {"runs": [], "nodes": []}
    for _ in range(repeat):
        t0 = time.perf_counter()
        with open_ledger(str(ledger), create=False, readonly=True) as led:
            led.runs()
        out["runs"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        with open_ledger(str(ledger), create=False, readonly=True) as led:
            led.nodes(BIG)
        out["nodes"].append(time.perf_counter() - t0)
    return out


def fetch(url: str, key: str) -> tuple[float, int]:
    """Wall seconds and bytes of one GET."""
    req = urllib.request.Request(url, headers={"authorization": f"Bearer {key}"})
    t0 = time.perf_counter()
    with urllib.request.urlopen(req, timeout=60) as r:
        size = len(r.read())
    return time.perf_counter() - t0, size


def browser_times(base: str, key: str, repeat: int) -> tuple[dict[str, list[float]], dict[str, list[float]]] | None:
    """Per page: seconds from the navigation's start until drawn, as the page's own marks time it
    (``page-ready``; ``graph-ready``: painted around the tip; ``graph-complete``: every node), and
    the browser's CPU ms from navigation to the last of them."""
    exe = os.environ.get("STOPRULE_CHROMIUM") or "/usr/bin/chromium"
    if not os.path.exists(exe):
        return None
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None
    out: dict[str, list[float]] = {"/": [], "/run": [], "/run complete": []}
    cpu: dict[str, list[float]] = {"/": [], "/run": [], "/run complete": []}
    with sync_playwright() as pw, tempfile.TemporaryDirectory(prefix="bench-console-profile-") as profile:
        ctx = pw.chromium.launch_persistent_context(
            profile, executable_path=exe, args=FLAGS, headless=True, viewport={"width": 1280, "height": 860}
        )
        page = ctx.new_page()
        page.goto(f"{base}/?key={key}")
        page.wait_for_selector("body[data-ready='1']")
        for _ in range(repeat):
            for path, name, mark in (("/", "/", "page-ready"), (f"/run?run={BIG}", "/run", "graph-ready")):
                c0 = cpu_ms(tag=profile)
                page.goto(base + path)
                page.wait_for_function(f"() => performance.getEntriesByName({mark!r}).length > 0", timeout=60_000)
                cpu[name].append(cpu_ms(tag=profile) - c0)
                out[name].append(page.evaluate(f"() => performance.getEntriesByName({mark!r})[0].startTime") / 1000)
            c0 = cpu_ms(tag=profile)  # "fit all": every node of the run drawn
            start = page.evaluate("() => performance.now()")
            page.click("#fit")
            page.wait_for_function("() => performance.getEntriesByName('graph-all').length > 0", timeout=60_000)
            cpu["/run complete"].append(cpu_ms(tag=profile) - c0)
            out["/run complete"].append(
                (page.evaluate("() => performance.getEntriesByName('graph-all')[0].startTime") - start) / 1000
            )
            assert page.get_attribute("#graph", "data-drawn") == str(BIG_N)
        ctx.close()
    return out, cpu


BIG_N = 1000


def line(name: str, values: list[float], base: float | None = None) -> str:
    med = statistics.median(values)
    p90 = sorted(values)[min(len(values) - 1, round(0.9 * (len(values) - 1)))]
    ratio = f"  {med / base:6.1f}x the ledger read" if base else ""
    ok = "ok" if med <= TARGET_S else "OVER 1 s"
    return f"  {name:<34} median {med * 1000:7.1f} ms  p90 {p90 * 1000:7.1f} ms{ratio}  [{ok}]"


def main() -> int:
    global BIG_N
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=2475)
    ap.add_argument("--per-run", type=int, default=40)
    ap.add_argument("--big", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--keep", metavar="DIR", help="keep (and reuse) the generated project here")
    args = ap.parse_args()
    BIG_N = args.big
    total = args.big + args.runs * args.per_run
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, load average {load()}")
    print(f"tree: {tree_state()}")
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-console-"))
    state = work / ".stoprule"
    ledger = state / "ledger.db"
    try:
        if not ledger.exists():
            state.mkdir(parents=True, exist_ok=True)
            print(f"recording {total:,} decisions: {args.runs:,} runs of {args.per_run} and one of {args.big:,} ...")
            took = build(ledger, args.runs, args.per_run, args.big)
            print(f"  recorded in {took:.0f} s ({total / took:,.0f} decisions/s)")
        else:
            print(f"reusing {ledger}")
        env = {k: v for k, v in os.environ.items() if not k.startswith("STOPRULE_")}
        proc = subprocess.Popen(
            [sys.executable, "-m", "stoprule", "console", "--port", "0"],
            cwd=work,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        try:
            assert proc.stdout is not None
            link = proc.stdout.readline().strip()
            m = re.fullmatch(r"(http://127\.0\.0\.1:\d+)/\?key=([\w-]+)", link)
            if not m:
                raise SystemExit(f"stoprule console did not print its link: {link!r}")
            base_url, key = m.groups()
            raw = baseline(ledger, args.repeat)
            raw_runs, raw_nodes = statistics.median(raw["runs"]), statistics.median(raw["nodes"])
            print(f"\nload average {load()}; {total:,} decisions in {args.runs + 1:,} runs; median of {args.repeat}")
            print("the ledger read (baseline, in process):")
            print(line("runs() of every run", raw["runs"]))
            print(line(f"nodes() of the {args.big:,}-node run", raw["nodes"]))
            first_list, size_list = fetch(base_url + "/", key)
            first_run, size_run = fetch(f"{base_url}/run?run={BIG}", key)
            print("the server (HTTP on loopback):")
            print(
                f"  first requests (chains checked):   / {first_list * 1000:.0f} ms ({size_list:,} bytes), "
                f"/run {first_run * 1000:.0f} ms ({size_run:,} bytes)"
            )
            pages = {"/ (run list, page 1)": "/", f"/run ({args.big:,} nodes)": f"/run?run={BIG}",
                     "/api/graph (its DAG)": f"/api/graph?run={BIG}"}  # fmt: skip
            served: dict[str, list[float]] = {name: [] for name in pages}
            server_cpu: dict[str, list[float]] = {name: [] for name in pages}
            for _ in range(args.repeat):
                for name, path in pages.items():
                    c0 = cpu_ms(proc.pid)
                    served[name].append(fetch(base_url + path, key)[0])
                    server_cpu[name].append(cpu_ms(proc.pid) - c0)
            for name, values in served.items():
                print(
                    line(name, values, raw_nodes if "run" in name.split()[0] or "graph" in name else raw_runs)
                    + f"  server CPU {statistics.median(server_cpu[name]):.0f} ms"
                )
            measured = browser_times(base_url, key, args.repeat)
            if measured is None:
                print("the browser: no chromium (apt-get install -y chromium) or no playwright: not measured")
            else:
                shown, cpu = measured
                print("the browser (headless Chromium: navigation until drawn; CPU: every browser process):")
                print(
                    line("/ (run list)", shown["/"], raw_runs) + f"  browser CPU {statistics.median(cpu['/']):.0f} ms"
                )
                print(
                    line(f"/run ({args.big:,} nodes: opens on its tip)", shown["/run"], raw_nodes)
                    + f"  browser CPU {statistics.median(cpu['/run']):.0f} ms"
                )
                print(
                    line(f"  then fit all: {args.big:,} nodes drawn", shown["/run complete"], raw_nodes)
                    + f"  browser CPU {statistics.median(cpu['/run complete']):.0f} ms"
                )
            print(f"load average after: {load()}")
        finally:
            proc.terminate()
            proc.wait(10)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
