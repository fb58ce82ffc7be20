"""Per-worker counters and a latency histogram, rendered as Prometheus text (format 0.0.4).

Each worker process counts its own requests; a scrape reaches one worker and its samples
carry ``worker="<pid>"``, so sum by the other labels across workers (docs/serve.md).
"""

from __future__ import annotations

import os
from collections import Counter
from typing import Any

__all__ = ["BUCKETS", "Metrics"]

BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


def _esc(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


class Metrics:
    def __init__(self) -> None:
        self.decisions: Counter[str] = Counter()  # by verdict
        self.errors: Counter[str] = Counter()  # by error code
        self.requests: Counter[tuple[str, int]] = Counter()  # by (route, status)
        self.latency: dict[str, list[int]] = {}  # route -> bucket counts (+Inf last)
        self.latency_sum: dict[str, float] = {}
        self.reloads = 0
        self.reload_failures = 0
        self.pack_refused = False  # the last pack change failed check: the previous pack keeps serving
        self.database: Any = None  # the worker's database threads (serve.database.Database), if it records
        self.anchored = 0  # runs this worker anchored
        self.anchor_failures = 0

    def observe(self, route: str, status: int, seconds: float) -> None:
        self.requests[route, status] += 1
        counts = self.latency.setdefault(route, [0] * (len(BUCKETS) + 1))
        for i, bound in enumerate(BUCKETS):
            if seconds <= bound:
                counts[i] += 1
                break
        else:
            counts[-1] += 1
        self.latency_sum[route] = self.latency_sum.get(route, 0.0) + seconds

    def render(self, policy: str, compiled_at: float) -> str:
        w = f'worker="{os.getpid()}"'
        out = [
            "# HELP stoprule_decisions_total Decisions made, by verdict.",
            "# TYPE stoprule_decisions_total counter",
        ]
        out += [f'stoprule_decisions_total{{{w},verdict="{_esc(v)}"}} {n}' for v, n in sorted(self.decisions.items())]
        out += [
            "# HELP stoprule_errors_total Refused requests and facts, by error code.",
            "# TYPE stoprule_errors_total counter",
        ]
        out += [f'stoprule_errors_total{{{w},code="{_esc(c)}"}} {n}' for c, n in sorted(self.errors.items())]
        out += [
            "# HELP stoprule_requests_total HTTP requests, by route and status.",
            "# TYPE stoprule_requests_total counter",
        ]
        out += [
            f'stoprule_requests_total{{{w},route="{_esc(r)}",status="{s}"}} {n}'
            for (r, s), n in sorted(self.requests.items())
        ]
        out += [
            "# HELP stoprule_request_seconds Request latency, by route.",
            "# TYPE stoprule_request_seconds histogram",
        ]
        for route, counts in sorted(self.latency.items()):
            acc = 0
            labels = f'{w},route="{_esc(route)}"'
            for bound, n in zip((*BUCKETS, "+Inf"), counts, strict=True):
                acc += n
                out.append(f'stoprule_request_seconds_bucket{{{labels},le="{bound}"}} {acc}')
            out.append(f"stoprule_request_seconds_sum{{{labels}}} {self.latency_sum[route]:.6f}")
            out.append(f"stoprule_request_seconds_count{{{labels}}} {acc}")
        out += [
            "# HELP stoprule_policy_info The pack being served (its digest).",
            "# TYPE stoprule_policy_info gauge",
            f'stoprule_policy_info{{{w},digest="{_esc(policy)}"}} 1',
            "# HELP stoprule_policy_compiled_timestamp_seconds When the served pack was compiled.",
            "# TYPE stoprule_policy_compiled_timestamp_seconds gauge",
            f"stoprule_policy_compiled_timestamp_seconds{{{w}}} {compiled_at:.3f}",
            "# HELP stoprule_policy_reloads_total Pack changes compiled and swapped in.",
            "# TYPE stoprule_policy_reloads_total counter",
            f"stoprule_policy_reloads_total{{{w}}} {self.reloads}",
            "# HELP stoprule_policy_reload_failures_total Pack changes refused (they failed check).",
            "# TYPE stoprule_policy_reload_failures_total counter",
            f"stoprule_policy_reload_failures_total{{{w}}} {self.reload_failures}",
            "# HELP stoprule_policy_refused 1 while the pack on disk fails check and the previous pack serves.",
            "# TYPE stoprule_policy_refused gauge",
            f"stoprule_policy_refused{{{w}}} {int(self.pack_refused)}",
        ]
        db = self.database
        if db is not None:
            out += [
                "# HELP stoprule_ledger_waiting Requests waiting on the ledger now (queued or running).",
                "# TYPE stoprule_ledger_waiting gauge",
                f"stoprule_ledger_waiting{{{w}}} {db.waiting}",
                "# HELP stoprule_ledger_timeouts_total Requests answered 503: the ledger did not answer in time.",
                "# TYPE stoprule_ledger_timeouts_total counter",
                f"stoprule_ledger_timeouts_total{{{w}}} {db.timeouts}",
                "# HELP stoprule_ledger_reconnects_total Requests run again on a fresh connection after a dead one.",
                "# TYPE stoprule_ledger_reconnects_total counter",
                f"stoprule_ledger_reconnects_total{{{w}}} {db.reconnects}",
                "# HELP stoprule_ledger_anchored_total Runs this worker anchored in the ledger chain.",
                "# TYPE stoprule_ledger_anchored_total counter",
                f"stoprule_ledger_anchored_total{{{w}}} {self.anchored}",
                "# HELP stoprule_ledger_anchor_failures_total Anchoring attempts that failed (see the log).",
                "# TYPE stoprule_ledger_anchor_failures_total counter",
                f"stoprule_ledger_anchor_failures_total{{{w}}} {self.anchor_failures}",
            ]
        return "\n".join(out) + "\n"
