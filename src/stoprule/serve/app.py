"""The ASGI application: routes, bearer tokens and their scopes, size/batch/time limits, JSON errors.

Every response carries the served pack's digest (``stoprule-policy`` header; in JSON bodies as
``policy``). Every error is ``{"error": {"code", "message", ...}, "policy": ...}`` with the
CLI's codes (``fact.enum``, ``token.consumed``, ``ledger.busy`` ...) or a ``serve.*`` code of
its own; nothing ever answers with a traceback, nor names the database (its URL, host or file).
Evaluation runs on the event loop (a decision takes tens of microseconds; the engine's handles
are per thread), so a worker decides one fact at a time: scale with worker processes. Recording
and the team's store run on the worker's database threads (``database``), each request's wait
bounded: a stuck database never holds the loop, so ``/healthz`` and decisions without a run
keep answering.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
import time
from collections.abc import Callable
from contextlib import asynccontextmanager
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from stoprule import codes
from stoprule.agent.hook.adapters import ADAPTERS, adapter
from stoprule.agent.hook.event import PayloadError
from stoprule.agent.hook.runner import decision_of
from stoprule.config.serve import ServeConfig, Token
from stoprule.diagnostics import EvaluationError, ServeError
from stoprule.facts.parse import check_finite, parse_facts
from stoprule.ledger.backend import is_url
from stoprule.ledger.errors import LedgerError
from stoprule.ledger.postgres import display_url
from stoprule.ledger.recorder import Recorder, append_group, prepare
from stoprule.ledger.store import TIP, check_run_id
from stoprule.serve.console_mount import console_routes
from stoprule.serve.database import LABEL, Database
from stoprule.serve.metrics import Metrics
from stoprule.serve.policy import PackHolder, Served

__all__ = ["ENV_CONFIG", "Service", "create_app", "from_environment"]

ENV_CONFIG = "STOPRULE_SERVE_CONFIG"  # the config as JSON, for worker processes (see run.py)
_RECORD_GROUP = 256  # batch lines per ledger transaction (and between deadline checks)


class Refused(ServeError):
    """A request refused with an HTTP status and an error code."""


# ledger and token errors: which HTTP status
def _ledger_status(code: str) -> int:
    if code.startswith("token."):
        return 409
    if code in (codes.LEDGER_UNKNOWN_RUN, codes.LEDGER_UNKNOWN_NODE):
        return 404
    if code == codes.LEDGER_BAD_RUN_ID:
        return 400
    if code == codes.LEDGER_NOT_YOURS:
        return 403
    if code in (codes.LEDGER_BUSY, codes.LEDGER_IO, codes.LEDGER_UNAVAILABLE):
        return 503
    return 500


# what a client is told of a server-side ledger failure (the details go to the server's log)
_PUBLIC = {
    codes.LEDGER_BUSY: "the ledger is busy; nothing was recorded: try again",
    codes.LEDGER_IO: "the ledger cannot be written; nothing was recorded: try again",
    codes.LEDGER_UNAVAILABLE: "the ledger is not reachable; the decision is not known to have been recorded: try again",
}
_LOG = logging.getLogger("stoprule.serve")


class Service:
    """One worker's state: the pack, the metrics, the database threads (started on first use)."""

    def __init__(self, config: ServeConfig) -> None:
        self.config = config
        self.pack = PackHolder(config.policy)
        self.metrics = Metrics()
        self.db: Database | None = None
        if config.ledger is not None:
            size, timeout_ms = config.ledger_connections, config.limits.ledger_timeout_ms
            self.db = Database(config.ledger, size=size, timeout_ms=timeout_ms)
            self.metrics.database = self.db
        self._reloader: asyncio.Task[None] | None = None
        self.closing: list[Callable[[], None]] = []  # what the worker closes at shutdown (the console's board)

    # ------------------------------------------------------------------ plumbing

    def database(self) -> Database:
        if self.db is None:
            raise Refused(400, codes.SERVE_NO_LEDGER, "this server records nothing: it has no ledger configured")
        return self.db

    def team(self) -> Database:
        if not is_url(self.config.ledger):
            raise Refused(400, codes.SERVE_NO_TEAM_STORE, "team blockers need the server's ledger on PostgreSQL")
        return self.database()

    def public(self, message: str) -> str:
        """``message`` with the ledger's URL or file named as the server's ledger."""
        target = self.config.ledger
        if target:
            for shown in {display_url(target), target, os.path.abspath(target)}:
                message = message.replace(shown, LABEL)
        return message

    def respond(
        self, status: int, body: Any, served: Served | None = None, media: str = "application/json"
    ) -> Response:
        digest = (served or self.pack.current).digest
        content = body if isinstance(body, (bytes, str)) else json.dumps(body)
        return Response(content, status, headers={"stoprule-policy": digest}, media_type=media)

    def error(self, status: int, code: str, message: str, **extra: Any) -> Response:
        self.metrics.errors[code] += 1
        digest = self.pack.current.digest
        return self.respond(status, {"error": {"code": code, "message": message, **extra}, "policy": digest})

    def authorize(self, request: Request) -> Token | None:
        """The request's token (None: the server runs without auth); 401 without a valid one."""
        if not self.config.auth:
            return None
        token = self.config.token(request.headers.get("authorization"))
        if token is None:
            message = "a valid bearer token is required (Authorization: Bearer TOKEN)"
            raise Refused(401, codes.SERVE_UNAUTHORIZED, message)
        request.state.token = token
        return token

    def require(self, request: Request, scope: str) -> None:
        """403 unless the request's token has ``scope`` (``evaluate``, ``metrics``, ``console:read`` ...)."""
        token: Token | None = getattr(request.state, "token", None)
        if token is not None and not token.allows(scope):
            raise Refused(403, codes.SERVE_FORBIDDEN, f"token {token.name!r} does not have the scope {scope!r}")

    def recorder_args(self, request: Request, run: str) -> dict[str, Any]:
        """``by`` and ``own`` for recording into ``run``; 403 unless the token may record there."""
        token: Token | None = getattr(request.state, "token", None)
        if token is None:
            return {"by": None, "own": False}
        allowed, own = token.may_record(run)
        if not allowed:
            raise Refused(
                403,
                codes.SERVE_FORBIDDEN,
                f"token {token.name!r} may not record into run {run!r} (its scopes: " + ", ".join(token.scopes) + ")",
            )
        return {"by": token.name, "own": own}

    def projects(self, request: Request, project: str | None) -> tuple[str, ...] | None:
        """The projects the request may see of the team's store (None: every one); 403 for ``project``
        outside them."""
        token: Token | None = getattr(request.state, "token", None)
        allowed = token.projects() if token is not None else None
        if allowed is None:
            return (project,) if project else None
        if project is not None and project not in allowed:
            raise Refused(403, codes.SERVE_FORBIDDEN, f"token {token.name!r} may not use the blockers of {project!r}")  # type: ignore[union-attr]
        return (project,) if project else allowed

    async def body(self, request: Request, deadline: float) -> bytes:
        limit = self.config.limits.max_body_bytes
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise Refused(413, codes.SERVE_TOO_LARGE, f"the request body is {declared} bytes; the limit is {limit}")

        async def read() -> bytes:
            chunks, size = [], 0
            async for chunk in request.stream():
                size += len(chunk)
                if size > limit:
                    raise Refused(413, codes.SERVE_TOO_LARGE, f"the request body exceeds the limit of {limit} bytes")
                chunks.append(chunk)
            return b"".join(chunks)

        try:
            if sys.version_info >= (3, 11):  # a timer on this task (wait_for would start a task per request)
                async with asyncio.timeout(max(deadline - time.monotonic(), 0.001)):
                    return await read()
            return await asyncio.wait_for(read(), max(deadline - time.monotonic(), 0.001))
        except asyncio.TimeoutError:
            raise Refused(408, codes.SERVE_TIMEOUT, "the request body did not arrive within the time limit") from None

    def deadline(self) -> float:
        return time.monotonic() + self.config.limits.timeout_ms / 1000.0

    # ------------------------------------------------------------------ the ledger's anchors

    async def anchor(self) -> None:
        """On PostgreSQL, anchor the runs this server wrote, every ``anchor_interval_ms`` (each worker:
        whichever gets there first anchors for all; the others find nothing left or the head taken)."""
        if self.db is None or not is_url(self.config.ledger):
            return
        while True:
            await asyncio.sleep(self.config.anchor_interval_ms / 1000.0)
            try:
                self.metrics.anchored += await self.db.run(lambda s: s.ledger().anchor())
            except LedgerError as exc:
                self.metrics.anchor_failures += 1
                _LOG.warning("anchoring: %s", exc)

    # ------------------------------------------------------------------ the pack

    async def watch(self) -> None:
        """Poll the pack's files; compile a changed pack aside and swap it in (or refuse it)."""
        interval = self.config.reload_interval_ms / 1000.0
        while True:
            await asyncio.sleep(interval)
            new = self.pack.changed()
            if new is None:
                continue
            ok = await asyncio.to_thread(self.pack.reload, new)
            if ok:
                self.metrics.reloads += 1
            else:
                self.metrics.reload_failures += 1
            self.metrics.pack_refused = not ok


def _flag(request: Request, name: str) -> bool:
    return request.query_params.get(name, "").lower() in ("1", "true", "yes")


def _one_fact(data: bytes) -> Any:
    items = parse_facts(data)
    if len(items) != 1:
        message = f"/v1/evaluate takes one fact; the body holds {len(items)} (use /batch)"
        raise Refused(400, codes.SERVE_ONE_FACT, message)
    fact = items[0][1]
    if isinstance(fact, EvaluationError):
        raise fact
    return fact


def _hook_fact(value: Any) -> Any:
    """The hook body's ``fact`` checked as ``/v1/evaluate`` checks its body (the same parser: numbers
    JSON has, nesting and size limits): what a hook records is what ``eval`` reads back."""
    check_finite(value)
    try:
        text = json.dumps(value)
    except (ValueError, RecursionError):
        raise Refused(422, codes.FACT_TOO_DEEP, "the fact is nested too deeply") from None
    return _one_fact(text.encode())


def _recording(request: Request) -> tuple[str | None, str | None, str | None, bool]:
    q = request.query_params
    run, parent, retry = q.get("run"), q.get("parent"), q.get("retry")
    if run is None and (parent or retry or _flag(request, "checkpoint")):
        raise Refused(400, codes.SERVE_USAGE, "parent, retry and checkpoint need run=RUN_ID")
    if retry and parent:
        message = "retry and parent cannot be combined: a retry's parent is its token's node"
        raise Refused(400, codes.SERVE_USAGE, message)
    return run, parent, retry, _flag(request, "checkpoint")


def create_app(config: ServeConfig) -> Starlette:
    """The application for one worker process (the pack is compiled here: a bad pack stops start-up)."""
    svc = Service(config)

    def timed(route: str, handler: Any, *, auth: bool = True) -> Any:
        async def endpoint(request: Request) -> Response:
            response: Response
            t0 = time.perf_counter()
            try:
                if auth:
                    svc.authorize(request)
                response = await handler(request)
            except Refused as exc:
                response = svc.error(exc.status, exc.code, exc.message, **exc.extra)
            except EvaluationError as exc:
                response = svc.error(
                    422,
                    exc.code,
                    exc.message,
                    **{k: v for k, v in exc.to_dict().items() if k not in ("code", "message")},
                )
            except Exception as exc:  # noqa: BLE001 - never a traceback to the client
                if isinstance(exc, LedgerError):
                    status = _ledger_status(exc.code)
                    if status >= 500:
                        _LOG.warning("%s %s: %s", request.method, request.url.path, exc)
                    message = _PUBLIC.get(exc.code) or svc.public(exc.message)
                    if status == 500:
                        message = f"the ledger refused the decision ({exc.code}); the server's log says why"
                    response = svc.error(status, exc.code, message)
                else:
                    _LOG.error("%s %s failed", request.method, request.url.path, exc_info=exc)
                    response = svc.error(500, codes.SERVE_INTERNAL, "internal error; the server's log has the details")
            svc.metrics.observe(route, response.status_code, time.perf_counter() - t0)
            return response

        return endpoint

    async def record_one(
        request: Request,
        served: Served,
        run: str,
        fact: Any,
        *,
        parent: Any = None,
        retry: str | None = None,
        checkpoint: bool = False,
        stop: bool = False,
    ) -> Any:
        """Decide ``fact`` here, record it on a database thread (a retry is decided there too); a
        hook's ``stop`` after a retryable block is that block's retry (``Recorder.record_stop``)."""
        check_run_id(run)
        args = svc.recorder_args(request, run)
        db = svc.database()
        if retry:
            return await db.run(
                lambda s: Recorder(s.ledger(), served.evaluator, **args).retry(run, retry, fact, checkpoint=checkpoint)
            )
        prepared = prepare(served.evaluator, [fact], checkpoint=checkpoint)
        if isinstance(prepared[0], EvaluationError):
            raise prepared[0]
        item = (served.evaluator, {**args, "stop": stop}, run, prepared, TIP if parent is None else parent)
        return (await db.grouped(_append_group, item))[0]

    async def healthz(request: Request) -> Response:
        return svc.respond(
            200,
            {"ok": True, "policy": svc.pack.current.digest, "pack_refused": svc.pack.refused, "worker": os.getpid()},
        )

    async def metrics(request: Request) -> Response:
        svc.require(request, "metrics")
        cur = svc.pack.current
        return svc.respond(200, svc.metrics.render(cur.digest, cur.compiled_at), cur, "text/plain; version=0.0.4")

    async def policy(request: Request) -> Response:
        svc.require(request, "evaluate")
        cur = svc.pack.current
        return svc.respond(200, {**cur.info(), "policy": cur.digest, "refused": svc.pack.refused}, cur)

    async def evaluate(request: Request) -> Response:
        deadline = svc.deadline()
        run, parent, retry, checkpoint = _recording(request)
        if run is None:
            svc.require(request, "evaluate")
        else:
            svc.recorder_args(request, run)  # refused before the body is read
        data = await svc.body(request, deadline)
        served = svc.pack.current
        fact = _one_fact(data)
        if run is None:
            verdict = served.evaluator.evaluate(fact, strict=_flag(request, "strict"))
            svc.metrics.decisions[verdict.verdict] += 1
            return svc.respond(200, verdict.to_dict(), served)
        outcome = await record_one(request, served, run, fact, parent=parent, retry=retry, checkpoint=checkpoint)
        svc.metrics.decisions[outcome.verdict.verdict] += 1
        return svc.respond(200, outcome.envelope(), served)

    async def batch(request: Request) -> Response:
        deadline = svc.deadline()
        run, parent, retry, checkpoint = _recording(request)
        if retry:
            raise Refused(400, codes.SERVE_USAGE, "a retry takes one fact: POST it to /v1/evaluate")
        if run is None:
            svc.require(request, "evaluate")
        data = await svc.body(request, deadline)
        served = svc.pack.current
        items = parse_facts(data)
        if len(items) > config.limits.max_batch:
            raise Refused(
                413,
                codes.SERVE_BATCH_TOO_LARGE,
                f"the batch holds {len(items)} facts; the limit is {config.limits.max_batch}",
            )
        strict = _flag(request, "strict")
        out: list[str] = []
        if run is not None:
            check_run_id(run)
            args = svc.recorder_args(request, run)
            db = svc.database()
            next_parent: Any = TIP if parent is None else parent
        for start in range(0, len(items), _RECORD_GROUP):
            group = items[start : start + _RECORD_GROUP]
            if time.monotonic() > deadline:
                msg = "not decided: the request's time limit was spent"
                for line, _ in items[start:]:
                    svc.metrics.errors[codes.SERVE_TIMEOUT] += 1
                    out.append(json.dumps({"error": {"code": codes.SERVE_TIMEOUT, "message": msg, "line": line}}))
                break
            if run is None:
                good = [fact for _, fact in group if not isinstance(fact, EvaluationError)]
                decided = iter(served.evaluator.evaluate_many(good, on_error="return", strict=strict))
                for line, fact in group:
                    result = fact if isinstance(fact, EvaluationError) else next(decided)
                    if isinstance(result, EvaluationError):
                        result.extra.pop("index", None)
                    out.append(_line(svc, result, line))
                continue
            prepared = prepare(served.evaluator, [f for _, f in group], checkpoint=checkpoint)

            def job(s: Any, prepared: Any = prepared, first: Any = next_parent) -> Any:
                rec = Recorder(s.ledger(), served.evaluator, **args)
                rec.check_parent(run, first)
                return rec.append_prepared(run, prepared, first)[0]

            recorded = await db.run(job, within=deadline - time.monotonic())
            next_parent = TIP
            for (line, _), outcome in zip(group, recorded, strict=True):
                out.append(_line(svc, outcome, line))
        return svc.respond(200, "\n".join(out) + "\n", served, "application/x-ndjson")

    async def hook(request: Request) -> Response:
        harness = request.path_params["harness"]
        if harness not in ADAPTERS:
            raise Refused(404, codes.SERVE_UNKNOWN_HARNESS, f"no harness {harness!r} (known: {', '.join(ADAPTERS)})")
        deadline = svc.deadline()
        data = await svc.body(request, deadline)
        served = svc.pack.current
        try:
            body = json.loads(data)
        except RecursionError:
            raise Refused(422, codes.FACT_TOO_DEEP, "the body is nested too deeply") from None
        except ValueError as exc:
            raise Refused(400, codes.SERVE_BAD_JSON, f"the body is not JSON: {exc}") from None
        if not isinstance(body, dict) or not isinstance(body.get("fact"), dict):
            message = 'the body is {"payload": {...}, "fact": {...}, "event": ..., "run": ...}'
            raise Refused(400, codes.SERVE_USAGE, message)
        fact = _hook_fact(body["fact"])
        payload = body.get("payload") or {}
        if not isinstance(payload, dict):
            raise Refused(400, codes.HOOK_PAYLOAD, "payload: must be the harness's JSON object")
        mod = adapter(harness)
        try:
            event = mod.parse(payload, body.get("event"))
        except PayloadError as exc:
            raise Refused(400, codes.HOOK_PAYLOAD, str(exc)) from None
        run = body.get("run")
        envelope: dict[str, Any]
        if isinstance(run, str) and run and config.ledger is not None:  # a server without a ledger just decides
            outcome = await record_one(request, served, run, fact, stop=True)
            verdict, envelope = outcome.verdict, outcome.envelope()
        else:
            svc.require(request, "evaluate")
            verdict = served.evaluator.evaluate(fact, strict=bool(body.get("strict")))
            envelope = verdict.to_dict()
        svc.metrics.decisions[verdict.verdict] += 1
        decision = decision_of(verdict)
        output = mod.render(decision, event)
        answer = {"output": output, "decision": {"block": decision.block, "message": decision.message,
                                                 "notice": decision.notice},
                  "verdict": envelope, "policy": served.digest}  # fmt: skip
        return svc.respond(200, answer, served)

    def team_kind(request: Request) -> str:
        return request.url.path.rsplit("/", 1)[1][:-1]  # /v1/blockers -> blocker, /v1/reports -> report

    async def team(request: Request) -> Response:
        return await (team_list(request) if request.method == "GET" else team_put(request))

    async def team_put(request: Request) -> Response:
        kind = team_kind(request)
        body = await svc.body(request, svc.deadline())
        try:
            data = json.loads(body)
        except ValueError as exc:
            raise Refused(400, codes.SERVE_BAD_JSON, f"the body is not JSON: {exc}") from None
        if not (
            isinstance(data, dict)
            and isinstance(data.get("project"), str)
            and data["project"]
            and isinstance(data.get("items"), list)
            and all(isinstance(i, dict) for i in data["items"])
        ):
            raise Refused(400, codes.SERVE_USAGE, 'the body is {"project": NAME, "machine": HOST, "items": [{...}]}')
        svc.projects(request, data["project"])
        project, machine, items = data["project"], str(data.get("machine") or "?"), data["items"]

        def store(s: Any) -> tuple[int, list[dict[str, Any]]]:
            team = s.team()
            stored = team.put(project, machine, kind, items)
            return stored, team.resolved_here(project, items) if kind == "blocker" else []

        n, resolved = await svc.team().run(store)
        return svc.respond(200, {"stored": n, "resolved": resolved, "policy": svc.pack.current.digest})

    async def team_list(request: Request) -> Response:
        kind = team_kind(request)
        projects = svc.projects(request, request.query_params.get("project"))
        only_open = not _flag(request, "all")
        items = await svc.team().run(lambda s: s.team().list(kind, only_open=only_open, projects=projects))
        return svc.respond(200, {kind + "s": items, "policy": svc.pack.current.digest})

    async def not_found(request: Request, exc: Exception) -> Response:
        status = getattr(exc, "status_code", 404)
        code = {404: codes.SERVE_NOT_FOUND, 405: codes.SERVE_METHOD}.get(status, codes.SERVE_HTTP)
        return svc.error(status, code, f"{request.method} {request.url.path}: {getattr(exc, 'detail', '')}")

    async def internal(request: Request, exc: Exception) -> Response:
        return svc.error(500, codes.SERVE_INTERNAL, f"{type(exc).__name__}")

    routes = [
        Route("/healthz", timed("/healthz", healthz, auth=False), methods=["GET"]),
        Route("/metrics", timed("/metrics", metrics), methods=["GET"]),
        Route("/v1/policy", timed("/v1/policy", policy), methods=["GET"]),
        Route("/v1/evaluate", timed("/v1/evaluate", evaluate), methods=["POST"]),
        Route("/v1/evaluate/batch", timed("/v1/evaluate/batch", batch), methods=["POST"]),
        Route("/v1/hooks/{harness}", timed("/v1/hooks", hook), methods=["POST"]),
        Route("/v1/blockers", timed("/v1/blockers", team), methods=["GET", "PUT"]),
        Route("/v1/reports", timed("/v1/reports", team), methods=["GET", "PUT"]),
    ]

    routes += console_routes(svc)  # /console: the web console, behind the same tokens

    async def lifespan(app: Starlette) -> Any:
        tasks = [asyncio.create_task(svc.watch()), asyncio.create_task(svc.anchor())]
        try:
            yield
        finally:
            for task in tasks:
                task.cancel()
            if svc.db is not None:
                svc.db.close()
            for close in svc.closing:
                close()

    app = _Service(
        routes=routes,
        exception_handlers={HTTPException: not_found, Exception: internal},
        lifespan=asynccontextmanager(lifespan),
    )
    app.direct = {r.path: r.endpoint for r in routes if isinstance(r, Route) and r.methods == {"POST"}}
    app.state.service = svc
    return app


class _Service(Starlette):
    """The application, with the decision routes' POSTs handed straight to their endpoint: each answers
    every error itself (``timed``), so starlette's middleware, router and exception handlers would add
    nothing to what agents send most but their cost per request (a fifth of a worker's CPU)."""

    direct: dict[str, Any]

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            path: str = scope["path"]
            endpoint = self.direct.get(path)
            if endpoint is None and path.startswith("/v1/hooks/") and "/" not in path[10:] and path[10:]:
                endpoint = self.direct.get("/v1/hooks/{harness}")
                scope["path_params"] = {"harness": path[10:]}
            if endpoint is not None:
                scope["app"] = self
                response = await endpoint(Request(scope, receive, send))
                await response(scope, receive, send)
                return
        await super().__call__(scope, receive, send)


def _append_group(session: Any, items: list[tuple[Any, dict[str, Any], str, list[Any], Any]]) -> list[Any]:
    """On a database thread: single decisions of several requests appended together (one commit)."""
    led = session.ledger()
    return append_group(
        led, [(Recorder(led, ev, **args), run, prepared, parent) for ev, args, run, prepared, parent in items]
    )


def _line(svc: Service, result: Any, line: int) -> str:
    """One output line of a batch: the envelope, or the error object (with its input line)."""
    if isinstance(result, EvaluationError):
        svc.metrics.errors[result.code] += 1
        err = result.to_dict()
        err.setdefault("line", line)
        return json.dumps({"error": err})
    if hasattr(result, "envelope"):  # a recorded decision (ledger Outcome)
        svc.metrics.decisions[result.verdict.verdict] += 1
        return json.dumps(result.envelope())
    svc.metrics.decisions[result.verdict] += 1
    return json.dumps(result.to_dict())


def from_environment() -> Starlette:
    """The uvicorn factory for worker processes: the config comes as JSON in ``$STOPRULE_SERVE_CONFIG``."""
    return create_app(ServeConfig.from_env(json.loads(os.environ[ENV_CONFIG])))
