"""Every configuration default, written once, as plain data.

:data:`DEFAULTS` holds each section of ``.stoprule/config.yaml`` (``hook``, ``providers``,
``blockers``, ``server``, ``ledger``); :data:`SERVE_DEFAULTS` the ``stoprule serve --config``
file's. The pydantic models of :mod:`stoprule.config.sections` and :mod:`stoprule.config.serve`
take their defaults from here, the hook reads them without pydantic
(:mod:`stoprule.config.reader`), and ``stoprule init`` writes its template from them
(:mod:`stoprule.config.template`); ``tests/config/test_defaults.py`` holds the three equal.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "DEFAULTS",
    "DEFAULT_BLOCKERS",
    "DEFAULT_HOOK",
    "DEFAULT_LEDGER",
    "DEFAULT_PROVIDERS",
    "DEFAULT_SERVER",
    "DEFAULT_SESSION",
    "DEFAULT_TOKEN_ENV",
    "PROVIDER_ORDER",
    "SERVE_DEFAULTS",
    "SERVE_LIMITS",
]

# Providers run in this fixed order; the first to set a field wins, and a later provider
# with another value is recorded as a conflict. Declarations (hook payload, declared
# state, the agent's closure trailer) come before inference (git); the transcript comes before the
# closure trailer, which is read from the transcript's last text when the payload has none.
PROVIDER_ORDER: tuple[str, ...] = ("hook", "state", "blockers", "transcript", "closure", "git")

# the environment variable that holds the decision service's bearer token
DEFAULT_TOKEN_ENV = "STOPRULE_SERVER_TOKEN"

DEFAULT_HOOK: dict[str, Any] = {
    "mode": "enforce",
    "fail": "open",
    "loop_cap": 3,
    "ledger": False,
    "budget_ms": 5000,
    "log": True,
    "strict": False,
    "permission_triage": False,
    "resident": False,
    "closed_message": (
        "stoprule could not decide whether you may stop (an internal error; see .stoprule/hook.log). "
        "Do not start new work: summarize the current state for the user, then stop."
    ),
}
DEFAULT_PROVIDERS: dict[str, Any] = {
    "enabled": list(PROVIDER_ORDER),
    "timeout_ms": 1500,
    "fields": {},
    "transcript_tail_bytes": 262144,
    "transcript_max_scan_bytes": 8388608,
}
DEFAULT_BLOCKERS: dict[str, Any] = {
    "enabled": True,
    "file": ".stoprule/blockers.md",
    "max_per_run": 50,
    "cooldown_seconds": 30.0,
    "rotate_bytes": 10 * 1024 * 1024,
    "rotate_entries": 1000,
    "soft_categories": [],
    "ledger": False,
}
DEFAULT_SERVER: dict[str, Any] = {
    "url": None,
    "token_env": DEFAULT_TOKEN_ENV,
    "timeout_ms": 2000,
    "record": True,
    "project": None,
}
DEFAULT_LEDGER: dict[str, Any] = {"url": None}
# ``session:``: the session mode is detected from the harness (``auto``), or set
DEFAULT_SESSION: dict[str, Any] = {"mode": "auto"}

#: section of ``.stoprule/config.yaml`` -> its defaults
DEFAULTS: dict[str, dict[str, Any]] = {
    "hook": DEFAULT_HOOK,
    "providers": DEFAULT_PROVIDERS,
    "blockers": DEFAULT_BLOCKERS,
    "server": DEFAULT_SERVER,
    "ledger": DEFAULT_LEDGER,
    "session": DEFAULT_SESSION,
}

# ``stoprule serve --config FILE``
SERVE_LIMITS: dict[str, int] = {
    "max_body_bytes": 1 << 20,  # a request body larger than this: 413
    "max_batch": 10_000,  # facts per batch request: 413 beyond
    "timeout_ms": 10_000,  # reading the body and deciding; past it: 408 (a batch: the rest of its lines)
    "ledger_timeout_ms": 1_500,  # a request's database work (waiting included); past it: 503
    "header_timeout_ms": 10_000,  # a connection's next request head must be complete by then, or it is closed
    "max_connections": 0,  # per worker; 0: what its open-file limit allows
}
SERVE_DEFAULTS: dict[str, Any] = {
    "policy": None,
    "tokens": [],
    "ledger": None,
    "limits": SERVE_LIMITS,
    "reload_interval_ms": 1000,
    "ledger_connections": 4,  # database threads (and connections) per worker
    "anchor_interval_ms": 1000,  # PostgreSQL: how often the runs written are anchored in the ledger chain
    "probe_timeout_ms": 5000,  # a worker silent this long to the supervisor's probe is replaced
    "console": {"resolve": []},  # the tokens that may resolve blockers in /console (every token reads)
}
