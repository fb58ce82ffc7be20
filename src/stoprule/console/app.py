"""The console's ASGI application: server-rendered pages (Jinja2, autoescaped), a little static
JavaScript (the run graph, live regions), and the user's actions on blockers.

    create_console(runs=Runs(...), board=LocalBoard(...), policy=PolicyView(...), gate=KeyGate(...))

Pages: ``/`` runs, ``/run`` one run's DAG and decisions, ``/decision`` one decision,
``/blockers`` the board (``POST /blockers/resolve``, ``/blockers/export``), ``/reports``,
``/policy`` (``/policy/audit``, ``/policy/packs``, ``/policy/diff``), ``/verify`` (the whole ledger). Data:
``/api/graph``, ``/version``; ``/events`` is a server-sent event stream that says when the
ledger or the board changed, so open pages refresh their live regions without a reload.

Everything the agent wrote (facts, blocker texts, reports, messages) reaches the page only
through the templates' escaping or as text in the graph's canvas; no page has an inline script
(the Content-Security-Policy forbids them). Reading takes a grant from the gate
(:mod:`.access`); resolving takes one that may resolve and the form's CSRF value.
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any
from urllib.parse import parse_qs, urlencode

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from stoprule import codes
from stoprule.console.access import Gate, Grant
from stoprule.console.board import Board, group_blockers
from stoprule.console.policy import PolicyView
from stoprule.console.runs import PROVIDERS, RunFilter, Runs
from stoprule.diagnostics import PolicyError
from stoprule.ledger.errors import LedgerError

__all__ = ["create_console"]

STATIC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "static")
POLL_S = 1.0  # how often the event stream looks for changes
KEEPALIVE_S = 15.0
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
HEADERS = {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
           "Cache-Control": "no-store", "X-Frame-Options": "DENY"}  # fmt: skip
MAX_FORM_BYTES = 16 << 10
TABLE_ROWS = 100  # a run page lists its last decisions (the graph shows every one; ?all=1 lists every one)


def _templates() -> Environment:
    env = Environment(
        loader=PackageLoader("stoprule.console", "templates"),
        autoescape=select_autoescape(["html"]),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["pretty"] = lambda v: json.dumps(v, ensure_ascii=False, indent=1)
    env.filters["short"] = lambda d: (d.partition(":")[2] or d)[:12] if isinstance(d, str) else d
    env.filters["pct"] = lambda v: f"{100 * v:.1f}%" if isinstance(v, (int, float)) else "—"
    env.globals["PROVIDERS"] = PROVIDERS
    return env


class _Refused(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


def create_console(
    *, runs: Runs, board: Board, policy: PolicyView, gate: Gate, title: str = "stoprule", project: str | None = None
) -> Starlette:
    """The console over ``runs`` (the ledger), ``board`` (blockers, reports) and ``policy`` (the pack);
    ``project``: the one project every run belongs to (None: a team's, not known per run)."""
    env = _templates()

    def base(request: Request) -> str:
        return str(request.scope.get("root_path", "")).rstrip("/")

    def page(request: Request, template: str, grant: Grant | None, status: int = 200, **ctx: Any) -> HTMLResponse:
        html = env.get_template(template).render(
            base=base(request), grant=grant, title=ctx.pop("heading", title), site=title, request=request, **ctx
        )
        return HTMLResponse(html, status, headers=HEADERS)

    def guarded(handler: Any, *, api: bool = False) -> Any:
        async def endpoint(request: Request) -> Response:
            grant = gate.grant(request)
            if grant is None:
                if api:
                    return JSONResponse({"error": "not signed in"}, 401, headers=HEADERS)
                if gate.accepts_login:
                    return RedirectResponse(f"{base(request)}/login", 303, headers=HEADERS)
                return page(request, "login.html", None, 401, hint=gate.login_hint, heading="Sign in")
            if "key" in request.query_params:  # the link's key: kept in a cookie, dropped from the address
                rest = [(k, v) for k, v in request.query_params.multi_items() if k != "key"]
                target = request.url.path + (f"?{urlencode(rest)}" if rest else "")
                response: Response = RedirectResponse(target, 303, headers=HEADERS)
                response.set_cookie(
                    gate.cookie, grant.credential, httponly=True, samesite="strict", path=base(request) or "/"
                )
                return response
            try:
                if asyncio.iscoroutinefunction(handler):
                    result: Response = await handler(request, grant)
                else:
                    result = await run_in_threadpool(handler, request, grant)
                return result
            except _Refused as exc:
                if api:
                    return JSONResponse({"error": exc.message}, exc.status, headers=HEADERS)
                return page(request, "error.html", grant, exc.status, message=exc.message, heading="Not found")
            except LedgerError as exc:
                status = 404 if exc.code in (codes.LEDGER_UNKNOWN_RUN, codes.LEDGER_UNKNOWN_NODE) else 503
                if api:
                    return JSONResponse({"error": exc.message, "code": exc.code}, status, headers=HEADERS)
                return page(request, "error.html", grant, status, message=exc.message, heading="Ledger")

        return endpoint

    # ------------------------------------------------------------------ runs

    def open_counts() -> dict[str, int]:
        counts: dict[str, int] = {}
        for b in board.blockers():
            if b.get("status") == "open":
                counts[str(b.get("session"))] = counts.get(str(b.get("session")), 0) + 1
        return counts

    def runs_page(request: Request, grant: Grant) -> Response:
        q = request.query_params
        flt = RunFilter(
            q.get("q", "").strip(),
            q.get("harness", ""),
            q.get("verdict", ""),
            q.get("state", "") if q.get("state", "") in RunFilter.STATES else "",
        )
        counts = open_counts()
        try:
            result = runs.page(flt, _int(q.get("page"), 1), lambda run: counts.get(run, 0))
        except LedgerError as exc:
            if exc.code != codes.LEDGER_MISSING:
                raise
            return page(
                request, "runs.html", grant, result=None, empty=exc.message, flt=flt, nav="runs", heading="Runs"
            )
        return page(
            request,
            "runs.html",
            grant,
            result=result,
            flt=flt,
            nav="runs",
            heading="Runs",
            project=project,
            query=[(k, v) for k, v in q.multi_items() if k != "page"],
        )

    def run_page(request: Request, grant: Grant) -> Response:
        run = _required(request, "run")
        st, nodes, chain = runs.run(run)
        listed = nodes if request.query_params.get("all") else nodes[-TABLE_ROWS:]
        return page(
            request,
            "run.html",
            grant,
            st=st,
            nodes=nodes,
            listed=listed,
            chain=chain,
            nav="runs",
            heading=f"Run {run}",
            harness=runs.log.harness(run),
            graph=runs.graph(st, nodes),
        )

    def graph_api(request: Request, grant: Grant) -> Response:
        st, nodes, _ = runs.run(_required(request, "run"))
        return JSONResponse(runs.graph(st, nodes), headers=HEADERS)

    def decision_page(request: Request, grant: Grant) -> Response:
        d = runs.decision(_required(request, "run"), _required(request, "node"))
        template = "_decision.html" if request.query_params.get("fragment") else "decision.html"
        return page(request, template, grant, d=d, nav="runs", heading=f"Decision {d.node.node} of {d.status.run}")

    def verify_page(request: Request, grant: Grant) -> Response:
        return page(request, "verify.html", grant, report=runs.verify_all(), nav="runs", heading="Ledger check")

    # ------------------------------------------------------------------ blockers and reports

    def blockers_page(request: Request, grant: Grant) -> Response:
        q = request.query_params
        items = board.blockers()
        session, project, show = q.get("session", ""), q.get("project", ""), q.get("show", "open")
        kept = [
            b
            for b in items
            if (not session or b.get("session") == session)
            and (not project or b.get("project") == project)
            and (show == "all" or b.get("status") == "open" or b.get("kind") == "soft")
        ]
        sessions = sorted({str(b.get("session")) for b in items})
        projects = sorted({str(b.get("project")) for b in items})
        return page(
            request,
            "blockers.html",
            grant,
            groups=group_blockers(kept),
            sessions=sessions,
            projects=projects,
            session=session,
            project=project,
            show=show,
            nav="blockers",
            heading="Blockers",
            total=len(items),
            open=sum(b.get("status") == "open" for b in items),
            done=q.get("resolved"),
            team=board.team,
        )

    async def resolve(request: Request, grant: Grant) -> Response:
        if request.method != "POST":
            raise _Refused(405, "resolve with the board's form")
        body = await request.body()
        if len(body) > MAX_FORM_BYTES:
            raise _Refused(413, "the form is too large")
        form = {k: v[0] for k, v in parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True).items()}
        if form.get("csrf") != grant.csrf:
            raise _Refused(403, "the form is stale or did not come from this console: reload the board")
        if not grant.resolve:
            raise _Refused(403, f"this console is read-only: {grant.read_only}")
        blocker_id, project = form.get("id", ""), form.get("project", "")
        note = form.get("note", "").strip()[:2000] or None
        try:
            hit = await run_in_threadpool(board.resolve, project, blocker_id, note, grant.who)
        except OSError as exc:
            raise _Refused(503, f"the blocker could not be resolved: {exc}") from None
        if hit is None:
            raise _Refused(404, f"no blocker {blocker_id!r} in project {project!r}")
        back = {k: form[k] for k in ("session", "project", "show") if form.get(k)}
        back["resolved"] = blocker_id
        return RedirectResponse(f"{base(request)}/blockers?{urlencode(back)}", 303, headers=HEADERS)

    def export(request: Request, grant: Grant) -> Response:
        fmt = "md" if request.query_params.get("format") == "md" else "json"
        name, media = ("blockers.md", "text/markdown") if fmt == "md" else ("blockers.ndjson", "application/x-ndjson")
        return Response(
            board.export(fmt),
            headers={**HEADERS, "Content-Disposition": f'attachment; filename="{name}"'},
            media_type=f"{media}; charset=utf-8",
        )

    def reports_page(request: Request, grant: Grant) -> Response:
        q = request.query_params
        items = board.reports()
        task, project = q.get("task", ""), q.get("project", "")
        shown = [r for r in items if (not task or r["task_id"] == task) and (not project or r["project"] == project)]
        return page(
            request,
            "reports.html",
            grant,
            reports=shown,
            total=len(items),
            task=task,
            nav="reports",
            heading="Blocked reports",
        )

    # ------------------------------------------------------------------ policy

    def policy_page(request: Request, grant: Grant) -> Response:
        try:
            state = policy.current()
        except PolicyError as exc:
            return page(request, "error.html", grant, 200, message=exc.render(), nav="policy", heading="Policy")
        return page(
            request, "policy_page.html", grant, state=state, coverage=policy.coverage(), nav="policy", heading="Policy"
        )

    def packs_fragment(request: Request, grant: Grant) -> Response:
        try:
            used = runs.digests()
        except LedgerError:
            used = []
        pairs = [(a["policy"], b["policy"]) for a, b in zip(used, used[1:], strict=False)]
        return page(
            request, "_packs.html", grant, state=policy.current(), used=used, copies=policy.copies(), pairs=pairs
        )

    def audit_fragment(request: Request, grant: Grant) -> Response:
        return page(request, "_audit.html", grant, audit=policy.audit())

    def diff_fragment(request: Request, grant: Grant) -> Response:
        old, new = _required(request, "old"), _required(request, "new")
        try:
            report = policy.diff(old, new)
        except PolicyError as exc:
            report = {"error": exc.render()}
        return page(request, "_diff.html", grant, report=report, old=old, new=new)

    # ------------------------------------------------------------------ live

    def version() -> str:
        return f"{runs.version()}|{board.version()}"

    def version_api(request: Request, grant: Grant) -> Response:
        return JSONResponse({"version": version()}, headers=HEADERS)

    async def events(request: Request, grant: Grant) -> Response:
        async def stream() -> Any:
            last = await run_in_threadpool(version)
            yield f"retry: 3000\nevent: hello\ndata: {last}\n\n"
            quiet = 0.0
            while True:
                await asyncio.sleep(POLL_S)
                now = await run_in_threadpool(version)
                if now != last:
                    last, quiet = now, 0.0
                    yield f"event: change\ndata: {now}\n\n"
                else:
                    quiet += POLL_S
                    if quiet >= KEEPALIVE_S:
                        quiet = 0.0
                        yield ": keep-alive\n\n"

        return StreamingResponse(stream(), media_type="text/event-stream", headers=HEADERS)

    # ------------------------------------------------------------------ signing in

    async def login(request: Request) -> Response:
        if request.method == "POST" and gate.accepts_login:
            body = await request.body()
            token = parse_qs(body.decode("utf-8", "replace")).get("token", [""])[0].strip() if len(body) < 4096 else ""
            grant = gate.check(token) if token else None
            if grant is not None:
                response = RedirectResponse(f"{base(request)}/", 303, headers=HEADERS)
                response.set_cookie(
                    gate.cookie,
                    token,
                    httponly=True,
                    samesite="strict",
                    path=base(request) or "/",
                    secure=request.url.scheme == "https",
                )
                return response
            return page(
                request, "login.html", None, 401, hint=gate.login_hint, failed=True, form=True, heading="Sign in"
            )
        return page(request, "login.html", None, 200, hint=gate.login_hint, form=gate.accepts_login, heading="Sign in")

    async def logout(request: Request) -> Response:
        response = RedirectResponse(f"{base(request)}/login", 303, headers=HEADERS)
        response.delete_cookie(gate.cookie, path=base(request) or "/")
        return response

    routes = [
        Route("/", guarded(runs_page)),
        Route("/run", guarded(run_page)),
        Route("/decision", guarded(decision_page)),
        Route("/verify", guarded(verify_page)),
        Route("/blockers", guarded(blockers_page)),
        Route("/blockers/resolve", guarded(resolve), methods=["POST"]),
        Route("/blockers/export", guarded(export)),
        Route("/reports", guarded(reports_page)),
        Route("/policy", guarded(policy_page)),
        Route("/policy/audit", guarded(audit_fragment)),
        Route("/policy/packs", guarded(packs_fragment)),
        Route("/policy/diff", guarded(diff_fragment)),
        Route("/api/graph", guarded(graph_api, api=True)),
        Route("/version", guarded(version_api, api=True)),
        Route("/events", guarded(events, api=True)),
        Route("/login", login, methods=["GET", "POST"]),
        Route("/logout", logout, methods=["POST"]),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    return Starlette(routes=routes)


def _int(text: str | None, default: int) -> int:
    try:
        return int(text) if text else default
    except ValueError:
        return default


def _required(request: Request, name: str) -> str:
    value = request.query_params.get(name)
    if not value:
        raise _Refused(400, f"the address needs ?{name}=...")
    return value
