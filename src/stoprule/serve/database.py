"""A worker's database work, off its event loop, each request's share of it bounded in time.

Recording a decision (and the team's blockers) runs on one of ``ledger_connections`` threads,
each with its own connection, opened on first use. The event loop only waits for the result, at
most ``limits.ledger_timeout_ms``: past that the request gets 503 ``ledger.unavailable`` and the
job is stopped where it is (a job still queued never starts; a running one has its connection
cut, so its thread is free again at once and its transaction is void). A stuck database costs the
requests that record, and nothing else: ``/healthz`` and decisions without a run never wait on it.

Single decisions to record (what most agents send: one stop at a time) are grouped: a thread
that finds several waiting appends them in one transaction, one commit for all, so the database
flushes once for the group; a request refused on its own is refused alone, and a group the
database refuses is tried again request by request.

Connections carry the same bound on the database side (statement, lock and idle-in-transaction
timeouts, TCP keep-alive and user timeout: ``ledger.postgres``). A connection that failed is
closed and opened again by the next job; a job that failed on a dead connection before it sent
any COMMIT (after a database restart, the first use of every old connection) is run once more on
a fresh one, so a restart the database has recovered from costs no request.
"""

from __future__ import annotations

import asyncio
import collections
import os
import queue
import socket
import threading
import time
from collections.abc import Callable
from contextlib import suppress
from functools import partial
from typing import Any, TypeVar

from stoprule import codes
from stoprule.ledger.backend import is_url, open_ledger
from stoprule.ledger.errors import LedgerError
from stoprule.ledger.postgres import PgLedger
from stoprule.serve.team import TeamStore

__all__ = ["LABEL", "Database", "Session"]

T = TypeVar("T")
LABEL = "the server's ledger"  # how messages name the ledger (never its URL, host or file)


class Session:
    """One database thread's connections: the ledger and the team store, each opened on first use."""

    def __init__(self, target: str, timeout_ms: int) -> None:
        self.target = target
        self.timeout_ms = timeout_ms
        self._ledger: Any = None
        self._team: Any = None
        self._commits = 0  # COMMITs sent on connections since closed

    def ledger(self) -> Any:
        """The ledger (created here only as a file: a PostgreSQL schema is `stoprule serve migrate`'s)."""
        if self._ledger is None:
            ledger = open_ledger(self.target, create=not is_url(self.target), label=LABEL, timeout_ms=self.timeout_ms)
            if isinstance(ledger, PgLedger):
                ledger.auto_anchor = False  # the worker anchors on its own timer
            self._ledger = ledger
        return self._ledger

    def team(self) -> Any:
        if self._team is None:
            self._team = TeamStore(self.target, self.timeout_ms)
        return self._team

    @property
    def commits(self) -> int:
        """COMMITs sent through this session so far (a job that failed with none sent left nothing behind)."""
        return (
            self._commits
            + (getattr(self._ledger, "commits", 0) if self._ledger is not None else 0)
            + (self._team.commits if self._team is not None else 0)
        )

    def interrupt(self) -> None:
        """From another thread: stop what this session's connections are doing now (cut the socket;
        SQLite: interrupt the statement). The job fails at once; the connections are opened again."""
        for conn in (self._ledger, self._team):
            if conn is None:
                continue
            raw = getattr(conn.connection, "raw", None)
            if raw is None:  # SQLite
                with suppress(Exception):
                    conn.connection.interrupt()
                continue
            with suppress(Exception):  # the connection may be closed already
                cut = socket.socket(fileno=os.dup(raw.fileno()))  # the same socket, by another descriptor
                try:
                    cut.shutdown(socket.SHUT_RDWR)
                finally:
                    cut.close()

    def close(self) -> None:
        """Close every connection (a dead one may fail to close: it is gone either way)."""
        self._commits = self.commits
        for conn in (self._ledger, self._team):
            if conn is not None:
                with suppress(Exception):
                    conn.close()
        self._ledger = self._team = None


class _Job:
    def __init__(self, fn: Callable[[Session], Any], loop: asyncio.AbstractEventLoop, deadline: float) -> None:
        self.fn, self.loop, self.deadline = fn, loop, deadline
        self.future: asyncio.Future[Any] = loop.create_future()
        self.lock = threading.Lock()
        self.session: Session | None = None  # while it runs
        self.expired = self.done = False
        self.item: Any = None  # a grouped job's part
        self.group: list[_Job] = [self]  # the jobs it runs with (a grouped job: its group)

    def expire(self) -> None:
        """Past its time: never start; if running, stop it where it is (a group: once every part expired)."""
        with self.lock:
            if self.done:
                return
            self.expired = True
            if self.session is not None and all(j.expired for j in self.group):
                self.session.interrupt()

    def settle(self, result: Any, error: BaseException | None) -> None:
        """On the event loop: answer the request waiting (unless it was answered already)."""
        if self.future.done():
            return
        if error is not None:
            self.future.set_exception(error)
        else:
            self.future.set_result(result)


def _deliver(settled: list[tuple[_Job, Any, BaseException | None]]) -> None:
    """From a database thread: each job's outcome to its event loop, one wake-up per loop."""
    loops: dict[asyncio.AbstractEventLoop, list[tuple[_Job, Any, BaseException | None]]] = {}
    for item in settled:
        loops.setdefault(item[0].loop, []).append(item)
    for loop, items in loops.items():
        with suppress(RuntimeError):  # the loop is closed: nobody waits any more
            loop.call_soon_threadsafe(_settle_all, items)


def _settle_all(items: list[tuple[_Job, Any, BaseException | None]]) -> None:
    for job, result, error in items:
        job.settle(result, error)


def _first(fn: Callable[[Session, list[Any]], list[Any]], item: Any, session: Session) -> Any:
    return fn(session, [item])[0]


class Database:
    """``size`` threads doing one worker's database work (started on first use)."""

    GROUP = 128  # at most this many parts in one group
    STALL = 0.1  # seconds a group runs alone: past that (a held lock, a slow link), the next one starts beside it

    def __init__(self, target: str, *, size: int, timeout_ms: int) -> None:
        self.target = target
        self.size = size
        self.timeout = timeout_ms / 1000.0
        self._timeout_ms = timeout_ms
        self._queue: queue.SimpleQueue[_Job | Callable[[Session, list[Any]], list[Any]] | None] = queue.SimpleQueue()
        self._parts: dict[Any, collections.deque[_Job]] = {}  # grouped jobs waiting, by the function running them
        self._threads: list[threading.Thread] = []
        self._writer = threading.Lock()  # held by the group running (one at a time, unless it stalls)
        self.timeouts = 0  # jobs past their time (answered 503)
        self.reconnects = 0  # jobs run again on a fresh connection after a dead one
        self.waiting = 0  # jobs queued or running now

    async def run(self, fn: Callable[[Session], T], *, within: float | None = None) -> T:
        """``fn(session)`` on a database thread: its result, or its exception; LedgerError
        ``ledger.unavailable`` when it is not done within the time limit (``within`` seconds if
        shorter), and then it is stopped where it is."""
        done: T = await self._wait(fn, None, None, within)
        return done

    async def grouped(self, fn: Callable[[Session, list[Any]], list[Any]], item: Any) -> Any:
        """``fn(session, items)[i]`` for this ``item``, run together with the other items given
        ``fn`` that are waiting then: one result (or exception instance) per item, in order. Time
        limits as :meth:`run`."""
        return await self._wait(None, fn, item, None)

    async def _wait(self, fn: Any, group_fn: Any, item: Any, within: float | None) -> Any:
        if not self._threads:
            self._start()
        limit = self.timeout if within is None else max(min(within, self.timeout), 0.001)
        loop = asyncio.get_running_loop()
        job = _Job(fn, loop, time.monotonic() + limit)
        self.waiting += 1
        if group_fn is None:
            self._queue.put(job)
        else:
            job.item = item
            self._parts.setdefault(group_fn, collections.deque()).append(job)
            self._queue.put(group_fn)  # a thread takes every part waiting then
        timer = loop.call_later(limit, self._expired, job, limit)
        try:
            return await job.future
        finally:
            timer.cancel()
            self.waiting -= 1

    def _expired(self, job: _Job, limit: float) -> None:
        """On the event loop, at a job's time limit: its request is answered 503 now (the job is stopped
        where it is; what it comes to later, nobody waits for)."""
        if job.future.done():
            return
        job.expire()
        self.timeouts += 1
        job.future.set_exception(
            LedgerError(
                codes.LEDGER_UNAVAILABLE,
                f"{LABEL} did not answer within {limit * 1000:.0f} ms; the decision is not known to have been recorded",
            )
        )

    def _start(self) -> None:
        for i in range(self.size):
            t = threading.Thread(target=self._serve, name=f"stoprule-db-{i}", daemon=True)
            t.start()
            self._threads.append(t)

    def _serve(self) -> None:
        session = Session(self.target, self._timeout_ms)
        try:
            while True:
                task = self._queue.get()
                if task is None:
                    return
                if isinstance(task, _Job):
                    self._single(task, session)
                else:
                    self._group(task, session)
        finally:
            session.close()

    def _single(self, job: _Job, session: Session) -> None:
        if self._started([job], session):
            self._finish([job], *self._outcome(lambda: self._call([job], session, job.fn)))

    def _started(self, jobs: list[_Job], session: Session) -> list[_Job]:
        """The jobs still worth starting (not past their time), marked as running on ``session``."""
        out = []
        now = time.monotonic()
        for job in jobs:
            with job.lock:
                if job.expired or now > job.deadline:
                    job.done = True  # its request was answered already: never start it
                    continue
                job.session = session
                out.append(job)
        for job in out:
            job.group = out
        return out

    @staticmethod
    def _outcome(call: Callable[[], Any]) -> tuple[Any, BaseException | None]:
        try:
            return call(), None
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting request(s)
            return None, exc

    @staticmethod
    def _finish(jobs: list[_Job], result: Any, error: BaseException | None, deliver: bool = True) -> None:
        for job in jobs:
            with job.lock:
                job.done, job.session = True, None
        if deliver:
            _deliver([(job, result, error) for job in jobs])

    def _group(self, fn: Callable[[Session, list[Any]], list[Any]], session: Session) -> None:
        """Run every part of ``fn`` waiting (up to GROUP) as one group, once the group before it is done
        (so the parts that arrive meanwhile commit together: one transaction, one flush to disk) or
        has run for ``STALL`` (a stuck group holds back nothing else for longer); if the database
        refuses the group, each part on its own."""
        parts = self._parts.get(fn)
        if not parts:
            return  # an earlier group took this part
        alone = self._writer.acquire(timeout=self.STALL)
        try:
            self._run_group(fn, parts, session)
        finally:
            if alone:
                self._writer.release()

    def _run_group(
        self, fn: Callable[[Session, list[Any]], list[Any]], parts: collections.deque[_Job], session: Session
    ) -> None:
        taken: list[_Job] = []
        while parts and len(taken) < self.GROUP:
            try:
                taken.append(parts.popleft())
            except IndexError:
                break
        jobs = self._started(taken, session)
        if not jobs:
            return
        results, error = self._outcome(lambda: self._call(jobs, session, lambda s: fn(s, [j.item for j in jobs])))
        alone = isinstance(error, LedgerError) and error.code != codes.LEDGER_UNAVAILABLE and len(jobs) > 1
        settled: list[tuple[_Job, Any, BaseException | None]] = []
        for i, job in enumerate(jobs):
            if alone:  # one part may be what the database refused: each on its own
                job.group = [job]
                got, err = self._outcome(partial(self._call, [job], session, partial(_first, fn, job.item)))
            else:
                got, err = (None, error) if error is not None else (results[i], None)
            result, failure = (None, got) if isinstance(got, BaseException) else (got, err)
            self._finish([job], result, failure, deliver=alone)  # each answered as soon as it is known
            settled.append((job, result, failure))
        if not alone:
            _deliver(settled)  # the group's answers in one wake-up of the event loop

    def _call(self, jobs: list[_Job], session: Session, fn: Callable[[Session], Any]) -> Any:
        sent = session.commits
        try:
            return fn(session)
        except LedgerError as exc:
            if exc.code != codes.LEDGER_UNAVAILABLE:
                raise
            session.close()  # the connection is dead or was cut: the next job opens a fresh one
            now = time.monotonic()
            if session.commits != sent or any(j.expired or now > j.deadline for j in jobs):
                raise  # a COMMIT went out: whether it landed is not known, so it is not sent twice
        self.reconnects += 1
        return fn(session)

    def close(self) -> None:
        """Stop the threads (each closes its connections once its job is done)."""
        for _ in self._threads:
            self._queue.put(None)
        self._threads = []
