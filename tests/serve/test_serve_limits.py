"""What no client can do to a worker: record a fact the fact boundary refuses (through the hook
route), hold connections open without a request, make answers wait for a delayed ACK, or stall a
worker without the supervisor replacing it."""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import signal
import socket
import statistics
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from servehelp import server
from starlette.testclient import TestClient

from ledger_facts import OK
from stoprule.config.serve import Limits, ServeConfig, Token, hash_token
from stoprule.serve.app import create_app
from stoprule.serve.run import listening_socket

REPO = Path(__file__).resolve().parents[2]
AUTH = {"authorization": "Bearer t0k"}


def _nested(depth: int) -> dict:
    value: object = 1
    for _ in range(depth):
        value = {"x": value}
    return {**OK, "deep": value}


@pytest.mark.parametrize(
    ("fact_text", "code"),
    [
        ('{"status": "implemented", "n": NaN}', "fact.not_json"),
        ('{"status": "implemented", "n": Infinity}', "fact.not_json"),
        ('{"status": "implemented", "n": -Infinity}', "fact.not_json"),
        ('{"status": "implemented", "n": 1e999}', "fact.not_json"),  # read as infinity, which JSON cannot write
        (json.dumps(_nested(40)), "fact.too_deep"),
        ("[" * 1000 + "]" * 1000, None),  # not an object at all (and past the parser's recursion)
        ('{"status": "implemented", "deep": ' + '{"x": ' * 1000 + "1" + "}" * 1000 + "}", "fact.too_deep"),
    ],
)
def test_the_hook_route_records_only_what_evaluate_accepts(tmp_path: Path, fact_text: str, code: str | None) -> None:
    """What the hook route records, ``log export --facts-only | stoprule eval`` reads back: a fact the
    recording ``/v1/evaluate`` refuses is refused here too, and a body too deep to parse is a 4xx,
    not a 500 that drops the worker's database connection."""
    config = ServeConfig(
        policy=str(REPO / "policies"),
        tokens=(Token("t", hash_token("t0k")),),
        ledger=str(tmp_path / "l.db"),
        limits=Limits(ledger_timeout_ms=10_000),
    )
    body = '{"payload": {"session_id": "s"}, "run": "s", "fact": ' + fact_text + "}"
    with TestClient(create_app(config)) as c:
        r = c.post("/v1/hooks/claude-code", headers=AUTH, content=body)
        assert 400 <= r.status_code < 500, r.text
        if code is not None:
            assert (r.status_code, r.json()["error"]["code"]) == (422, code), r.text
            recorded = c.post("/v1/evaluate?run=e", headers=AUTH, content=fact_text)
            assert (recorded.status_code, recorded.json()["error"]["code"]) == (422, code)
        ok = c.post(
            "/v1/hooks/claude-code",
            headers=AUTH,
            content=json.dumps({"payload": {"session_id": "s"}, "run": "s", "fact": OK}),
        )
        assert ok.status_code == 200 and ok.json()["verdict"]["node"] == "n1"  # nothing was recorded before it
        assert c.get("/metrics", headers=AUTH).status_code == 200


def test_accepted_connections_get_tcp_nodelay() -> None:
    """The workers' sockets are TCP by protocol number, so asyncio sets TCP_NODELAY on each accepted
    connection (else an answer on a kept-alive connection waits for the client's delayed ACK)."""
    sock = listening_socket("127.0.0.1", 0, reuse_port=True)
    assert sock.proto == socket.IPPROTO_TCP
    seen: list[int] = []

    async def main() -> None:
        def on_client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            seen.append(writer.get_extra_info("socket").getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            writer.close()

        srv = await asyncio.start_server(on_client, sock=sock)
        port = sock.getsockname()[1]
        _, w = await asyncio.open_connection("127.0.0.1", port)
        for _ in range(100):
            if seen:
                break
            await asyncio.sleep(0.01)
        w.close()
        srv.close()

    asyncio.run(main())
    assert seen and seen[0] != 0


def _round_trips(url: str, n: int) -> list[float]:
    u = urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
    body = json.dumps(OK)
    out = []
    try:
        for _ in range(n):
            t0 = time.perf_counter()
            conn.request("POST", "/v1/evaluate", body, {"authorization": "Bearer srv1_client-test-token"})
            assert conn.getresponse().read()
            out.append(time.perf_counter() - t0)
    finally:
        conn.close()
    return out


@pytest.mark.integration
def test_answers_on_a_kept_alive_connection_do_not_wait_for_a_delayed_ack(tmp_path: Path) -> None:
    """With 2 workers, each request after the first on one connection used to wait ~40 ms (Nagle's
    algorithm against the client's delayed ACK); a decision takes well under a millisecond."""
    with server(tmp_path, workers=2) as url:
        times = _round_trips(url, 25)[5:]
    assert statistics.median(times) < 0.02, [round(t * 1000, 1) for t in times]


@pytest.mark.parametrize(
    ("files", "connections"),
    [
        pytest.param(256, 600, marks=pytest.mark.integration),
        pytest.param(1024, 2200, marks=[pytest.mark.torture, pytest.mark.timed]),
    ],
)
def test_idle_connections_cannot_exhaust_a_worker(tmp_path: Path, files: int, connections: int) -> None:
    """A worker limited to ``files`` open files, ``connections`` connections that never finish a
    request: a health check still gets through, and each idle connection is closed once its head
    time limit passes (before: the worker ran out of descriptors and accepted nothing)."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < connections + 200:  # this process holds the idle connections
        if hard != resource.RLIM_INFINITY and hard < connections + 200:
            pytest.skip(f"this process may open {hard} files; the run needs {connections + 200}")
        resource.setrlimit(resource.RLIMIT_NOFILE, (connections + 200, hard))
    extra = "limits: {header_timeout_ms: 1500}\n"
    with server(tmp_path, workers=1, extra=extra, nofile=files) as url:
        u = urlsplit(url)
        idle = []
        try:
            for _ in range(connections):
                s = socket.create_connection((u.hostname, u.port), timeout=10)
                s.sendall(b"GET /healthz HTTP/1.1\r\nhost: x\r\n")  # a head never finished
                idle.append(s)
            c = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
            c.request("GET", "/healthz")
            assert json.loads(c.getresponse().read())["ok"] is True
            c.close()
            deadline = time.monotonic() + 20
            closed = 0
            for s in idle:
                s.settimeout(max(deadline - time.monotonic(), 0.1))
                try:
                    closed += s.recv(1) == b""  # closed by the server, not answered
                except (TimeoutError, ConnectionResetError):
                    closed += 1
            assert closed == len(idle)
        finally:
            for s in idle:
                s.close()


def _pids(url: str, connections: int = 16) -> set[int]:
    u = urlsplit(url)
    out = set()
    for _ in range(connections):
        c = http.client.HTTPConnection(u.hostname, u.port, timeout=2)
        try:
            c.request("GET", "/healthz")
            out.add(json.loads(c.getresponse().read())["worker"])
        except OSError:
            pass
        finally:
            c.close()
    return out


@pytest.mark.integration
def test_a_stopped_worker_is_replaced(tmp_path: Path) -> None:
    with server(tmp_path, workers=2, extra="probe_timeout_ms: 3000\n") as url:
        before = _pids(url)
        while len(before) < 2:
            before |= _pids(url)
        victim = min(before)
        os.kill(victim, signal.SIGSTOP)
        try:
            deadline = time.monotonic() + 30
            while Path(f"/proc/{victim}").exists() and "T (stopped)" in Path(f"/proc/{victim}/status").read_text():
                assert time.monotonic() < deadline, "the stopped worker was not replaced within 30 s"
                time.sleep(0.2)
            now: set[int] = set()
            while len(now) < 2:
                assert time.monotonic() < deadline, f"no second worker answers: {now}"
                now = _pids(url)
            assert victim not in now and (before - {victim}) <= now
        finally:
            if Path(f"/proc/{victim}").exists():
                os.kill(victim, signal.SIGKILL)


@pytest.mark.parametrize(
    ("fact_text", "field"),
    [
        ('{"status": "implemented", "n": 1e999}', "n"),  # a field the pack does not know
        ('{"status": "implemented", "n": -1E400}', "n"),
        ('{"status": "implemented", "extra": {"deep": [1, 2, 1e999]}}', "extra.deep[2]"),
        ('{"status": "implemented", "turn": 1e999}', "turn"),  # a field the pack declares
    ],
)
@pytest.mark.parametrize("route", ["/v1/evaluate", "/v1/evaluate/batch", "/v1/hooks/claude-code"])
def test_a_number_json_cannot_write_is_refused_naming_its_field(route: str, fact_text: str, field: str) -> None:
    """``1e999`` parses as an infinity, which no JSON writer gives back: every decision route refuses it
    (422 ``fact.not_json``, or that error as the batch's line), with or without a run, naming the field."""
    config = ServeConfig(policy=str(REPO / "policies"), tokens=(Token("t", hash_token("t0k")),))
    body = fact_text
    if route.startswith("/v1/hooks"):
        body = '{"payload": {"session_id": "s"}, "fact": ' + fact_text + "}"
    with TestClient(create_app(config)) as c:
        r = c.post(route, headers=AUTH, content=body)
        if route.endswith("/batch"):
            assert r.status_code == 200
            error = json.loads(r.text.splitlines()[0])["error"]
        else:
            assert r.status_code == 422, r.text
            error = r.json()["error"]
        assert (error["code"], error["field"]) == ("fact.not_json", field), error
        assert "stoprule_decisions_total{" not in c.get("/metrics", headers=AUTH).text  # nothing was decided
