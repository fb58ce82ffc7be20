"""The ASGI application: routes, bearer-token check, size/batch/time limits, JSON errors.

Every response carries the served pack's digest (``stoprule-policy`` header; in JSON bodies as
``policy``). Every error is ``{"error": {"code", "message", ...}, "policy": ...}`` with the
CLI's codes (``fact.enum``, ``token.consumed``, ``ledger.busy`` ...) or a ``serve.*`` code of
its own; nothing ever answers with a traceback. Evaluation runs on the event loop (a decision
takes tens of microseconds; the engine's handles are per thread), so a worker decides one fact
at a time: scale with worker processes.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from contextlib import suppress
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from stoprule.config.serve import ServeConfig
from stoprule.diagnostics import EvaluationError, ServeError
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
    if code in ("ledger.unknown_run", "ledger.unknown_node"):
        return 404
    if code == "ledger.bad_run_id":
        return 400
    if code in ("ledger.busy", "ledger.io", "ledger.unavailable"):
        return 503
    return 500


class Service:
    """One worker's state: the pack, the metrics, the ledger (opened on first use)."""

    def __init__(self, config: ServeConfig) -> None:
        self.config = config
        self.pack = PackHolder(config.policy)
        self.metrics = Metrics()
        self._ledger: Any = None
        self._team: Any = None
        self._reloader: asyncio.Task[None] | None = None

    # ------------------------------------------------------------------ plumbing

    def ledger(self) -> Any:
        if self.config.ledger is None:
            raise Refused(400, "serve.no_ledger", "this server records nothing: it has no ledger configured")
        if self._ledger is None:
            from stoprule.ledger.backend import open_ledger

            self._ledger = open_ledger(self.config.ledger, create=True)
        return self._ledger

    def team(self) -> Any:
        from stoprule.ledger.backend import is_url

        if not is_url(self.config.ledger):
            raise Refused(400, "serve.no_team_store", "team blockers need the server's ledger on PostgreSQL")
        if self._team is None:
            from stoprule.serve.team import TeamStore

            assert self.config.ledger is not None
            self._team = TeamStore(self.config.ledger)
        return self._team

    def drop_ledger(self) -> None:
        """Forget the ledger connection after an error that may have broken it (reopened on next use)."""
        if self._ledger is not None:
            with suppress(Exception):  # a dead connection may fail to close
                self._ledger.close()
            self._ledger = None
        if self._team is not None:
            with suppress(Exception):
                self._team.close()
            self._team = None

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

    def authorize(self, request: Request) -> None:
        if self.config.auth and self.config.token_name(request.headers.get("authorization")) is None:
            raise Refused(401, "serve.unauthorized", "a valid bearer token is required (Authorization: Bearer TOKEN)")

    async def body(self, request: Request, deadline: float) -> bytes:
        limit = self.config.limits.max_body_bytes
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise Refused(413, "serve.too_large", f"the request body is {declared} bytes; the limit is {limit}")

        async def read() -> bytes:
            chunks, size = [], 0
            async for chunk in request.stream():
                size += len(chunk)
                if size > limit:
                    raise Refused(413, "serve.too_large", f"the request body exceeds the limit of {limit} bytes")
                chunks.append(chunk)
            return b"".join(chunks)

        try:
            return await asyncio.wait_for(read(), max(deadline - time.monotonic(), 0.001))
        except asyncio.TimeoutError:
            raise Refused(408, "serve.timeout", "the request body did not arrive within the time limit") from None

    def deadline(self) -> float:
        return time.monotonic() + self.config.limits.timeout_ms / 1000.0

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
    from stoprule.facts.parse import parse_facts

    items = parse_facts(data)
    if len(items) != 1:
        raise Refused(400, "serve.one_fact", f"/v1/evaluate takes one fact; the body holds {len(items)} (use /batch)")
    fact = items[0][1]
    if isinstance(fact, EvaluationError):
        raise fact
    return fact


def _recording(request: Request) -> tuple[str | None, str | None, str | None, bool]:
    q = request.query_params
    run, parent, retry = q.get("run"), q.get("parent"), q.get("retry")
    if run is None and (parent or retry or _flag(request, "checkpoint")):
        raise Refused(400, "serve.usage", "parent, retry and checkpoint need run=RUN_ID")
    if retry and parent:
        raise Refused(400, "serve.usage", "retry and parent cannot be combined: a retry's parent is its token's node")
    return run, parent, retry, _flag(request, "checkpoint")


def create_app(config: ServeConfig) -> Starlette:
    """The application for one worker process (the pack is compiled here: a bad pack stops start-up)."""
    svc = Service(config)

    def timed(route: str, handler: Any, *, auth: bool = True) -> Any:
        async def endpoint(request: Request) -> Response:
            t0 = time.perf_counter()
            try:
                if auth:
                    svc.authorize(request)
                response = await handler(request)
            except Refused as exc:
                response = svc.error(exc.status, exc.code, exc.message, **exc.extra)
            except EvaluationError as exc:
                response = svc.error(422, exc.code, exc.message, **{k: v for k, v in exc.to_dict().items()
                                                                     if k not in ("code", "message")})  # fmt: skip
            except Exception as exc:  # noqa: BLE001 - never a traceback to the client
                from stoprule.ledger.errors import LedgerError

                if isinstance(exc, LedgerError):
                    if _ledger_status(exc.code) >= 500:
                        svc.drop_ledger()
                    response = svc.error(_ledger_status(exc.code), exc.code, exc.message)
                else:
                    svc.drop_ledger()
                    response = svc.error(500, "serve.internal", f"{type(exc).__name__}: {exc}"[:500])
            svc.metrics.observe(route, response.status_code, time.perf_counter() - t0)
            return response

        return endpoint

    async def healthz(request: Request) -> Response:
        return svc.respond(200, {"ok": True, "policy": svc.pack.current.digest, "pack_refused": svc.pack.refused,
                                 "worker": os.getpid()})  # fmt: skip

    async def metrics(request: Request) -> Response:
        cur = svc.pack.current
        return svc.respond(200, svc.metrics.render(cur.digest, cur.compiled_at), cur, "text/plain; version=0.0.4")

    async def policy(request: Request) -> Response:
        cur = svc.pack.current
        return svc.respond(200, {**cur.info(), "policy": cur.digest, "refused": svc.pack.refused}, cur)

    async def evaluate(request: Request) -> Response:
        deadline = svc.deadline()
        run, parent, retry, checkpoint = _recording(request)
        data = await svc.body(request, deadline)
        served = svc.pack.current
        fact = _one_fact(data)
        if run is None:
            verdict = served.evaluator.evaluate(fact, strict=_flag(request, "strict"))
            svc.metrics.decisions[verdict.verdict] += 1
            return svc.respond(200, verdict.to_dict(), served)
        from stoprule.ledger.recorder import Recorder
        from stoprule.ledger.store import TIP

        recorder = Recorder(svc.ledger(), served.evaluator)
        if retry:
            outcome = recorder.retry(run, retry, fact, checkpoint=checkpoint)
        else:
            outcome = recorder.record(run, fact, parent=TIP if parent is None else parent, checkpoint=checkpoint)
        svc.metrics.decisions[outcome.verdict.verdict] += 1
        return svc.respond(200, outcome.envelope(), served)

    async def batch(request: Request) -> Response:
        from stoprule.facts.parse import parse_facts

        deadline = svc.deadline()
        run, parent, retry, checkpoint = _recording(request)
        if retry:
            raise Refused(400, "serve.usage", "a retry takes one fact: POST it to /v1/evaluate")
        data = await svc.body(request, deadline)
        served = svc.pack.current
        items = parse_facts(data)
        if len(items) > config.limits.max_batch:
            raise Refused(413, "serve.batch_too_large",
                          f"the batch holds {len(items)} facts; the limit is {config.limits.max_batch}")  # fmt: skip
        strict = _flag(request, "strict")
        out: list[str] = []
        recorder = None
        if run is not None:
            from stoprule.ledger.recorder import Recorder
            from stoprule.ledger.store import TIP

            recorder = Recorder(svc.ledger(), served.evaluator)
            next_parent: Any = TIP if parent is None else parent
        for start in range(0, len(items), _RECORD_GROUP):
            group = items[start : start + _RECORD_GROUP]
            if time.monotonic() > deadline:
                msg = "not decided: the request's time limit was spent"
                for line, _ in items[start:]:
                    svc.metrics.errors["serve.timeout"] += 1
                    out.append(json.dumps({"error": {"code": "serve.timeout", "message": msg, "line": line}}))
                break
            if recorder is None:
                good = [fact for _, fact in group if not isinstance(fact, EvaluationError)]
                decided = iter(served.evaluator.evaluate_many(good, on_error="return", strict=strict))
                for line, fact in group:
                    result = fact if isinstance(fact, EvaluationError) else next(decided)
                    if isinstance(result, EvaluationError):
                        result.extra.pop("index", None)
                    out.append(_line(svc, result, line))
                continue
            assert run is not None
            recorded = recorder.record_many(run, [f for _, f in group], parent=next_parent, checkpoint=checkpoint)
            next_parent = TIP
            for (line, _), outcome in zip(group, recorded, strict=True):
                out.append(_line(svc, outcome, line))
        return svc.respond(200, "\n".join(out) + "\n", served, "application/x-ndjson")

    async def hook(request: Request) -> Response:
        from stoprule.agent.hook.adapters import ADAPTERS, adapter
        from stoprule.agent.hook.event import PayloadError
        from stoprule.agent.hook.runner import decision_of

        harness = request.path_params["harness"]
        if harness not in ADAPTERS:
            raise Refused(404, "serve.unknown_harness", f"no harness {harness!r} (known: {', '.join(ADAPTERS)})")
        deadline = svc.deadline()
        data = await svc.body(request, deadline)
        served = svc.pack.current
        try:
            body = json.loads(data)
        except ValueError as exc:
            raise Refused(400, "serve.bad_json", f"the body is not JSON: {exc}") from None
        if not isinstance(body, dict) or not isinstance(body.get("fact"), dict):
            raise Refused(400, "serve.usage", 'the body is {"payload": {...}, "fact": {...}, "event": ..., "run": ...}')
        payload = body.get("payload") or {}
        if not isinstance(payload, dict):
            raise Refused(400, "hook.payload", "payload: must be the harness's JSON object")
        mod = adapter(harness)
        try:
            event = mod.parse(payload, body.get("event"))
        except PayloadError as exc:
            raise Refused(400, "hook.payload", str(exc)) from None
        run = body.get("run")
        envelope: dict[str, Any]
        if isinstance(run, str) and run and config.ledger is not None:  # a server without a ledger just decides
            from stoprule.ledger.recorder import Recorder

            outcome = Recorder(svc.ledger(), served.evaluator).record_stop(run, body["fact"])
            verdict, envelope = outcome.verdict, outcome.envelope()
        else:
            verdict = served.evaluator.evaluate(body["fact"], strict=bool(body.get("strict")))
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
            raise Refused(400, "serve.bad_json", f"the body is not JSON: {exc}") from None
        if not (
            isinstance(data, dict)
            and isinstance(data.get("project"), str)
            and data["project"]
            and isinstance(data.get("items"), list)
            and all(isinstance(i, dict) for i in data["items"])
        ):
            raise Refused(400, "serve.usage", 'the body is {"project": NAME, "machine": HOST, "items": [{...}]}')
        n = svc.team().put(data["project"], str(data.get("machine") or "?"), kind, data["items"])
        resolved = svc.team().resolved_here(data["project"], data["items"]) if kind == "blocker" else []
        return svc.respond(200, {"stored": n, "resolved": resolved, "policy": svc.pack.current.digest})

    async def team_list(request: Request) -> Response:
        kind = team_kind(request)
        items = svc.team().list(kind, only_open=not _flag(request, "all"), project=request.query_params.get("project"))
        return svc.respond(200, {kind + "s": items, "policy": svc.pack.current.digest})

    async def not_found(request: Request, exc: Exception) -> Response:
        status = getattr(exc, "status_code", 404)
        code = {404: "serve.not_found", 405: "serve.method"}.get(status, "serve.http")
        return svc.error(status, code, f"{request.method} {request.url.path}: {getattr(exc, 'detail', '')}")

    async def internal(request: Request, exc: Exception) -> Response:
        return svc.error(500, "serve.internal", f"{type(exc).__name__}")

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
    from stoprule.serve.console_mount import console_routes

    routes += console_routes(svc)  # /console: the web console, behind the same tokens

    async def lifespan(app: Starlette) -> Any:
        task = asyncio.create_task(svc.watch())
        try:
            yield
        finally:
            task.cancel()
            svc.drop_ledger()

    from contextlib import asynccontextmanager

    app = Starlette(routes=routes, exception_handlers={HTTPException: not_found, Exception: internal},
                    lifespan=asynccontextmanager(lifespan))  # fmt: skip
    app.state.service = svc
    return app


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
