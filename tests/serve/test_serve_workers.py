"""``stoprule serve --workers N`` over a real process: new connections are spread over every
worker (each listens on its own SO_REUSEPORT socket), and a worker killed with SIGKILL is replaced."""

from __future__ import annotations

import http.client
import json
import os
import signal
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from servehelp import server

pytestmark = pytest.mark.integration  # a supervisor and its worker processes, killed and replaced


def _workers_answering(url: str, connections: int) -> list[int]:
    """The worker pid behind each of ``connections`` keep-alive connections opened together."""
    u = urlsplit(url)
    conns = [http.client.HTTPConnection(u.hostname, u.port, timeout=10) for _ in range(connections)]
    try:
        for c in conns:
            c.connect()
        pids = []
        for c in conns:
            c.request("GET", "/healthz")
            pids.append(json.loads(c.getresponse().read())["worker"])
        return pids
    finally:
        for c in conns:
            c.close()


def test_connections_reach_every_worker_and_a_killed_worker_is_replaced(tmp_path: Path) -> None:
    with server(tmp_path, workers=2) as url:
        deadline = time.monotonic() + 60
        while len(before := set(_workers_answering(url, 24))) < 2:  # the second worker may still be starting
            assert time.monotonic() < deadline, f"new connections never reached a second worker: {before}"
            time.sleep(0.2)
        for _ in range(5):  # once both listen, every burst of connections is spread (all on one: p = 2**-23)
            assert set(_workers_answering(url, 24)) == before
        victim = min(before)
        os.kill(victim, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while True:
            try:
                now = set(_workers_answering(url, 24))
            except OSError:  # a connection queued on the worker as it died is reset (docs/serve.md)
                now = set()
            if len(now) == 2 and victim not in now:
                break
            assert time.monotonic() < deadline, f"no replacement worker within 30 s: {now}"
            time.sleep(0.2)
        assert now & before == before - {victim}


def test_sigterm_to_the_supervisor_stops_every_worker(tmp_path: Path) -> None:
    import subprocess
    import sys

    from servehelp import free_port

    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "stoprule", "serve", "--no-auth", "--port", str(port), "--workers", "2"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        workers: set[int] = set()
        while len(workers) < 2:
            assert proc.poll() is None and time.monotonic() < deadline, "the server did not start two workers"
            try:
                workers |= set(_workers_answering(f"http://127.0.0.1:{port}", 8))
            except OSError:
                time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)  # the supervisor alone, as `kill PID` would
        assert proc.wait(30) == 0
        for pid in workers:
            assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
