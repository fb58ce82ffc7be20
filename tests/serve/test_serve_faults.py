"""Fault runs against real ``stoprule serve`` processes on a PostgreSQL ledger: a stalled database
link, a held row lock, database restarts, kill -9 and SIGSTOP of a worker, slow clients, and the
least-privilege role. A stuck database costs only the requests that record, and only up to the
configured time; nothing a client was told was recorded is lost or recorded twice; `log verify`
passes after every run. Marked ``postgres`` (tests/pgcluster.py)."""

from __future__ import annotations

import asyncio
import io
import json
import os
import signal
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import psycopg
import pytest
from servehelp import TOKEN, Proxy, migrate, port_of, read_response, request, server

from ledger_facts import CONTINUITY, OK
from stoprule.cli.main import run as cli

pytestmark = pytest.mark.postgres
# limits short enough that a stalled or locked ledger answers within the runs below, and long enough
# that a request on this loaded 2-core machine is not timed out when nothing is wrong
LEDGER_TIMEOUT = 2.0
LIMITS = (
    "limits: {ledger_timeout_ms: 2000, timeout_ms: 3000, header_timeout_ms: 3000}\nprobe_timeout_ms: 4000\n"
    "anchor_interval_ms: 500\n"
)
ROOMY = LIMITS.replace("ledger_timeout_ms: 2000", "ledger_timeout_ms: 10000")  # where no wait is bounded on purpose
NOT_STALLED = 3.0  # seconds: a request that does not record answers within this (stalled, it waited for the fault)


@pytest.fixture(autouse=True)
def _keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STOPRULE_LEDGER_KEYS", str(tmp_path / "pg.keys"))  # the servers inherit it


def _call(
    url: str, path: str, body: dict | None = None, timeout: float = 10.0, method: str | None = None
) -> tuple[int, dict, float]:
    """``(status, JSON body, seconds)`` of one request on a new connection."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(
        url + path, data, {"authorization": f"Bearer {TOKEN}"}, method=method or ("POST" if data is not None else "GET")
    )
    t0 = time.monotonic()
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.load(r), time.monotonic() - t0
    except urllib.error.HTTPError as e:
        return e.code, json.load(e), time.monotonic() - t0


def _verify(url: str) -> dict:
    out, err = io.StringIO(), io.StringIO()
    code = cli(["log", "verify", "--ledger", url, "--format", "json"], io.BytesIO(), out, err)
    report = json.loads(out.getvalue())
    assert code == 0 and report["ok"], report
    return report


def _not_recording_answers(url: str, seconds: float) -> None:
    """For ``seconds``: /healthz and a decision without a run, on new connections, each within 2 s."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for path, body in (("/healthz", None), ("/v1/evaluate", OK)):
            status, _, took = _call(url, path, body, timeout=5)
            assert status == 200 and took < NOT_STALLED, (path, status, took)
        time.sleep(0.1)


def test_a_stalled_database_link_costs_only_the_requests_that_record(tmp_path: Path, pg_url: str) -> None:
    """The link to the database stalls (no reset: every byte held) for 6 s: health checks and
    decisions without a run keep answering at once, recording answers 503 within the ledger's time
    limit, no worker is replaced, and once the link is back recording works again."""
    migrate(pg_url)
    proxy = Proxy(port_of(pg_url.rsplit("/", 1)[0]))
    try:
        with server(tmp_path, workers=2, ledger=proxy.url(pg_url), extra=LIMITS) as url:
            assert _call(url, "/v1/evaluate?run=before", OK)[0] == 200
            workers = {_call(url, "/healthz")[1]["worker"] for _ in range(12)}
            proxy.pause()
            failures = []
            for i in range(4):
                status, body, took = _call(url, f"/v1/evaluate?run=stalled-{i}", OK)
                failures.append((status, body["error"]["code"], took))
            _not_recording_answers(url, 4)
            assert all(s == 503 and c == "ledger.unavailable" and t < LEDGER_TIMEOUT + 2 for s, c, t in failures), (
                failures
            )
            proxy.resume()
            deadline = time.monotonic() + 30
            while (status := _call(url, "/v1/evaluate?run=after", OK)[0]) != 200:
                assert time.monotonic() < deadline, status
                time.sleep(0.5)
            assert {_call(url, "/healthz")[1]["worker"] for _ in range(12)} <= workers  # none was replaced
    finally:
        proxy.close()
    report = _verify(pg_url)
    assert report["runs"] >= 2


@contextmanager
def _held(pg_url: str, *statements: str) -> Iterator[None]:
    with psycopg.connect(pg_url) as conn:  # one open transaction holding the rows
        for s in statements:
            conn.execute(s)
        yield
        conn.rollback()


def test_a_held_row_lock_costs_only_the_requests_that_wait_for_it(tmp_path: Path, pg_url: str) -> None:
    """Run a's status row and the ledger head locked by another session for 5 s: recording into a
    answers 503 within the time limit; recording into b, anchoring, health and decisions go on."""
    migrate(pg_url)
    with server(tmp_path, workers=2, ledger=pg_url, extra=LIMITS) as url:
        assert _call(url, "/v1/evaluate?run=a", OK)[0] == 200
        with _held(pg_url, "SELECT * FROM runs WHERE run = 'a' FOR UPDATE", "SELECT * FROM head FOR UPDATE"):
            status, body, took = _call(url, "/v1/evaluate?run=a", OK)
            assert status == 503 and body["error"]["code"] in ("ledger.unavailable", "ledger.busy")
            assert took < LEDGER_TIMEOUT + 2
            for i in range(5):  # (waiting for the held lock, they would get 503 at the limit)
                status, _, took = _call(url, f"/v1/evaluate?run=b{i}", OK)
                assert status == 200, (status, took)
            _not_recording_answers(url, 2)
        assert _call(url, "/v1/evaluate?run=a", OK)[1]["node"] == "n2"  # nothing was recorded by the 503
        time.sleep(1.5)  # anchor intervals: the head was free again
    report = _verify(pg_url)
    assert report["events"] == 7 and report["unanchored"] == 0, report


@pytest.mark.parametrize("mode", ["fast", "immediate"])
def test_after_a_database_restart_no_request_fails_once_it_is_back(
    tmp_path: Path,
    pg_url: str,
    pg,
    mode: str,  # noqa: ANN001
) -> None:
    """Every database connection of every worker is dead after a restart; each request's first try
    on one is not sent again blindly but reconnects (nothing was committed on it), so the first
    recording request on each worker succeeds."""
    migrate(pg_url)
    with server(tmp_path, workers=2, ledger=pg_url, extra=ROOMY) as url:
        for i in range(24):  # connections opened on several database threads of both workers
            assert _call(url, f"/v1/evaluate?run=r{i % 3}", OK)[0] == 200
        pg.stop(mode)
        assert _call(url, "/v1/evaluate?run=down", OK)[0] == 503
        _not_recording_answers(url, 1)
        pg.start()
        answers = [_call(url, f"/v1/evaluate?run=r{i % 3}", OK) for i in range(24)]
        assert [a[0] for a in answers] == [200] * 24, [a[1] for a in answers if a[0] != 200][:3]
    _verify(pg_url)


def _load(url: str, seconds: float, conns: int, fault: object) -> tuple[dict[int, int], dict[str, float]]:
    """``conns`` agents recording single facts, each into its own run, for ``seconds`` (reconnecting
    after a dropped connection), ``fault()`` run in a thread a third of the way in; every request's
    status (0: no answer) by its ``i``."""
    sent: dict[int, int] = {}
    counter = iter(range(10**9))
    port = port_of(url)
    stop_at = time.monotonic() + seconds
    info: dict[str, float] = {}

    async def agent(a: int) -> None:
        while time.monotonic() < stop_at:
            try:
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
            except OSError:
                await asyncio.sleep(0.05)
                continue
            try:
                while time.monotonic() < stop_at:
                    i = next(counter)
                    sent[i] = 0
                    writer.write(request(f"/v1/evaluate?run=agent-{a}", json.dumps({**OK, "i": i}).encode()))
                    await writer.drain()
                    sent[i], _ = await asyncio.wait_for(read_response(reader), 30)
            except (OSError, asyncio.IncompleteReadError, asyncio.TimeoutError):
                pass
            finally:
                writer.close()

    async def main() -> None:
        async def trigger() -> None:
            await asyncio.sleep(seconds / 3)
            await asyncio.to_thread(fault)  # type: ignore[arg-type]

        await asyncio.gather(*(agent(a) for a in range(conns)), trigger())

    asyncio.run(main())
    return sent, info


def _recorded(pg_url: str) -> list[int]:
    from stoprule.ledger.postgres import PgLedger

    with PgLedger.open(pg_url) as led:
        return [json.loads(fact)["i"] for _, fact in led.records()]


def _worker_pids(url: str) -> set[int]:
    out: set[int] = set()
    for _ in range(24):
        with suppress(OSError):
            out.add(_call(url, "/healthz", timeout=2)[1]["worker"])
    return out


@pytest.mark.parametrize("fault", ["kill -9 of a worker", "fast restart", "immediate restart", "stopped worker"])
def test_faults_under_load_lose_and_duplicate_nothing(tmp_path: Path, pg_url: str, pg, fault: str) -> None:  # noqa: ANN001
    """16 agents recording for 6 s while a worker is killed or stopped, or the database restarts:
    every request answered 200 is in the ledger exactly once, nothing else was recorded twice,
    and every chain verifies."""
    migrate(pg_url)
    with server(tmp_path, workers=2, ledger=pg_url, extra=ROOMY) as url:
        pids = _worker_pids(url)
        while len(pids) < 2:
            pids |= _worker_pids(url)
        victim = min(pids)

        def act() -> None:
            if fault == "kill -9 of a worker":
                os.kill(victim, signal.SIGKILL)
            elif fault == "stopped worker":
                os.kill(victim, signal.SIGSTOP)
            else:
                pg.ctl("-m", fault.split()[0], "restart")

        sent, _ = _load(url, 6.0, 16, act)
        if fault == "stopped worker":
            assert victim not in _worker_pids(url)  # replaced by the supervisor
    recorded = _recorded(pg_url)
    ok = {i for i, s in sent.items() if s == 200}
    assert len(ok) > 50, sent
    assert ok <= set(recorded), f"lost: {sorted(ok - set(recorded))[:10]}"
    assert len(recorded) == len(set(recorded)), "recorded twice"
    assert set(recorded) - ok <= {i for i, s in sent.items() if s != 200}  # at most what had no 200 answer
    _verify(pg_url)


def _response(sock: socket.socket) -> bytes:
    """One whole HTTP response from ``sock``: its head, then ``content-length`` bytes of body
    (the two may arrive in separate reads), or what came before the server closed."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(4096)
        if not chunk:
            return data
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    fields = dict(line.partition(b":")[::2] for line in head.split(b"\r\n")[1:])
    length = next((int(v) for k, v in fields.items() if k.strip().lower() == b"content-length"), 0)
    while len(rest) < length:
        chunk = sock.recv(4096)
        if not chunk:
            break
        rest += chunk
    return head + b"\r\n\r\n" + rest


def test_slow_clients_hold_nothing(tmp_path: Path, pg_url: str) -> None:
    """A client that trickles its request head, and one that trickles a recording request's body:
    the first is closed at the head time limit, the second answered 408 with nothing recorded,
    and neither keeps the worker from answering others meanwhile."""
    migrate(pg_url)
    with server(tmp_path, workers=1, ledger=pg_url, extra=ROOMY) as url:
        port = port_of(url)
        head = socket.create_connection(("127.0.0.1", port))
        body = socket.create_connection(("127.0.0.1", port))
        payload = json.dumps({**OK, "slow": True}).encode()
        body.sendall(request("/v1/evaluate?run=slow", payload)[: -len(payload)] + payload[:3])
        stop = threading.Event()

        def trickle() -> None:
            for b in b"GET /healthz HTTP/1.1\r\nhost: x\r\n" * 10:
                if stop.wait(0.2):
                    return
                try:
                    head.send(bytes([b]))
                except OSError:
                    return

        t = threading.Thread(target=trickle)
        t.start()
        try:
            _not_recording_answers(url, 2)
            assert _call(url, "/v1/evaluate?run=fast", OK)[0] == 200
            body.settimeout(10)
            answer = _response(body)
            assert answer.startswith(b"HTTP/1.1 408") and b"serve.timeout" in answer
            head.settimeout(10)
            t0 = time.monotonic()
            while True:
                try:
                    if head.recv(1) == b"":
                        break  # closed by the server
                except ConnectionResetError:
                    break
                assert time.monotonic() - t0 < 10
        finally:
            stop.set()
            t.join()
            head.close()
            body.close()
    report = _verify(pg_url)
    assert report["runs"] == 1  # "fast" only


def test_the_least_privilege_role_serves_every_route(tmp_path: Path, pg_url: str) -> None:
    """`serve migrate --grant ROLE` makes the schema and grants the service's role what it needs, no
    more: recording, retries, anchoring and the team's blockers all work as that role."""
    role = "svc_" + pg_url.rsplit("/", 1)[1]
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN")
    out, err = io.StringIO(), io.StringIO()
    assert cli(["serve", "migrate", "--ledger", pg_url, "--grant", role], io.BytesIO(), out, err) == 0, err.getvalue()
    svc = pg_url.replace("postgres@", f"{role}@")
    with server(tmp_path, workers=1, ledger=svc, extra=ROOMY) as url:
        assert _call(url, "/v1/evaluate?run=r", OK)[0] == 200
        blocked = _call(url, "/v1/evaluate?run=r", CONTINUITY)[1]
        fixed = {**CONTINUITY, "dispatchReceipt": {"planId": "P", "taskId": "T2", "boundAt": "2025-01-01T00:00:00Z"}}
        assert _call(url, f"/v1/evaluate?run=r&retry={blocked['retry_token']}", fixed)[1]["node"] == "n3"
        items = [{"id": "b1", "question": "Need the key?", "status": "open"}]
        status, body, _ = _call(url, "/v1/blockers", {"project": "web", "machine": "m", "items": items}, method="PUT")
        assert status == 200 and body["stored"] == 1, body
        req = urllib.request.Request(url + "/v1/blockers", None, {"authorization": f"Bearer {TOKEN}"})
        with urllib.request.urlopen(req, timeout=10) as r:
            assert [b["id"] for b in json.load(r)["blockers"]] == ["b1"]
        time.sleep(1.5)  # an anchor interval
    report = _verify(pg_url)
    assert report["unanchored"] == 0 and report["head"]["anchors"] >= 1
    with psycopg.connect(svc, autocommit=True) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):
        conn.execute("UPDATE events SET body = body")
