"""``stoprule serve``: the decision service over HTTP (starlette on uvicorn, process workers).

Modules, lowest first::

    metrics      counters and a latency histogram per worker, in Prometheus text format
    policy       the served pack: compiled aside, swapped atomically when its files change
    team         the team's shared blockers and reports (what hooks and MCP servers copy in)
    database     a worker's database work on threads, off its event loop, each wait bounded
    app          the ASGI application: routes, tokens and their scopes, limits, JSON errors
    connections  the HTTP protocol with a time limit on request heads and a cap on open connections
    run          start uvicorn with N worker processes under a supervisor that probes each
    console_mount  the web console under /console (:mod:`stoprule.console`) with the team's board

Its configuration (``ServeConfig``, read by the one loader) is :mod:`stoprule.config.serve`.

The layer sits above ``agent`` (the harness adapters) and ``ledger``, below the CLI. Nothing on
the hook's path imports it: clients speak plain HTTP (``stoprule.agent.hook.remote``).
"""
