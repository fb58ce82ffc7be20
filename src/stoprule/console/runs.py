"""Runs, their DAGs and their decisions, read from the ledger through its public reading API
(``runs``, ``status``, ``nodes``, ``node``, ``retry_of``, ``records``, ``head``, ``verify``: what
``stoprule log`` uses), never its tables.

Each call opens the ledger read-only and closes it again (a reader never holds up the hook's
writes; threads never share a connection). A run's chain check (``verify`` of that run) is
kept per run until the run's head hash moves; the run list checks the runs it shows within a
time budget and says "not yet checked" for the rest, so a page of a large ledger stays fast.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from stoprule import codes
from stoprule.console.hooklog import HookLog, LogEntry
from stoprule.ledger.backend import open_ledger
from stoprule.ledger.errors import LedgerError
from stoprule.ledger.events import canonical, digest
from stoprule.ledger.store import Node, RunStatus
from stoprule.ledger.verification import verify

__all__ = ["PROVIDERS", "Chain", "Decision", "FactRow", "RunFilter", "RunPage", "RunRow", "Runs"]

PAGE = 50  # runs per page of the list
VERIFY_BUDGET_S = 0.3  # the run list checks chains it has not checked for at most this long
TAMPER_BUDGET_S = 5.0  # ... and, to list the runs with a broken chain, every run's for at most this long

#: the fact providers, in the order they run: (declared by the agent?, where the value came from)
PROVIDERS: dict[str, tuple[bool, str]] = {
    "hook": (False, "the harness's stop payload"),
    "state": (True, "declared for the session (stoprule facts set, the MCP tools)"),
    "blockers": (True, "logged by the agent with the blocker tool"),
    "transcript": (False, "read from the session's transcript"),
    "closure": (True, "declared in the agent's closing trailer"),
    "git": (False, "observed in the working tree (git)"),
}


@dataclass(frozen=True)
class Chain:
    """A run's hash chain as ``log verify RUN`` found it (``checked`` False: not yet)."""

    checked: bool
    ok: bool = True
    breaks: tuple[str, ...] = ()
    events: int = 0


UNCHECKED = Chain(False)


@dataclass(frozen=True)
class RunRow:
    status: RunStatus
    harness: str | None
    open_blockers: int
    chain: Chain


@dataclass(frozen=True)
class RunFilter:
    q: str = ""  # part of the run id
    harness: str = ""
    verdict: str = ""
    state: str = ""  # "", not_ok, blocked, open_blockers, tamper

    STATES = ("", "not_ok", "blocked", "open_blockers", "tamper")

    def keeps(self, row: RunRow) -> bool:
        st = row.status
        if self.q and self.q.lower() not in st.run.lower():
            return False
        if self.harness and row.harness != self.harness:
            return False
        if self.verdict and st.verdict != self.verdict:
            return False
        return {
            "": True,
            "not_ok": not st.ok,
            "blocked": st.blocked > 0,
            "open_blockers": row.open_blockers > 0,
            "tamper": row.chain.checked and not row.chain.ok,
        }.get(self.state, True)


@dataclass(frozen=True)
class RunPage:
    rows: list[RunRow]
    total: int  # runs that pass the filter
    runs: int  # runs in the ledger
    page: int
    pages: int
    harnesses: list[str]
    verdicts: list[str]
    unchecked: int  # rows of this page whose chain was not checked within the budget


@dataclass(frozen=True)
class FactRow:
    field: str
    value: str  # JSON text
    provider: str | None  # which provider set it (None: the log does not say)
    key: str | None  # the provider's own name for it
    declared: bool | None


@dataclass
class Decision:
    """One node opened: the decision, its fact with provenance, and its place in the run."""

    status: RunStatus
    node: Node
    fact: dict[str, Any] | None
    retried_by: Node | None
    log: LogEntry | None
    log_matches: bool  # the log's copy of the fact is the one the ledger recorded
    facts: list[FactRow] = field(default_factory=list)

    @property
    def body(self) -> dict[str, Any]:
        return self.node.body

    @property
    def verdict(self) -> dict[str, Any]:
        return dict(self.node.body["verdict"])


class Runs:
    """The ledger at ``target`` (a file path or a PostgreSQL URL), read-only."""

    def __init__(self, target: str | None, log: HookLog | None = None) -> None:
        self.target = target
        self.log = log or HookLog(None)
        self._chains: dict[str, tuple[str, Chain]] = {}
        self._digests: dict[str, tuple[str, dict[str, list[Any]]]] = {}
        self._lock = threading.Lock()

    @contextmanager
    def opened(self) -> Iterator[Any]:
        """The ledger, open for reading (LedgerError ``ledger.missing`` when nothing was recorded yet)."""
        if not self.target:
            raise LedgerError(codes.LEDGER_MISSING, "no ledger is configured for this console")
        ledger = open_ledger(self.target, create=False, readonly=True)
        try:
            yield ledger
        finally:
            ledger.close()

    def version(self) -> str:
        """Changes whenever a decision is appended (the ledger head)."""
        try:
            with self.opened() as ledger:
                head = ledger.head()
                if head is not None:
                    return f"{head.anchors}:{head.hash[-12:]}"
                last = ledger.runs(1)
                return f"{last[0].run}:{last[0].head[-12:]}" if last else "empty"
        except LedgerError as exc:
            return exc.code

    # ------------------------------------------------------------------ chains

    def chain(self, ledger: Any, st: RunStatus) -> Chain:
        """The run's chain checked (once per head hash)."""
        with self._lock:
            cached = self._chains.get(st.run)
        if cached and cached[0] == st.head:
            return cached[1]
        report = verify(ledger, st.run)
        chain = Chain(True, report.ok, tuple(b.format() for b in report.breaks), report.events)
        with self._lock:
            self._chains[st.run] = (st.head, chain)
        return chain

    def _cached_chain(self, st: RunStatus) -> Chain:
        with self._lock:
            cached = self._chains.get(st.run)
        return cached[1] if cached and cached[0] == st.head else UNCHECKED

    # ------------------------------------------------------------------ the run list

    def page(self, flt: RunFilter, page: int, open_blockers: Callable[[str], int]) -> RunPage:
        self.log.refresh()
        with self.opened() as ledger:
            statuses = ledger.runs()
            rows = [
                RunRow(st, self.log.harness(st.run), open_blockers(st.run), self._cached_chain(st)) for st in statuses
            ]
            harnesses = sorted({r.harness for r in rows if r.harness})
            verdicts = sorted({r.status.verdict for r in rows})
            deadline = time.monotonic() + (TAMPER_BUDGET_S if flt.state == "tamper" else VERIFY_BUDGET_S)
            if flt.state == "tamper":  # the filter is about chains: check those not checked yet first
                rows = [self._checked(ledger, r, deadline) for r in rows]
            kept = [r for r in rows if flt.keeps(r)]
            pages = max(1, -(-len(kept) // PAGE))
            page = min(max(page, 1), pages)
            shown = [self._checked(ledger, r, deadline) for r in kept[(page - 1) * PAGE : page * PAGE]]
            unchecked = sum(not r.chain.checked for r in (rows if flt.state == "tamper" else shown))
        return RunPage(shown, len(kept), len(statuses), page, pages, harnesses, verdicts, unchecked)

    def _checked(self, ledger: Any, row: RunRow, deadline: float) -> RunRow:
        """The row with its chain checked, if it was not and time is left before ``deadline``."""
        if row.chain.checked or time.monotonic() >= deadline:
            return row
        return RunRow(row.status, row.harness, row.open_blockers, self.chain(ledger, row.status))

    # ------------------------------------------------------------------ one run

    def run(self, run: str) -> tuple[RunStatus, list[Node], Chain]:
        """The run's status, every node in append order, and its chain (LedgerError ``ledger.unknown_run``)."""
        self.log.refresh()
        with self.opened() as ledger:
            st = ledger.require(run)
            return st, ledger.nodes(run), self.chain(ledger, st)

    @staticmethod
    def graph(st: RunStatus, nodes: list[Node]) -> dict[str, Any]:
        """The run's DAG for the page's graph: nodes (kind, verdict, attempt) and edges (root, next, retry)."""
        return {
            "run": st.run,
            "tip": st.tip,
            "nodes": [
                {
                    "id": n.node,
                    "parent": n.parent,
                    "kind": n.kind,
                    "retryable": n.retryable,
                    "attempt": n.attempt,
                    "ok": n.ok,
                    "verdict": n.verdict,
                    "reason": n.reason,
                    "retry_of": n.retry_of,
                }
                for n in nodes
            ],
            "edges": [{"from": n.parent, "to": n.node, "kind": n.edge} for n in nodes if n.parent is not None],
        }

    def decision(self, run: str, node_id: str) -> Decision:
        """One decision (LedgerError ``ledger.unknown_run`` / ``ledger.unknown_node``)."""
        with self.opened() as ledger:
            st = ledger.require(run)
            node = ledger.node(run, node_id)
            if node is None:
                raise ledger.unknown_node(run, node_id)
            fact = None
            for n, text in ledger.records(run):
                if n.node == node_id:
                    try:
                        fact = json.loads(text)
                    except ValueError:
                        fact = None
                    break
            retried_by = ledger.retry_of(run, node_id)
        at = node.body.get("at")
        entry = self.log.entry(run, node_id, at if isinstance(at, str) else None)
        matches = entry is not None and entry.fact is not None and digest(canonical(entry.fact)) == node.fact
        d = Decision(st, node, fact, retried_by, entry, matches)
        d.facts = fact_rows(fact if isinstance(fact, dict) else {}, entry.provenance if entry else {})
        return d

    # ------------------------------------------------------------------ packs used

    def digests(self) -> list[dict[str, Any]]:
        """Each pack digest the ledger's decisions name: decisions, runs, first and last use (oldest first).
        A run's nodes are read again only when its head moves."""
        with self.opened() as ledger:
            per_run: list[dict[str, list[Any]]] = []
            for st in ledger.runs():
                with self._lock:
                    cached = self._digests.get(st.run)
                if cached is None or cached[0] != st.head:
                    seen: dict[str, list[Any]] = {}
                    for n in ledger.nodes(st.run):
                        at, pol = n.body["at"], n.body["policy"]
                        s = seen.setdefault(pol, [0, at, at])
                        s[0] += 1
                        s[1], s[2] = min(s[1], at), max(s[2], at)
                    cached = (st.head, seen)
                    with self._lock:
                        self._digests[st.run] = cached
                per_run.append(cached[1])
        out: dict[str, dict[str, Any]] = {}
        for seen in per_run:
            for pol, (count, first, last) in seen.items():
                d = out.setdefault(pol, {"policy": pol, "decisions": 0, "runs": 0, "first": first, "last": last})
                d["decisions"] += count
                d["runs"] += 1
                d["first"], d["last"] = min(d["first"], first), max(d["last"], last)
        return sorted(out.values(), key=lambda d: (d["first"], d["policy"]))

    def verify_all(self) -> Any:
        """``log verify`` over the whole ledger: every run, the ledger chain and its signed head."""
        with self.opened() as ledger:
            return verify(ledger)


def fact_rows(fact: dict[str, Any], provenance: dict[str, Any]) -> list[FactRow]:
    """The fact's fields with the provider that set each (as the hook logged it), in provider order."""
    fields = provenance["fields"] if isinstance(provenance.get("fields"), dict) else {}
    order = list(PROVIDERS)
    rows = []
    for name, value in fact.items():
        src = fields.get(name) if isinstance(fields.get(name), dict) else None
        provider = src.get("provider") if src and isinstance(src.get("provider"), str) else None
        key = src.get("key") if src and isinstance(src.get("key"), str) else None
        declared = PROVIDERS[provider][0] if provider in PROVIDERS else None
        rows.append(FactRow(name, json.dumps(value, ensure_ascii=False, indent=1), provider, key, declared))
    rows.sort(key=lambda r: (order.index(r.provider) if r.provider in order else len(order), r.field))
    return rows
