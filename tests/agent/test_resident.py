"""The resident mode: a per-user process decides stops exactly as a fresh ``stoprule hook``
would, is reachable only by its user, is believed only when it is the resident stoprule, starts
on demand and is never the only way (without it, or when it cannot be trusted, the hook decides
in its own process). Real processes: the process boundary is the point."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from hookharness import continues, payload, stoprule_exe
from stoprule.cli import resident_wire

REPO = Path(__file__).resolve().parents[2]
CONFIG = "hook:\n  ledger: true\n  resident: {resident}\n  mode: {mode}\nproviders:\n  enabled: [hook, transcript]\n"


def _project(root: Path, *, mode: str = "enforce", resident_on: bool = False) -> Path:
    (root / ".stoprule").mkdir(parents=True)
    (root / ".stoprule" / "config.yaml").write_text(CONFIG.format(resident=str(resident_on).lower(), mode=mode))
    transcript = REPO / "tests" / "fixtures" / "hooks" / "claude-code" / "transcript.jsonl"
    (root / "t.jsonl").write_bytes(transcript.read_bytes())
    return root


def _env(tmp_path: Path, runtime: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STOPRULE_")}
    env.update(XDG_RUNTIME_DIR=str(runtime), STOPRULE_CACHE_DIR=str(tmp_path / "cache"), HOME=str(tmp_path / "home"))
    return env


def _hook(root: Path, env: dict[str, str]) -> tuple[dict | None, str, dict]:
    stop = payload("claude-code", cwd=str(root), transcript_path=str(root / "t.jsonl"))
    p = subprocess.run(
        [stoprule_exe(), "hook", "claude-code"],
        input=json.dumps(stop).encode(),
        cwd=root,
        env=env,
        capture_output=True,
        timeout=60,
    )
    assert p.returncode == 0, p.stderr
    out = p.stdout.decode().strip()
    log = json.loads((root / ".stoprule" / "hook.log").read_text().splitlines()[-1])
    return (json.loads(out) if out else None), p.stderr.decode(), log


def _wait_for(path: Path, present: bool = True, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while path.exists() != present:
        assert time.monotonic() < deadline, f"{path} {'never appeared' if present else 'stayed'}"
        time.sleep(0.05)


@pytest.fixture
def runtime(tmp_path: Path) -> Path:
    path = tmp_path / "run"
    path.mkdir(mode=0o700)
    return path


@pytest.fixture
def server(tmp_path: Path, runtime: Path) -> Iterator[subprocess.Popen]:
    env = _env(tmp_path, runtime)
    proc = subprocess.Popen(
        [sys.executable, "-I", "-m", "stoprule", "resident", "serve", "--idle", "60"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        _wait_for(runtime / "stoprule" / "resident.sock")
        yield proc
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        proc.stderr.close()  # type: ignore[union-attr]


@pytest.mark.integration
def test_it_decides_each_stop_as_a_fresh_hook_would_there(tmp_path: Path, runtime: Path, server) -> None:  # noqa: ANN001
    """Two projects with different settings, through one resident process: each stop is decided
    with its own project's settings, state and ledger, and answered exactly as a fresh process
    (no resident process reachable) answers it."""
    env = _env(tmp_path, runtime)
    alone = _env(tmp_path, tmp_path / "nowhere")  # no runtime directory: decided in its own process
    for name, mode in (("a", "enforce"), ("b", "observe")):
        warm, cold = _project(tmp_path / name / "warm", mode=mode), _project(tmp_path / name / "cold", mode=mode)
        out, err, log = _hook(warm, env)
        out2, err2, log2 = _hook(cold, alone)
        assert log["via"] == "resident" and "via" not in log2
        assert out == out2 and err.replace(str(warm), "P") == err2.replace(str(cold), "P")
        assert continues("claude-code", out) == (mode == "enforce")  # the open tasks
        assert log["mode"] == mode and log.get("ledger_journal")
        assert (warm / ".stoprule" / "ledger.db.journal").exists()  # the same durable record before it answered
    assert server.poll() is None


def test_the_client_reads_the_payload_the_hook_would() -> None:
    """The client reads stdin up to the hook's own limit (its copy of it: importing the hook's
    event module would cost every client its start)."""
    from stoprule.agent.hook.event import MAX_PAYLOAD_BYTES
    from stoprule.cli import resident

    assert resident.MAX_PAYLOAD_BYTES == MAX_PAYLOAD_BYTES


@pytest.mark.integration
def test_without_a_safe_directory_there_is_no_resident_process(tmp_path: Path) -> None:
    runtime = tmp_path / "run"
    (runtime / "stoprule").mkdir(parents=True, mode=0o755)
    (runtime / "stoprule").chmod(0o755)  # others may enter: neither side uses it
    env = _env(tmp_path, runtime)
    p = subprocess.run(
        [sys.executable, "-I", "-m", "stoprule", "resident", "serve", "--idle", "1"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 1 and "no private directory" in p.stderr, p.stderr
    root = _project(tmp_path / "p")
    out, _, log = _hook(root, env)
    assert "via" not in log and continues("claude-code", out)


@pytest.mark.integration
def test_a_process_that_is_not_the_resident_stoprule_is_not_believed(tmp_path: Path, runtime: Path) -> None:
    """Something else listening at the socket (here: this test, answering "allow") is not the
    resident stoprule: the hook decides in its own process, and blocks."""
    folder = runtime / "stoprule"
    folder.mkdir(mode=0o700)
    fake = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    fake.bind(str(folder / "resident.sock"))
    fake.listen(4)
    received: list[bytes] = []

    def answer() -> None:
        conn, _ = fake.accept()
        with conn:
            received.append(conn.recv(1 << 20))
            with contextlib.suppress(OSError):
                conn.sendall(resident_wire.frame([b"ok", b"0", b"", b""]))  # "allow"

    t = threading.Thread(target=answer, daemon=True)
    t.start()
    try:
        out, _, log = _hook(_project(tmp_path / "p"), _env(tmp_path, runtime))
        t.join(timeout=30)
    finally:
        fake.close()
    assert "via" not in log and continues("claude-code", out)
    assert received == [b""]  # it was not even sent the stop


def test_started_on_demand_then_it_serves_the_next_stops(tmp_path: Path, runtime: Path) -> None:
    env = _env(tmp_path, runtime)
    root = _project(tmp_path / "p", resident_on=True)
    sock = runtime / "stoprule" / "resident.sock"
    try:
        out, _, log = _hook(root, env)  # decided here; starts the resident process
        assert "via" not in log and continues("claude-code", out)
        _wait_for(sock)
        out2, _, log2 = _hook(root, env)
        assert log2["via"] == "resident" and out2 == out
        status = subprocess.run([stoprule_exe(), "resident", "status"], env=env, capture_output=True, text=True)
        assert status.returncode == 0 and str(sock) in status.stdout
    finally:
        subprocess.run([stoprule_exe(), "resident", "stop"], env=env, capture_output=True, timeout=60)
    _wait_for(sock, present=False)
    out3, _, log3 = _hook(root, env)  # never the only way: without it the stop is decided here (and starts one)
    assert "via" not in log3 and out3 == out
    _wait_for(sock)
    subprocess.run([stoprule_exe(), "resident", "stop"], env=env, capture_output=True, timeout=60)
    _wait_for(sock, present=False)


def test_another_stoprule_is_declined_and_the_process_makes_way(
    tmp_path: Path, runtime: Path, server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(resident_wire, "identity", lambda: b"another version\0elsewhere\0python")
    sock = runtime / "stoprule" / "resident.sock"
    assert resident_wire.ask(str(sock), ["hook", "claude-code"], b"{}") is None
    server.wait(timeout=30)  # it exits: the next fresh hook starts the right one
    assert server.returncode == 0
