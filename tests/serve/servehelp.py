"""A real ``stoprule serve`` on 127.0.0.1 (a free port) for the tests where the process boundary is the point."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from stoprule.config.serve import hash_token

REPO = Path(__file__).resolve().parents[2]
TOKEN = "srv1_client-test-token"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def migrate(url: str) -> None:
    """``stoprule serve migrate``: the PostgreSQL schema a server records into (made by its owner)."""
    proc = subprocess.run(
        [sys.executable, "-m", "stoprule", "serve", "migrate", "--ledger", url],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr


@contextmanager
def server(
    tmp: Path,
    *,
    workers: int = 1,
    ledger: str | None = None,
    extra: str = "",
    tokens: str = "",
    nofile: int | None = None,
) -> Iterator[str]:
    """Start ``stoprule serve``; yield its URL once /healthz answers; SIGTERM (then SIGKILL) at the end.
    ``tokens``: more lines under ``tokens:``; ``nofile``: the server's open-file limit."""
    cfg = tmp / "serve.yaml"
    lines = [f"policy: {REPO / 'policies'}", "tokens:", f"  - {{name: test, sha256: '{hash_token(TOKEN)}'}}"]
    if tokens:
        lines.append(tokens.rstrip("\n"))
    if ledger:
        lines.append(f"ledger: '{ledger}'")
    if "limits:" not in extra:  # no request of a test is timed out because the machine is busy
        extra += "limits: {ledger_timeout_ms: 10000}\n"
    cfg.write_text("\n".join(lines) + "\n" + extra)
    port = free_port()

    def limit() -> None:
        if nofile is not None:
            import resource

            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "stoprule",
            "serve",
            "--config",
            str(cfg),
            "--port",
            str(port),
            "--workers",
            str(workers),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
        preexec_fn=limit,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        seen: set[int] = set()
        while len(seen) < workers:  # every worker up (a new connection may reach any of them)
            if proc.poll() is not None:
                raise RuntimeError(f"stoprule serve exited: {proc.stderr.read().decode() if proc.stderr else ''}")
            try:
                with urllib.request.urlopen(url + "/healthz", timeout=1) as r:
                    seen.add(json.load(r)["worker"])
                    continue
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"stoprule serve did not answer /healthz from {workers} worker(s) within 90 s")
            time.sleep(0.1)
        yield url
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=15)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            with suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        if proc.stderr:
            proc.stderr.close()


def request(path: str, body: bytes, token: str = TOKEN) -> bytes:
    """A pre-encoded HTTP/1.1 POST (keep-alive)."""
    return (
        f"POST {path} HTTP/1.1\r\nhost: t\r\nauthorization: Bearer {token}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\n\r\n"
    ).encode() + body


async def read_response(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    length = next(
        (int(ln.split(b":")[1]) for ln in head.split(b"\r\n") if ln.lower().startswith(b"content-length:")), 0
    )
    return status, await reader.readexactly(length)


def port_of(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


class Proxy:
    """A TCP proxy on loopback whose link can stall: :meth:`pause` stops moving bytes both ways (and
    connecting) without closing anything, as a network that drops every packet; :meth:`resume`."""

    def __init__(self, port: int) -> None:
        self.target = port
        self.running = threading.Event()
        self.running.set()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self._socks: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def url(self, url: str) -> str:
        return url.replace(f":{url.rsplit(':', 1)[1].split('/')[0]}/", f":{self.port}/")

    def pause(self) -> None:
        self.running.clear()

    def resume(self) -> None:
        self.running.set()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._open, args=(client,), daemon=True).start()

    def _open(self, client: socket.socket) -> None:
        self.running.wait()
        try:
            upstream = socket.create_connection(("127.0.0.1", self.target))
        except OSError:
            client.close()
            return
        self._socks += [client, upstream]
        for a, b in ((client, upstream), (upstream, client)):
            threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                self.running.wait()
                data = src.recv(65536)
                self.running.wait()  # held while the link stalls
                if not data:
                    dst.shutdown(socket.SHUT_WR)
                    return
                dst.sendall(data)
        except OSError:
            with suppress(OSError):
                dst.close()

    def close(self) -> None:
        self.running.set()
        self.listener.close()
        for s in self._socks:
            with suppress(OSError):
                s.close()
