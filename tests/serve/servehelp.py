"""A real ``stoprule serve`` on 127.0.0.1 (a free port) for the tests where the process boundary is the point."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
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


@contextmanager
def server(tmp: Path, *, workers: int = 1, ledger: str | None = None, extra: str = "") -> Iterator[str]:
    """Start ``stoprule serve``; yield its URL once /healthz answers; SIGTERM (then SIGKILL) at the end."""
    cfg = tmp / "serve.yaml"
    lines = [f"policy: {REPO / 'policies'}", "tokens:", f"  - {{name: test, sha256: '{hash_token(TOKEN)}'}}"]
    if ledger:
        lines.append(f"ledger: '{ledger}'")
    cfg.write_text("\n".join(lines) + "\n" + extra)
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "stoprule", "serve", "--config", str(cfg), "--port", str(port),
         "--workers", str(workers)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"stoprule serve exited: {proc.stderr.read().decode() if proc.stderr else ''}")
            try:
                with urllib.request.urlopen(url + "/healthz", timeout=1) as r:
                    if json.load(r)["ok"]:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("stoprule serve did not answer /healthz within 60 s")
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
