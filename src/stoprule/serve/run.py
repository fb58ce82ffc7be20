"""Start the service: uvicorn in N worker processes, each compiling the pack and holding its own
engine handles and database threads, under a supervisor.

Each worker listens on its own socket bound with ``SO_REUSEPORT`` and the kernel spreads new
connections over them. (uvicorn's own ``--workers`` shares one listening socket, and asyncio
accepts every pending connection at once in whichever worker wakes first: the connections of a
burst all land on one worker and the others idle. Measured in benchmarks/bench_serve.py.) The
sockets are TCP sockets by protocol number (``IPPROTO_TCP``), so asyncio sets ``TCP_NODELAY`` on
every accepted connection: without it an answer on a kept-alive connection waits ~40 ms for the
client's delayed ACK.

The supervisor replaces a worker that dies, and one that stops answering its health probe: every
second it writes a byte to each worker's end of a socket pair, which the worker's event loop
echoes; a worker that has not echoed for ``probe_timeout_ms`` (stopped, or its loop stuck) is
killed and replaced. It stops them all on SIGTERM or SIGINT. Not on Linux (where SO_REUSEPORT
does not balance), uvicorn's workers serve, unsupervised. Only processes of the same user can bind
a port so shared: run the server as its own user.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import signal
import socket
import sys
import time
from contextlib import suppress
from typing import Any

from stoprule.config.serve import ServeConfig
from stoprule.serve.app import ENV_CONFIG
from stoprule.serve.connections import guarded

__all__ = ["listening_socket", "serve"]

_FACTORY = "stoprule.serve.app:from_environment"
_STARTUP_FAILED = 3  # a worker's exit status when it could not start (uvicorn's): not restarted
_PROBE_EVERY = 1.0  # seconds between probes
_FIRST_ANSWER = 120.0  # seconds a new worker may take to compile the pack and answer its first probe
_QUEUE = 2048  # connections the kernel holds for a worker before it accepts them


def _uvicorn_config(config: ServeConfig, log_level: str, **extra: Any) -> Any:
    import uvicorn

    limits = config.limits
    http, backlog = guarded(limits.header_timeout_ms / 1000.0, limits.max_connections, 2 * config.ledger_connections)
    return uvicorn.Config(
        _FACTORY,
        factory=True,
        log_level=log_level,
        access_log=False,
        timeout_keep_alive=30,
        server_header=False,
        proxy_headers=True,
        http=http,
        backlog=backlog,
        **extra,
    )


def listening_socket(host: str, port: int, *, reuse_port: bool) -> socket.socket:
    """A TCP socket bound to ``host:port`` (``SO_REUSEPORT`` when asked: one per worker)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)  # the protocol asyncio looks for
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if reuse_port:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    sock.set_inheritable(True)
    return sock


def _worker(host: str, port: int, log_level: str, probe: socket.socket) -> None:
    """One worker process: its own ``SO_REUSEPORT`` socket, one uvicorn server on it, and the probe's
    echo on its event loop."""
    import uvicorn

    config = ServeConfig.from_env(json.loads(os.environ[ENV_CONFIG]))
    try:
        sock = listening_socket(host, port, reuse_port=True)
    except OSError:
        raise SystemExit(_STARTUP_FAILED) from None

    class Server(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)

            # asyncio accepts up to the backlog it listened with at each wake-up (what ``connections`` sizes);
            # the kernel's queue of connections not yet accepted may be longer: bursts of agents wait there
            sock.listen(_QUEUE)

            probe.setblocking(False)

            def echo() -> None:
                try:
                    got = probe.recv(64)
                except BlockingIOError:
                    return
                except OSError:
                    got = b""
                if not got:  # the supervisor is gone
                    asyncio.get_running_loop().remove_reader(probe.fileno())
                    self.should_exit = True
                    return
                with suppress(OSError):
                    probe.send(b"!")

            asyncio.get_running_loop().add_reader(probe.fileno(), echo)

    server = Server(_uvicorn_config(config, log_level))
    server.run(sockets=[sock])
    if not server.started:
        raise SystemExit(_STARTUP_FAILED)


def serve(config: ServeConfig, *, host: str, port: int, workers: int, log_level: str = "warning") -> bool:
    """Run until interrupted (True), or until the workers cannot start (False). The config reaches the
    workers as JSON in the environment. OSError if ``host:port`` cannot be bound."""
    import uvicorn

    os.environ[ENV_CONFIG] = json.dumps(config.to_env())
    if not sys.platform.startswith("linux"):  # elsewhere SO_REUSEPORT does not balance
        cfg = _uvicorn_config(config, log_level, host=host, port=port, workers=workers if workers > 1 else None)
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
    return _supervise(host, port, max(workers, 1), log_level, config.probe_timeout_ms / 1000.0)


class _Worker:
    """A worker process and the supervisor's end of its probe."""

    def __init__(self, ctx: Any, host: str, port: int, log_level: str) -> None:
        self.probe, theirs = socket.socketpair()
        self.proc = ctx.Process(target=_worker, args=(host, port, log_level, theirs), daemon=False)
        self.proc.start()
        theirs.close()
        self.probe.setblocking(False)
        self.started = time.monotonic()
        self.answered: float | None = None  # when it last echoed
        self.asked = 0.0  # when the last probe went out

    def check(self, now: float, timeout: float) -> bool:
        """Probe it; False once it has not answered for ``timeout`` seconds (or never, since start)."""
        try:
            while self.probe.recv(64):
                self.answered = now
        except (BlockingIOError, InterruptedError):
            pass
        except OSError:
            return False
        if now - self.asked >= _PROBE_EVERY:
            self.asked = now
            try:
                self.probe.send(b"?")
            except BlockingIOError:
                pass  # its buffer is full of probes it did not answer: counted below
            except OSError:
                return False
        if self.answered is None:
            return now - self.started < _FIRST_ANSWER
        return now - self.answered < timeout

    def kill(self) -> None:
        if self.proc.is_alive():
            self.proc.kill()  # a stopped process cannot act on SIGTERM
        self.proc.join()
        self.probe.close()


def _supervise(host: str, port: int, workers: int, log_level: str, probe_timeout: float) -> bool:
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

    def start() -> _Worker:
        return _Worker(spawn, host, port, log_level)

    procs = [start() for _ in range(workers)]
    failed = False
    try:
        while not stopping:
            time.sleep(0.2)
            now = time.monotonic()
            for i, w in enumerate(procs):
                if stopping:  # (a stop signal may reach the workers first: no restart then)
                    break
                if w.proc.is_alive():
                    if w.check(now, probe_timeout):
                        continue
                    sys.stderr.write(
                        f"stoprule serve: worker {w.proc.pid} did not answer its health probe for "
                        f"{probe_timeout:g} s: replaced\n"
                    )
                    w.kill()
                else:
                    w.proc.join()
                    w.probe.close()
                    if w.proc.exitcode == _STARTUP_FAILED:
                        failed = True  # the app or the socket is broken: every restart would fail alike
                        stopping.append(0)
                        break
                procs[i] = start()  # died (kill -9, a crash) or stuck: a fresh worker takes its place
    finally:
        for w in procs:
            if w.proc.is_alive():
                os.kill(w.proc.pid, signal.SIGTERM)
                os.kill(w.proc.pid, signal.SIGCONT)  # a stopped worker acts on SIGTERM only once continued
        deadline = time.monotonic() + 30
        for w in procs:
            w.proc.join(max(deadline - time.monotonic(), 0.1))
            if w.proc.is_alive():
                w.proc.kill()
                w.proc.join()
            w.probe.close()
        holder.close()
    return not failed
