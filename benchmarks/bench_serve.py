"""``stoprule serve`` measured: decisions/s of one worker vs in-process ``evaluate``, single facts
on kept-alive connections (1 and 2 workers), 2 workers vs 1, latency under 200 concurrent
clients, two fault runs on a PostgreSQL ledger (kill -9 of a worker under load; a PostgreSQL
restart under load), and recording agents: recorded decisions/s and p50/p99 with 50 and 200
agents each recording single stops into its own run, against this tree and a baseline commit.

    .venv/bin/python benchmarks/bench_serve.py                  # ~3 min; needs the serve and postgres extras
    .venv/bin/python benchmarks/bench_serve.py --no-faults      # without PostgreSQL
    .venv/bin/python benchmarks/bench_serve.py --priority -20   # on a shared machine (root): the servers first
    .venv/bin/python benchmarks/bench_serve.py --only-scaling --wait-quiet 120   # 1 vs 2 workers when idle
    .venv/bin/python benchmarks/bench_serve.py --recording --baseline 60c3b82 --priority -20   # before/after
    .venv/bin/python benchmarks/bench_serve.py --keepalive --baseline fbd8b2b     # kept-alive facts, before/after

Targets (docs/serve.md): the batch endpoint's cost per decision <= 3x in-process; a single fact
<= 2 ms p50 on loopback; 2 workers >= 1.8x one on 2 cores; fault runs: 0 lost or duplicated
ledger events among the requests that got a 200, and every chain verifies.

The load generator is a raw asyncio HTTP/1.1 client (keep-alive, pre-encoded requests, batches
of 300 facts), so the client costs the shared cores little; its CPU per decision is measured
and printed beside the server's, with the CPU other jobs took during each run. Both servers run
at once and their repeats alternate. Medians of repeats; ratios in the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO / "tests"))

from _common import print_header  # noqa: E402

from facts import generate  # noqa: E402

TOKEN = "srv1_bench-token"
PACK = str(REPO / "policies")


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    def __init__(self, workers: int, ledger: str | None = None, env: dict[str, str] | None = None) -> None:
        from stoprule.config.serve import hash_token

        self.dir = tempfile.mkdtemp(prefix="bench-serve-")
        cfg = Path(self.dir, "serve.yaml")
        text = f"policy: {PACK}\ntokens: [{{name: bench, sha256: '{hash_token(TOKEN)}'}}]\n"
        text += "limits: {max_batch: 100000, max_body_bytes: 67108864, timeout_ms: 60000}\n"
        cfg.write_text(text + (f"ledger: '{ledger}'\n" if ledger else ""))
        self.port = _port()
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "stoprule",
                "serve",
                "--config",
                str(cfg),
                "--port",
                str(self.port),
                "--workers",
                str(workers),
            ],
            env={**os.environ, **(env or {})},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/healthz", timeout=1):
                    break
            except OSError:
                time.sleep(0.1)
        else:
            raise RuntimeError("the server did not start")
        seen: set[int] = set()
        while len(seen) < workers:  # every worker up: fresh connections reach each of them
            if time.monotonic() > deadline:
                raise RuntimeError(f"only {len(seen)} of {workers} workers answered")
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/healthz", timeout=5) as r:
                seen.add(json.load(r)["worker"])

    def workers(self) -> list[int]:
        out = []
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                stat = Path(f"/proc/{pid}/stat").read_text()
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == self.proc.pid and b"resource_tracker" not in cmd:
                out.append(int(pid))
        return out or [self.proc.pid]  # one worker: it runs in the server's own process

    def stop(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(20)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


def request(path: str, body: bytes) -> bytes:
    return (
        f"POST {path} HTTP/1.1\r\nhost: b\r\nauthorization: Bearer {TOKEN}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\n\r\n"
    ).encode() + body


async def _read(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return status, await reader.readexactly(length)


async def _client(port: int, reqs: list[bytes], lat: list[float], results: list | None = None) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        for req in reqs:
            t0 = time.perf_counter()
            writer.write(req)
            await writer.drain()
            status, body = await _read(reader)
            lat.append(time.perf_counter() - t0)
            if results is not None:
                results.append((status, body))
    finally:
        writer.close()


def load(port: int, per_client: list[list[bytes]]) -> tuple[float, list[float]]:
    """Run every client's requests concurrently; (wall seconds, latencies)."""
    lat: list[float] = []

    async def main() -> None:
        await asyncio.gather(*(_client(port, reqs, lat) for reqs in per_client))

    t0 = time.perf_counter()
    asyncio.run(main())
    return time.perf_counter() - t0, lat


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))]


def machine_busy() -> float:
    """CPU seconds every process on the machine has spent so far (all cores; /proc/stat)."""
    with open("/proc/stat") as fh:
        f = [int(x) for x in fh.readline().split()[1:]]
    return (sum(f) - f[3] - f[4]) / os.sysconf("SC_CLK_TCK")  # minus idle and iowait


def per_worker_cpu(srv: Server) -> dict[int, tuple[float, float]]:
    """Per worker: (seconds on a CPU, seconds runnable but waiting for one) so far (/proc/PID/schedstat)."""
    out = {}
    for pid in srv.workers():
        try:
            oncpu, waiting, _ = Path(f"/proc/{pid}/schedstat").read_text().split()
        except (OSError, ValueError):
            continue
        out[pid] = (int(oncpu) / 1e9, int(waiting) / 1e9)
    return out


def wait_quiet(limit: float, cores: float = 0.25) -> float:
    """Wait (at most ``limit`` seconds) for a half second in which the machine used less than
    ``cores`` of CPU; the CPU it used in the last half second, in cores."""
    end = time.monotonic() + limit
    while True:
        b0, t0 = machine_busy(), time.monotonic()
        time.sleep(0.5)
        used = (machine_busy() - b0) / (time.monotonic() - t0)
        if used < cores or time.monotonic() > end:
            return used


def timed_load(port: int, req: bytes, conns: int, seconds: float) -> tuple[float, int]:
    """``conns`` keep-alive connections sending ``req`` back to back for ``seconds`` (a fixed time, not
    a fixed number of requests: no worker runs out of work early); (wall seconds, answers)."""
    done = 0

    async def conn(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, end: float) -> None:
        nonlocal done
        while time.perf_counter() < end:
            writer.write(req)
            await writer.drain()
            status, _ = await _read(reader)
            assert status == 200, status
            done += 1
        writer.close()

    async def main() -> float:
        pairs = [await asyncio.open_connection("127.0.0.1", port) for _ in range(conns)]
        t0 = time.perf_counter()
        await asyncio.gather(*(conn(r, w, t0 + seconds) for r, w in pairs))
        return time.perf_counter() - t0

    wall = asyncio.run(main())
    return wall, done


def throughput_run(srv: Server, req: bytes, per_batch: int, conns: int, seconds: float) -> dict[str, float]:
    """``conns`` keep-alive connections sending pre-encoded batches back to back for ``seconds``:
    decisions/s, the CPU each side spent per decision, and what the rest of the machine took."""
    w0, m0, c0 = per_worker_cpu(srv), machine_busy(), time.process_time()
    wall, answers = timed_load(srv.port, req, conns, seconds)
    w1, m1, c1 = per_worker_cpu(srv), machine_busy(), time.process_time()
    n = answers * per_batch
    zero = (0.0, 0.0)
    oncpu = [w1[p][0] - w0.get(p, zero)[0] for p in w1]
    waited = [w1[p][1] - w0.get(p, zero)[1] for p in w1]
    server = sum(oncpu)
    client = c1 - c0
    return {
        "rate": n / wall,
        "server_us": server / n * 1e6,
        "client_us": client / n * 1e6,
        "others_cores": max(m1 - m0 - server - client, 0.0) / wall,  # other jobs' CPU while it ran, in cores
        "split": min(oncpu) / max(max(oncpu), 1e-9),  # least / most busy worker's CPU (1.0: even)
        # per worker, the share of the run it had no request to work on (neither on a CPU nor waiting for one)
        "idle": max(max(wall - c - w, 0.0) for c, w in zip(oncpu, waited, strict=True)) / wall,
        "waited": max(waited) / wall,  # the most any worker spent runnable, waiting for a core
        # the rate had no worker waited for a core: each worker's decisions (its share of the CPU, a
        # decision costing every worker the same) over the time it was not waiting
        "unqueued_rate": sum(n * c / server / max(wall - w, 1e-9) for c, w in zip(oncpu, waited, strict=True)),
        "wall": wall,
    }


def measure(args: argparse.Namespace) -> dict[str, Any]:
    from stoprule.engine.packs import load_policy

    facts = generate(args.facts)
    ev = load_policy(PACK)
    lines = [json.dumps(f).encode() for f in facts]
    per = args.batch
    batch = request("/v1/evaluate/batch", b"\n".join(lines[:per]))
    out: dict[str, Any] = {}
    inproc, inproc_cpu = [], []
    for _ in range(args.repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        for f in facts:
            ev.evaluate(f)
        inproc.append(args.facts / (time.perf_counter() - t0))
        inproc_cpu.append((time.process_time() - c0) / args.facts)
    out["inproc"] = statistics.median(inproc)
    out["inproc_cpu_us"] = statistics.median(inproc_cpu) * 1e6
    # both servers up at once, their runs alternated: noise from other jobs hits both alike
    servers = {1: Server(1), 2: Server(2)}
    if args.priority is not None:  # the servers' sessions and this one (the client) ahead of other jobs
        for pid in (servers[1].proc.pid, servers[2].proc.pid, os.getpid()):
            Path(f"/proc/{pid}/autogroup").write_text(str(args.priority))
    try:
        for w, srv in servers.items():
            load(srv.port, [[batch] * 4] * (4 * w))  # warm every worker
        runs: dict[int, list[dict[str, float]]] = {1: [], 2: []}
        for _ in range(args.repeats):
            if args.wait_quiet:
                wait_quiet(args.wait_quiet)
            for w, srv in servers.items():
                runs[w].append(throughput_run(srv, batch, per, args.conns, args.seconds))
        out["runs"] = runs
        for w in (1, 2):
            for key in runs[w][0]:
                out[f"{key}_{w}w"] = statistics.median(r[key] for r in runs[w])
        # the quietest pair: the repeat where other jobs took the least CPU
        quiet = min(range(args.repeats), key=lambda i: runs[1][i]["others_cores"] + runs[2][i]["others_cores"])
        out["quiet"] = (runs[1][quiet], runs[2][quiet])
        if args.only_scaling:
            return out
        single = [request("/v1/evaluate", ln) for ln in lines[:2000]]
        for w, srv in servers.items():  # one keep-alive connection after another: no delayed-ACK stall on either
            p50s, rates = [], []
            for _ in range(args.repeats):
                wall, lat = load(srv.port, [single[i::8] for i in range(8)])
                p50s.append(pct(lat, 0.5))
                rates.append(len(single) / wall)
            out[f"single_p50_ms_{w}w"] = statistics.median(p50s) * 1000
            out[f"single_rate_{w}w"] = statistics.median(rates)
        srv = servers[2]
        clients = [[request("/v1/evaluate", lines[(c * 20 + i) % len(lines)]) for i in range(20)] for c in range(200)]
        walls, p50, p99 = [], [], []
        for _ in range(args.repeats):
            wall, lat = load(srv.port, clients)
            walls.append(4000 / wall)
            p50.append(pct(lat, 0.5))
            p99.append(pct(lat, 0.99))
        out["c200_rate"] = statistics.median(walls)
        out["c200_p50_ms"] = statistics.median(p50) * 1000
        out["c200_p99_ms"] = statistics.median(p99) * 1000
    finally:
        for srv in servers.values():
            srv.stop()
    return out


# ---------------------------------------------------------------------- fault runs


def fault_run(kind: str, seconds: float = 6.0) -> dict[str, object]:
    """Record under load from 16 connections into one run while a worker is SIGKILLed (``kill``)
    or PostgreSQL restarts (``pg``); then compare the 200s with the ledger."""
    from pgcluster import cluster
    from stoprule.ledger.postgres import PgLedger
    from stoprule.ledger.verification import verify

    keys = os.path.join(tempfile.mkdtemp(), "pg.keys")
    os.environ["STOPRULE_LEDGER_KEYS"] = keys
    with cluster() as pg:
        url = pg.new_database()
        migrate(url, {"STOPRULE_LEDGER_KEYS": keys})
        srv = Server(2, ledger=url, env={"STOPRULE_LEDGER_KEYS": keys})
        sent: dict[int, int] = {}  # i -> status
        info: dict[str, object] = {}
        stop_at = time.monotonic() + seconds
        counter = iter(range(10**9))

        async def conn() -> None:
            while time.monotonic() < stop_at:
                try:
                    reader, writer = await asyncio.open_connection("127.0.0.1", srv.port)
                except OSError:
                    await asyncio.sleep(0.05)
                    continue
                try:
                    while time.monotonic() < stop_at:
                        i = next(counter)
                        sent[i] = 0  # no answer (yet)
                        body = json.dumps({"status": "implemented", "i": i}).encode()
                        writer.write(request("/v1/evaluate?run=fault", body))
                        await writer.drain()
                        sent[i], _ = await asyncio.wait_for(_read(reader), 30)
                except (OSError, asyncio.IncompleteReadError, asyncio.TimeoutError):
                    pass
                finally:
                    writer.close()

        async def fault() -> None:
            await asyncio.sleep(seconds / 3)
            if kind == "none":
                return
            if kind == "kill":
                before = srv.workers()
                os.kill(before[0], signal.SIGKILL)
                info["killed"] = before[0]
                await asyncio.sleep(seconds / 3)
                info["workers"] = f"{len(before)} before, {len(srv.workers())} after (replaced)"
            else:
                await asyncio.to_thread(pg.ctl, "-m", "fast", "restart")

        async def main() -> None:
            await asyncio.gather(*(conn() for _ in range(16)), fault())

        try:
            asyncio.run(main())
        finally:
            srv.stop()
        with PgLedger.open(url) as led:
            recorded = [json.loads(fact)["i"] for _, fact in led.records("fault")]
            report = verify(led)
            size = led.connection.execute(
                "SELECT sum(pg_total_relation_size(c)) FROM unnest(ARRAY['facts','events','nodes','edges','runs',"
                "'anchors','pending','head']) AS c"
            ).fetchone()[0]
    ok = {i for i, s in sent.items() if s == 200}
    return {
        "requests": len(sent),
        "200": len(ok),
        "other": sum(1 for s in sent.values() if s not in (0, 200)),
        "no answer": sum(1 for s in sent.values() if s == 0),
        "recorded": len(recorded),
        "lost": len(ok - set(recorded)),
        "duplicated": len(recorded) - len(set(recorded)),
        "verify": "ok" if report.ok else report.breaks[0].format(),
        "recorded/s": round(len(recorded) / seconds),
        "bytes/event": round(int(size) / max(len(recorded), 1)),
        **info,
    }


# ---------------------------------------------------------------------- recording agents


def migrate(url: str, env: dict[str, str], *, required: bool = True) -> None:
    """``stoprule serve migrate``: the PostgreSQL schema a server (of this tree, or of the tree
    ``$PYTHONPATH`` in ``env`` names) records into."""
    argv = [sys.executable, "-m", "stoprule", "serve", "migrate", "--ledger", url]
    if subprocess.run(argv, env={**os.environ, **env}, capture_output=True).returncode != 0 and required:
        raise RuntimeError("stoprule serve migrate failed")


def _tree(ref: str) -> str:
    """``src/`` of commit ``ref`` in a temporary directory, with this tree's compiled engine modules
    (untracked build outputs): a server of that commit for a before/after in the same run. Its
    ``serve`` extra had no httptools or uvloop: they are hidden from it (uvicorn then runs h11 on
    asyncio's loop, as that commit installed it)."""
    out = tempfile.mkdtemp(prefix="bench-serve-ref-")
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", ref, "src", "pyproject.toml"], capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", out], input=archive.stdout, check=True)
    engine = REPO / "src" / "stoprule" / "engine"
    for built in engine.glob("*.so"):
        shutil.copy(built, Path(out, "src", "stoprule", "engine", built.name))
    extras = Path(out, "pyproject.toml").read_text()
    for module in ("httptools", "uvloop"):
        if module not in extras:
            Path(out, "src", module).mkdir()
            Path(out, "src", module, "__init__.py").write_text(f"raise ImportError('{module}: not in {ref}')\n")
    return str(Path(out, "src"))


def _cpu_of(pids: list[int]) -> float:
    """CPU seconds the processes ``pids`` have spent so far (/proc/PID/stat: user + system)."""
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def _postgres_pids() -> list[int]:
    out = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"postgres"):
                    out.append(int(pid))
            except OSError:
                pass
    return out


def agents_run(
    port: int, agents: int, seconds: float, warmup: float, fact: bytes, srv: Server | None = None
) -> dict[str, Any]:
    """``agents`` keep-alive connections, each recording single facts into its own run back to back
    (a closed loop: an agent sends its next stop when the last one is answered) for ``warmup`` +
    ``seconds``; decisions/s and latency percentiles over the measured ``seconds``, and (with
    ``srv``) the CPU the server's workers, PostgreSQL and this client spent per decision."""
    lat: list[float] = []
    statuses: dict[int, int] = {}
    base = f"bench-{os.getpid()}-{time.monotonic_ns()}"

    async def agent(i: int, start: float, end: float) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        req = request(f"/v1/evaluate?run={base}-{i}", fact)
        try:
            while (t0 := time.perf_counter()) < end:
                writer.write(req)
                await writer.drain()
                status, _ = await _read(reader)
                if t0 >= start:
                    lat.append(time.perf_counter() - t0)
                    statuses[status] = statuses.get(status, 0) + 1
        finally:
            writer.close()

    async def main() -> float:
        t0 = time.perf_counter()
        await asyncio.gather(*(agent(i, t0 + warmup, t0 + warmup + seconds) for i in range(agents)))
        return time.perf_counter() - t0 - warmup

    b0 = machine_busy()
    workers, pg = (srv.workers() if srv else []), _postgres_pids()
    w0, p0, c0 = _cpu_of(workers), _cpu_of(pg), time.process_time()
    wall = _run(main())
    pg += [pid for pid in _postgres_pids() if pid not in pg]  # backends the run opened: all of their CPU
    w1, p1, c1 = _cpu_of(workers), _cpu_of(pg), time.process_time()
    busy = (machine_busy() - b0) / (wall + warmup)
    ok = statuses.get(200, 0)
    n = max(sum(statuses.values()), 1) * (wall + warmup) / wall  # every answer, warm-up included
    return {
        "agents": agents,
        "rate": ok / wall,
        "p50_ms": pct(lat, 0.5) * 1000,
        "p99_ms": pct(lat, 0.99) * 1000,
        "errors": {k: v for k, v in statuses.items() if k != 200},
        "busy_cores": busy,
        "server_us": (w1 - w0) / n * 1e6,
        "postgres_us": (p1 - p0) / n * 1e6,
        "client_us": (c1 - c0) / n * 1e6,
        # the load generator is one thread: near 1.0 it would be what limits the rate; far below, it is not
        "client_cores": (c1 - c0) / (wall + warmup),
    }


def _run(coro: Any) -> Any:
    """``coro`` on uvloop where installed (the load generator's own cost per request: about half of
    asyncio's), else on asyncio's loop."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coro)
    loop = uvloop.new_event_loop()
    try:
        return loop.run_until_complete(coro)
    finally:
        loop.close()


def recording(args: argparse.Namespace) -> None:
    """Recorded decisions/s and p50/p99 with ``--agents`` recording agents against ``--workers 2`` on a
    PostgreSQL ledger: this tree, and with ``--baseline REF`` the server of that commit, alternated."""
    from pgcluster import cluster

    fact = json.dumps({"status": "implemented", "task_id": "T1", "turn": 3, "max_turns": 40}).encode()
    trees = {"this tree": None}
    if args.baseline:
        trees = {f"baseline {args.baseline}": _tree(args.baseline), **trees}
    keys = os.path.join(tempfile.mkdtemp(), "pg.keys")
    results: dict[str, list[dict[str, Any]]] = {name: [] for name in trees}
    with cluster() as pg:
        if args.priority is not None:  # the database's session, and this one (the client), ahead of other jobs
            postmaster = int(Path(pg.data, "postmaster.pid").read_text().split()[0])
            for pid in (postmaster, os.getpid()):
                Path(f"/proc/{pid}/autogroup").write_text(str(args.priority))
        for _ in range(args.repeats):
            for name, src in trees.items():
                url = pg.new_database()
                env = {"STOPRULE_LEDGER_KEYS": keys}
                if src is not None:
                    env["PYTHONPATH"] = src
                # the schema, made as its owner (a baseline from before `serve migrate` made it itself)
                migrate(url, env, required=src is None)
                srv = Server(2, ledger=url, env=env)
                if args.priority is not None:
                    Path(f"/proc/{srv.proc.pid}/autogroup").write_text(str(args.priority))
                try:
                    for agents in args.agents:
                        if args.wait_quiet:
                            wait_quiet(args.wait_quiet)
                        r = agents_run(srv.port, agents, args.record_seconds, 2.0, fact, srv)
                        results[name].append(r)
                        print(
                            f"  {name}: {agents} agents: {r['rate']:,.0f} recorded/s, p50 {r['p50_ms']:.1f} ms, "
                            f"p99 {r['p99_ms']:.1f} ms, errors {r['errors']}; CPU per decision: workers "
                            f"{r['server_us']:.0f} us, PostgreSQL {r['postgres_us']:.0f} us, client "
                            f"{r['client_us']:.0f} us (the client {r['client_cores']:.2f} of a core); machine "
                            f"{r['busy_cores']:.2f} cores busy, load "
                            f"{os.getloadavg()[0]:.2f}",
                            flush=True,
                        )
                finally:
                    srv.stop()
    print("recording agents (medians over repeats):")
    for agents in args.agents:
        row = {}
        for name, runs in results.items():
            mine = [r for r in runs if r["agents"] == agents]
            row[name] = {
                k: statistics.median(r[k] for r in mine)
                for k in ("rate", "p50_ms", "p99_ms", "server_us", "postgres_us", "client_us", "client_cores")
            }
            print(
                f"  {agents} agents, {name}: {row[name]['rate']:,.0f} recorded decisions/s, p50 "
                f"{row[name]['p50_ms']:.1f} ms, p99 {row[name]['p99_ms']:.1f} ms; CPU per decision: workers "
                f"{row[name]['server_us']:.0f} us, PostgreSQL {row[name]['postgres_us']:.0f} us, client "
                f"{row[name]['client_us']:.0f} us ({row[name]['client_cores']:.2f} of a core)"
            )
        if len(row) == 2:
            (a, before), (b, after) = row.items()
            print(
                f"  {agents} agents: {after['rate'] / before['rate']:.2f}x the decisions/s of the baseline; p99 "
                f"{before['p99_ms']:.0f} -> {after['p99_ms']:.0f} ms"
            )


def keepalive(args: argparse.Namespace) -> None:
    """Single facts over 8 kept-alive connections against 1 and 2 workers: this tree, and with
    ``--baseline REF`` the server of that commit (where an answer on a kept-alive connection to
    2 workers waited for the client's delayed ACK), alternated."""
    facts = [json.dumps(f).encode() for f in generate(2000)]
    single = [request("/v1/evaluate", f) for f in facts]
    trees: dict[str, str | None] = {"this tree": None}
    if args.baseline:
        trees = {f"baseline {args.baseline}": _tree(args.baseline), **trees}
    results: dict[tuple[str, int], list[tuple[float, float]]] = {}
    servers = {
        (name, w): Server(w, env={"PYTHONPATH": src} if src else None) for name, src in trees.items() for w in (1, 2)
    }
    try:
        if args.priority is not None:
            for srv in servers.values():
                Path(f"/proc/{srv.proc.pid}/autogroup").write_text(str(args.priority))
        for _ in range(args.repeats):
            for key, srv in servers.items():
                wall, lat = load(srv.port, [single[i::8] for i in range(8)])
                results.setdefault(key, []).append((len(single) / wall, pct(lat, 0.5) * 1000))
    finally:
        for srv in servers.values():
            srv.stop()
    print(f"single facts over 8 kept-alive connections (medians of {args.repeats} alternated repeats):")
    for name in trees:
        rate = {w: statistics.median(r for r, _ in results[name, w]) for w in (1, 2)}
        p50 = {w: statistics.median(q for _, q in results[name, w]) for w in (1, 2)}
        print(
            f"  {name}: 1 worker {rate[1]:,.0f} requests/s, p50 {p50[1]:.2f} ms; 2 workers {rate[2]:,.0f} "
            f"requests/s, p50 {p50[2]:.2f} ms; 2 workers vs 1: {rate[2] / rate[1]:.2f}x"
        )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--facts", type=int, default=2000, help="generated facts (default 2000)")
    p.add_argument("--seconds", type=float, default=3.0, help="length of each throughput run (default 3 s)")
    p.add_argument("--batch", type=int, default=300, help="facts per batch request (default 300)")
    p.add_argument("--conns", type=int, default=32, help="keep-alive connections for the throughput runs (default 32)")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--no-faults", action="store_true")
    p.add_argument(
        "--wait-quiet",
        type=float,
        default=0.0,
        metavar="S",
        help="before each 1-vs-2-worker pair, wait up to S seconds for the machine to be idle",
    )
    p.add_argument("--only-scaling", action="store_true", help="only the 1-vs-2-worker runs")
    p.add_argument(
        "--priority",
        type=int,
        metavar="NICE",
        help="give the servers' and this process's sessions this autogroup nice value (e.g. -10, needs "
        "root): on a shared machine, the servers then take the cores other jobs hold",
    )
    p.add_argument(
        "--recording",
        action="store_true",
        help="only the recording agents: decisions/s and p50/p99 on a PostgreSQL ledger",
    )
    p.add_argument("--agents", type=int, nargs="+", default=[50, 200], help="recording agents (default 50 200)")
    p.add_argument("--record-seconds", type=float, default=10.0, help="length of each recording run (default 10 s)")
    p.add_argument(
        "--keepalive", action="store_true", help="only single facts over kept-alive connections, 1 and 2 workers"
    )
    p.add_argument(
        "--baseline", metavar="REF", help="with --recording or --keepalive: also the server of commit REF, alternated"
    )
    args = p.parse_args()
    print_header(PACK)
    if args.keepalive:
        load0 = os.getloadavg()
        keepalive(args)
        print(
            f"load average before: {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f}; after: "
            + " ".join(f"{x:.2f}" for x in os.getloadavg())
        )
        return
    if args.recording:
        load0 = os.getloadavg()
        recording(args)
        print(
            f"load average before: {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f}; after: "
            + " ".join(f"{x:.2f}" for x in os.getloadavg())
        )
        return
    load0 = os.getloadavg()
    m = measure(args)
    per_in, per_1 = 1e6 / m["inproc"], 1e6 / m["rate_1w"]
    print(
        f"load average before: {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f}; after: "
        + " ".join(f"{x:.2f}" for x in os.getloadavg())
    )
    print(
        f"in-process evaluate:               {m['inproc']:>9,.0f} decisions/s ({per_in:.1f} us each, "
        f"{m['inproc_cpu_us']:.1f} us CPU)"
    )
    print(
        f"batch endpoint ({args.batch} facts/request, {args.conns} keep-alive connections), medians of "
        f"{args.repeats} alternated repeats:"
    )
    for w in (1, 2):
        print(
            f"  {w} worker(s): {m[f'rate_{w}w']:>9,.0f} decisions/s; server CPU "
            f"{m[f'server_us_{w}w']:.1f} us/decision "
            f"worker split {m[f'split_{w}w']:.2f}; client CPU {m[f'client_us_{w}w']:.1f} us/decision; other jobs "
            f"{m[f'others_cores_{w}w']:.2f} cores; a worker waited for a core {m[f'waited_{w}w']:.0%} of the run, "
            f"had no request {m[f'idle_{w}w']:.0%}"
        )
    print(
        f"  1 worker vs in-process: {per_1 / per_in:.2f}x wall, {m['server_us_1w'] / m['inproc_cpu_us']:.2f}x CPU "
        "per decision (target <= 3x)"
    )
    print(
        f"  2 workers vs 1: {m['rate_2w'] / m['rate_1w']:.2f}x wall (target >= 1.8x); CPU per decision "
        f"{m['server_us_2w'] / m['server_us_1w']:.2f}x; without the time workers waited for a core "
        f"{m['unqueued_rate_2w'] / m['unqueued_rate_1w']:.2f}x"
    )
    q1, q2 = m["quiet"]
    print(
        f"  quietest repeat (other jobs {q1['others_cores']:.2f} / {q2['others_cores']:.2f} cores): "
        f"{q1['rate']:,.0f} vs {q2['rate']:,.0f} decisions/s = {q2['rate'] / q1['rate']:.2f}x"
    )
    print(
        "  every repeat: "
        + "; ".join(
            f"{a['rate']:,.0f} vs {b['rate']:,.0f}/s = {b['rate'] / a['rate']:.2f}x (others {a['others_cores']:.2f}/"
            f"{b['others_cores']:.2f})"
            for a, b in zip(m["runs"][1], m["runs"][2], strict=True)
        )
    )
    try:
        autogroup = Path("/proc/sys/kernel/sched_autogroup_enabled").read_text().strip() == "1"
    except OSError:
        autogroup = False
    if args.priority is not None:
        print(f"  (the servers' and the client's sessions ran at autogroup nice {args.priority})")
    elif autogroup:
        print(
            "  (sched_autogroup_enabled=1: under contention the kernel shares the CPU by session, and a server's "
            "workers are one session: with other jobs running, 2 workers get no more CPU than 1)"
        )
    if args.only_scaling:
        return
    for w in (1, 2):
        print(
            f"single facts, 8 keep-alive connections, {w} worker(s): {m[f'single_rate_{w}w']:,.0f} requests/s, "
            f"p50 {m[f'single_p50_ms_{w}w']:.2f} ms (target <= 2 ms)"
        )
    print(f"  2 workers vs 1 on kept-alive connections: {m['single_rate_2w'] / m['single_rate_1w']:.2f}x")
    print(
        f"200 concurrent clients, 2 workers: {m['c200_rate']:,.0f} requests/s, p50 {m['c200_p50_ms']:.1f} ms, "
        f"p99 {m['c200_p99_ms']:.1f} ms"
    )
    if not args.no_faults:
        for kind, what in (("none", "no fault"), ("kill", "kill -9 of a worker"), ("pg", "PostgreSQL restart")):
            print(f"fault run, {what} under load: {json.dumps(fault_run(kind))}")


if __name__ == "__main__":
    main()
