"""Start the service: uvicorn in N worker processes, each compiling the pack and holding its own
engine handles and ledger connection.

With more than one worker, each worker listens on its own socket bound with ``SO_REUSEPORT``
and the kernel spreads new connections over them. (uvicorn's own ``--workers`` shares one
listening socket, and asyncio accepts every pending connection at once in whichever worker
wakes first: the connections of a burst all land on one worker and the others idle. Measured
in benchmarks/bench_serve.py.) The supervisor here replaces a worker that dies and stops them
all on SIGTERM or SIGINT. Not on Linux (where SO_REUSEPORT does not balance), uvicorn's workers
serve. Only processes of the same user can bind a port so shared: run the server as its own user.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import socket
import sys
import time
from typing import Any

from stoprule.config.serve import ServeConfig
from stoprule.serve.app import ENV_CONFIG

__all__ = ["listening_socket", "serve"]

_FACTORY = "stoprule.serve.app:from_environment"
_STARTUP_FAILED = 3  # a worker's exit status when it could not start (uvicorn's): not restarted


def _uvicorn_config(log_level: str, **extra: Any) -> Any:
    import uvicorn

    return uvicorn.Config(_FACTORY, factory=True, log_level=log_level, access_log=False, timeout_keep_alive=30,
                          server_header=False, proxy_headers=True, **extra)  # fmt: skip


def listening_socket(host: str, port: int, *, reuse_port: bool) -> socket.socket:
    """A TCP socket bound to ``host:port`` (``SO_REUSEPORT`` when asked: one per worker)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if reuse_port:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    sock.set_inheritable(True)
    return sock


def _worker(host: str, port: int, log_level: str) -> None:
    """One worker process: its own ``SO_REUSEPORT`` socket, one uvicorn server on it."""
    import uvicorn

    try:
        sock = listening_socket(host, port, reuse_port=True)
    except OSError:
        raise SystemExit(_STARTUP_FAILED) from None
    server = uvicorn.Server(_uvicorn_config(log_level))
    server.run(sockets=[sock])
    if not server.started:
        raise SystemExit(_STARTUP_FAILED)


def serve(config: ServeConfig, *, host: str, port: int, workers: int, log_level: str = "warning") -> bool:
    """Run until interrupted (True), or until the workers cannot start (False). The config reaches the
    workers as JSON in the environment. OSError if ``host:port`` cannot be bound."""
    import uvicorn

    os.environ[ENV_CONFIG] = json.dumps(config.to_env())
    if workers <= 1 or not sys.platform.startswith("linux"):  # elsewhere SO_REUSEPORT does not balance
        cfg = _uvicorn_config(log_level, host=host, port=port, workers=workers if workers > 1 else None)
        server = uvicorn.Server(cfg)
        if cfg.workers > 1:
            from uvicorn.supervisors import Multiprocess

            Multiprocess(cfg, sockets=[cfg.bind_socket()]).run()
            return True
        try:
            server.run()
        except SystemExit:  # uvicorn's exit when it cannot bind or start
            return False
        return server.started
    return _supervise(host, port, workers, log_level)


def _supervise(host: str, port: int, workers: int, log_level: str) -> bool:
    # the supervisor holds the port (bound, not listening: it takes no connections) so that a
    # port in use fails here, once, and no other program can take it between worker restarts
    holder = listening_socket(host, port, reuse_port=True)
    port = holder.getsockname()[1]
    spawn = multiprocessing.get_context("spawn")
    stopping: list[int] = []

    def on_signal(signum: int, frame: Any) -> None:
        stopping.append(signum)

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, on_signal)

    def start() -> Any:
        proc = spawn.Process(target=_worker, args=(host, port, log_level), daemon=False)
        proc.start()
        return proc

    procs = [start() for _ in range(workers)]
    failed = False
    try:
        while not stopping:
            time.sleep(0.2)
            for i, proc in enumerate(procs):
                if proc.is_alive() or stopping:  # (a stop signal may reach the workers first: no restart then)
                    continue
                proc.join()
                if proc.exitcode == _STARTUP_FAILED:
                    failed = True  # the app or the socket is broken: every restart would fail alike
                    stopping.append(0)
                    break
                procs[i] = start()  # died (kill -9, a crash): a fresh worker takes its place
    finally:
        for proc in procs:
            if proc.is_alive():
                os.kill(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 30
        for proc in procs:
            proc.join(max(deadline - time.monotonic(), 0.1))
            if proc.is_alive():
                proc.kill()
                proc.join()
        holder.close()
    return not failed
