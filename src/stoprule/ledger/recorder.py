"""Recording decisions: evaluate a fact, append it to a run, mint a retry token; retry and replay.

A decision's node kind comes from its verdict: ``step`` when the verdict is ok (``checkpoint``
when asked), ``blocked_attempt`` when it is not. A blocked attempt is ``retryable`` when the
pack's verdict kind says so, else terminal; only retryable blocks get a token.

Retry (``retry``): the token's signature, key, run and node are checked; if the blocked node
was already retried, the same fact (by digest) gets the recorded outcome back and nothing is
appended, a different fact is refused (the token is consumed). Otherwise the corrected fact is
evaluated and appended as the blocked node's child, in a transaction that re-checks that no one
retried it meanwhile (a unique index on ``retry_of`` backs this up).

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

from stoprule import codes
from stoprule._util.records import record
from stoprule._util.redact import redact_obj
from stoprule.diagnostics import EvaluationError, FactError
from stoprule.ledger import keys, tokens
from stoprule.ledger.errors import LedgerError, TokenError
from stoprule.ledger.events import canonical, digest, verdict_from_event
from stoprule.ledger.store import TIP, check_run_id

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator
    from typing import Any

    from stoprule.engine.evaluator import Evaluator, Verdict
    from stoprule.ledger.protocols import LedgerBackend
    from stoprule.ledger.store import Node

__all__ = ["GROUP", "Outcome", "Prepared", "Recorder", "append_group", "fact_identity", "prepare"]

GROUP = 256  # decisions per transaction in batch mode (each decision stays all-or-nothing)


@record
class Outcome:
    """A recorded decision: the verdict, its node, the retry token (retryable blocks only)."""

    verdict: Verdict
    node: Node
    token: str | None
    replayed: bool = False

    def envelope(self) -> dict[str, Any]:
        """The verdict envelope plus ``run``, ``node``, ``parent``, ``kind``, ``retryable``, ``attempt``
        (and ``retry_token`` for retryable blocks, ``replayed`` for replays)."""
        out = self.verdict.to_dict()
        n = self.node
        out.update(run=n.run, node=n.node, parent=n.parent, kind=n.kind, retryable=n.retryable, attempt=n.attempt)
        if self.token is not None:
            out["retry_token"] = self.token
        if self.replayed:
            out["replayed"] = True
        return out


def fact_identity(fact: Any) -> tuple[str, str]:
    """``(digest, canonical JSON)`` of a fact as submitted (secrets redacted: what the ledger
    keeps): key order and spacing do not matter. A number JSON cannot write (NaN, an infinity: what
    ``1e999`` reads as) is refused (``fact.not_json``): the ledger keeps only facts it can give back."""
    try:
        text = canonical(redact_obj(fact), finite=True)
    except ValueError:
        raise FactError(
            codes.FACT_NOT_JSON,
            "the fact holds a number JSON cannot write (NaN, or an infinity such as 1e999): not recorded",
        ) from None
    return digest(text), text


@record
class Prepared:
    """A fact decided and ready to append: its verdict, digest and canonical body, node kind."""

    verdict: Verdict
    digest: str
    body: str
    kind: str
    retryable: bool


def _kind(evaluator: Evaluator, verdict: Verdict, checkpoint: bool) -> tuple[str, bool]:
    if verdict.ok:
        return ("checkpoint" if checkpoint else "step"), False
    meta = evaluator.compiled.verdicts.get(verdict.verdict)
    return "blocked_attempt", bool(meta and meta.retryable)


def prepare(
    evaluator: Evaluator, facts: Iterable[Any], *, checkpoint: bool = False
) -> list[Prepared | EvaluationError]:
    """Decide each fact (nothing touches a ledger): one result per fact, an EvaluationError for a bad one."""
    out: list[Prepared | EvaluationError] = []
    for fact in facts:
        if isinstance(fact, EvaluationError):
            out.append(fact)
            continue
        try:
            verdict = evaluator.evaluate(fact)
        except EvaluationError as exc:
            out.append(exc)
            continue
        out.append(Prepared(verdict, *fact_identity(fact), *_kind(evaluator, verdict, checkpoint)))
    return out


class Recorder:
    """Records decisions of one pack into one ledger (``by``: the server token recording them; with
    ``own``, only into new runs or runs ``by`` started)."""

    def __init__(
        self,
        ledger: LedgerBackend,
        evaluator: Evaluator,
        *,
        by: str | None = None,
        own: bool = False,
        stop: bool = False,
    ) -> None:
        self.ledger = ledger
        self.evaluator = evaluator
        self.by = by
        self.own = own
        self.stop = stop  # a stop hook's: after a retryable block, the next decision is its retry
        self._ring: keys.KeyRing | None = None

    def _signing_ring(self) -> keys.KeyRing:
        if self._ring is None or self._ring.active is None:
            self._ring = keys.ensure(self.ledger.keys_path)
        return self._ring

    def _mint(self, node: Node) -> str | None:
        if not node.retryable:
            return None
        return tokens.mint(self._signing_ring(), node.run, node.node, node.attempt)

    # ------------------------------------------------------------------ new decisions

    def record(self, run: str, fact: Any, *, parent: Any = TIP, checkpoint: bool = False) -> Outcome:
        """Evaluate and record one fact (EvaluationError if it is invalid: nothing is recorded)."""
        (result,) = self.record_many(run, [fact], parent=parent, checkpoint=checkpoint)
        if isinstance(result, EvaluationError):
            raise result
        return result

    def record_many(
        self,
        run: str,
        facts: Iterable[Any],
        *,
        parent: Any = TIP,
        checkpoint: bool = False,
        group: int = GROUP,
    ) -> Iterator[Outcome | EvaluationError]:
        """Evaluate and record facts in order, one result per fact (a EvaluationError for a bad one).

        ``parent`` is the first decision's parent; each later one follows the run's tip.
        Up to ``group`` decisions share a transaction; results are yielded once it commits.
        """
        self.check_parent(run, parent)
        batch: list[Any] = []
        for fact in facts:
            batch.append(fact)
            if len(batch) >= group:
                results, parent = self._commit(run, batch, parent, checkpoint)
                yield from results
                batch = []
        if batch:
            results, parent = self._commit(run, batch, parent, checkpoint)
            yield from results

    def _commit(
        self, run: str, batch: list[Any], parent: Any, checkpoint: bool
    ) -> tuple[list[Outcome | EvaluationError], Any]:
        """Evaluate a batch outside the lock, then append its good facts in one transaction."""
        return self.append_prepared(run, prepare(self.evaluator, batch, checkpoint=checkpoint), parent)

    def append_prepared(
        self, run: str, prepared: list[Prepared | EvaluationError], parent: Any = TIP
    ) -> tuple[list[Outcome | EvaluationError], Any]:
        """Append the good ones of ``prepared`` (see :func:`prepare`) in one transaction, the first
        after ``parent``; the results in order, and the parent for what follows."""
        good = [p for p in prepared if not isinstance(p, EvaluationError)]
        if any(p.retryable for p in good):
            self._signing_ring()  # the key file exists before any block that needs a token is recorded
        nodes: list[Node] = []
        if good:
            with self.ledger.write():
                self.ledger.hold([run], len(good))
                nodes = self._append_all(run, good, parent)
            parent = TIP
        return self._outcomes(prepared, nodes), parent

    def _append_all(self, run: str, good: list[Prepared], parent: Any) -> list[Node]:
        """Inside a write transaction: ``good`` after ``parent``, in order (only the first can be refused)."""
        nodes = []
        for g in good:
            retry_of = self._open_block(run) if self.stop and parent is TIP else None
            nodes.append(
                self.ledger.append(
                    run,
                    g.verdict,
                    g.digest,
                    g.body,
                    kind=g.kind,
                    retryable=g.retryable,
                    parent=parent,
                    retry_of=retry_of,
                    by=self.by,
                    own=self.own,
                )
            )
            parent = TIP
        return nodes

    def _open_block(self, run: str) -> str | None:
        """Inside a write transaction holding ``run``: its tip, if that is a retryable block not retried yet."""
        st = self.ledger.status(run)
        if st is None or st.tip_kind != "blocked_attempt" or not st.retryable:
            return None
        return st.tip if self.ledger.retry_of(run, st.tip) is None else None

    def _outcomes(
        self, prepared: list[Prepared | EvaluationError], nodes: list[Node]
    ) -> list[Outcome | EvaluationError]:
        appended = iter(nodes)
        return [
            p if isinstance(p, EvaluationError) else Outcome(p.verdict, (n := next(appended)), self._mint(n))
            for p in prepared
        ]

    def check_parent(self, run: str, parent: Any) -> None:
        """LedgerError unless ``parent`` (a node id; TIP and None need no check) is a node of ``run``."""
        check_run_id(run)
        if parent is not TIP and parent is not None and self.ledger.node(run, parent) is None:
            raise self.ledger.unknown_node(run, parent)

    def record_stop(self, run: str, fact: Any) -> Outcome:
        """A stop hook's decision. After a retryable block the agent was kept working, so its next
        stop is that block's retry (a ``retry`` edge, ``attempt`` + 1: the run's retry chain);
        otherwise the decision follows the run's tip. No token is needed: the hook is the recorder."""
        check_run_id(run)
        stop = Recorder(self.ledger, self.evaluator, by=self.by, own=self.own, stop=True)
        (result,), _ = stop.append_prepared(run, prepare(self.evaluator, [fact]))
        if isinstance(result, EvaluationError):
            raise result
        return result

    # ------------------------------------------------------------------ retries

    def retry(self, run: str, token: str, fact: Any, *, checkpoint: bool = False) -> Outcome:
        """Retry the blocked node ``token`` names with a corrected fact (or replay the recorded retry)."""
        check_run_id(run)
        claims = tokens.verify(keys.load(self.ledger.keys_path), token)
        if claims.run != run:
            raise TokenError(codes.TOKEN_FOREIGN_RUN, f"the retry token belongs to run {claims.run!r}, not {run!r}")
        fd, body = fact_identity(fact)
        done = self.ledger.retry_of(run, claims.node)
        if done is not None:
            return self._replay(done, fd, claims.node)
        self._check_target(self.ledger.node(run, claims.node), claims)
        verdict = self.evaluator.evaluate(fact)
        kind, retryable = _kind(self.evaluator, verdict, checkpoint)
        if retryable:
            self._signing_ring()
        with self.ledger.write():
            self.ledger.hold([run])  # no other writer of the run between the check and the append
            done = self.ledger.retry_of(run, claims.node)
            if done is None:
                node = self.ledger.append(
                    run,
                    verdict,
                    fd,
                    body,
                    kind=kind,
                    retryable=retryable,
                    retry_of=claims.node,
                    by=self.by,
                    own=self.own,
                )
        if done is not None:  # another process retried it between our check and our lock
            return self._replay(done, fd, claims.node)
        return Outcome(verdict, node, self._mint(node))

    def _replay(self, done: Node, fd: str, retried: str) -> Outcome:
        if done.fact != fd:
            then = f"; retry {done.node} with the token it returned" if done.retryable else ""
            raise TokenError(
                codes.TOKEN_CONSUMED,
                f"the retry token was already used: node {retried} was retried as {done.node} "
                f"({done.kind}, {done.verdict}/{done.reason}) with a different fact{then}",
            )
        return Outcome(verdict_from_event(done.body), done, self._mint(done), replayed=True)

    def _check_target(self, target: Node | None, claims: tokens.Claims) -> None:
        if target is None:
            raise TokenError(codes.TOKEN_UNKNOWN_NODE, f"run {claims.run!r} has no node {claims.node!r} to retry")
        if target.kind != "blocked_attempt":
            raise TokenError(codes.TOKEN_NOT_BLOCKED, f"node {target.node} is a {target.kind}, not a blocked attempt")
        if not target.retryable:
            raise TokenError(
                codes.TOKEN_TERMINAL,
                f"node {target.node} is a terminal block ({target.verdict}/{target.reason}): "
                "it cannot be retried and no retry token is issued for it",
            )
        if target.attempt != claims.attempt:
            message = f"the retry token is for attempt {claims.attempt} of {target.node}, not {target.attempt}"
            raise TokenError(codes.TOKEN_STALE, message)


def append_group(
    ledger: LedgerBackend, entries: list[tuple[Recorder, str, list[Prepared | EvaluationError], Any]]
) -> list[list[Outcome | EvaluationError] | LedgerError]:
    """Append the decisions of several requests, each ``(recorder, run, prepared, parent)``, in one
    transaction: one commit (and one flush to disk) for all. A request refused on its own (a node
    it names is not there, a run it may not write, a run changed without the key) gets its
    LedgerError, and nothing of it is appended; the others are. A database error fails them all
    (LedgerError raised: nothing committed)."""
    if any(rec.ledger is not ledger for rec, *_ in entries):
        raise ValueError("every recorder of a group writes to the ledger given")
    goods = [[p for p in prepared if not isinstance(p, EvaluationError)] for _, _, prepared, _ in entries]
    for (rec, *_), good in zip(entries, goods, strict=True):
        if any(g.retryable for g in good):
            rec._signing_ring()
    results: list[list[Node] | LedgerError] = []
    with ledger.write():
        ledger.hold(
            [run for (_, run, _, _), good in zip(entries, goods, strict=True) if good], sum(len(g) for g in goods)
        )
        for (rec, run, _, parent), good in zip(entries, goods, strict=True):
            try:
                rec.check_parent(run, parent)
                results.append(rec._append_all(run, good, parent) if good else [])
            except LedgerError as exc:  # refused before anything of it was written: the others go on
                results.append(exc)
    return [
        r if isinstance(r, LedgerError) else rec._outcomes(prepared, r)
        for (rec, _, prepared, _), r in zip(entries, results, strict=True)
    ]
