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

from stoprule._util.records import record
from stoprule._util.redact import redact_obj
from stoprule.diagnostics import EvaluationError
from stoprule.ledger import keys, tokens
from stoprule.ledger.errors import TokenError
from stoprule.ledger.events import canonical, digest, verdict_from_event
from stoprule.ledger.store import TIP, check_run_id

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator
    from typing import Any

    from stoprule.engine.evaluator import Evaluator, Verdict
    from stoprule.ledger.protocols import LedgerBackend
    from stoprule.ledger.store import Node

__all__ = ["GROUP", "Outcome", "Recorder", "fact_identity"]

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
    keeps): key order and spacing do not matter."""
    text = canonical(redact_obj(fact))
    return digest(text), text


class Recorder:
    """Records decisions of one pack into one ledger."""

    def __init__(self, ledger: LedgerBackend, evaluator: Evaluator) -> None:
        self.ledger = ledger
        self.evaluator = evaluator
        self._ring: keys.KeyRing | None = None

    def _signing_ring(self) -> keys.KeyRing:
        if self._ring is None or self._ring.active is None:
            self._ring = keys.ensure(self.ledger.keys_path)
        return self._ring

    def _mint(self, node: Node) -> str | None:
        if not node.retryable:
            return None
        return tokens.mint(self._signing_ring(), node.run, node.node, node.attempt)

    def _kind(self, verdict: Verdict, checkpoint: bool) -> tuple[str, bool]:
        if verdict.ok:
            return ("checkpoint" if checkpoint else "step"), False
        meta = self.evaluator.compiled.verdicts.get(verdict.verdict)
        return "blocked_attempt", bool(meta and meta.retryable)

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
        check_run_id(run)
        if parent is not TIP and parent is not None and self.ledger.node(run, parent) is None:
            raise self.ledger.unknown_node(run, parent)
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
        prepared: list[EvaluationError | tuple[Verdict, str, str, str, bool]] = []
        for fact in batch:
            if isinstance(fact, EvaluationError):
                prepared.append(fact)
                continue
            try:
                verdict = self.evaluator.evaluate(fact)
            except EvaluationError as exc:
                prepared.append(exc)
                continue
            prepared.append((verdict, *fact_identity(fact), *self._kind(verdict, checkpoint)))
        good = [p for p in prepared if not isinstance(p, EvaluationError)]
        if any(p[4] for p in good):
            self._signing_ring()  # the key file exists before any block that needs a token is recorded
        nodes: list[Node] = []
        if good:
            with self.ledger.write():
                for verdict, fd, body, kind, retryable in good:
                    nodes.append(
                        self.ledger.append(run, verdict, fd, body, kind=kind, retryable=retryable, parent=parent)
                    )
                    parent = TIP
        appended = iter(nodes)
        results: list[Outcome | EvaluationError] = []
        for p in prepared:
            if isinstance(p, EvaluationError):
                results.append(p)
            else:
                node = next(appended)
                results.append(Outcome(p[0], node, self._mint(node)))
        return results, parent

    def record_stop(self, run: str, fact: Any) -> Outcome:
        """A stop hook's decision. After a retryable block the agent was kept working, so its next
        stop is that block's retry (a ``retry`` edge, ``attempt`` + 1: the run's retry chain);
        otherwise the decision follows the run's tip. No token is needed: the hook is the recorder."""
        check_run_id(run)
        st = self.ledger.status(run)
        if st is None or st.tip_kind != "blocked_attempt" or not st.retryable:
            return self.record(run, fact)
        verdict = self.evaluator.evaluate(fact)
        fd, body = fact_identity(fact)
        kind, retryable = self._kind(verdict, False)
        if retryable:
            self._signing_ring()
        with self.ledger.write():
            now = self.ledger.status(run)
            open_block = now is not None and now.tip == st.tip and self.ledger.retry_of(run, st.tip) is None
            node = self.ledger.append(run, verdict, fd, body, kind=kind, retryable=retryable,
                                      retry_of=st.tip if open_block else None)  # fmt: skip
        return Outcome(verdict, node, self._mint(node))

    # ------------------------------------------------------------------ retries

    def retry(self, run: str, token: str, fact: Any, *, checkpoint: bool = False) -> Outcome:
        """Retry the blocked node ``token`` names with a corrected fact (or replay the recorded retry)."""
        check_run_id(run)
        claims = tokens.verify(keys.load(self.ledger.keys_path), token)
        if claims.run != run:
            raise TokenError("token.foreign_run", f"the retry token belongs to run {claims.run!r}, not {run!r}")
        fd, body = fact_identity(fact)
        done = self.ledger.retry_of(run, claims.node)
        if done is not None:
            return self._replay(done, fd, claims.node)
        self._check_target(self.ledger.node(run, claims.node), claims)
        verdict = self.evaluator.evaluate(fact)
        kind, retryable = self._kind(verdict, checkpoint)
        if retryable:
            self._signing_ring()
        with self.ledger.write():
            done = self.ledger.retry_of(run, claims.node)
            if done is None:
                node = self.ledger.append(run, verdict, fd, body, kind=kind, retryable=retryable, retry_of=claims.node)
        if done is not None:  # another process retried it between our check and our lock
            return self._replay(done, fd, claims.node)
        return Outcome(verdict, node, self._mint(node))

    def _replay(self, done: Node, fd: str, retried: str) -> Outcome:
        if done.fact != fd:
            then = f"; retry {done.node} with the token it returned" if done.retryable else ""
            raise TokenError(
                "token.consumed",
                f"the retry token was already used: node {retried} was retried as {done.node} "
                f"({done.kind}, {done.verdict}/{done.reason}) with a different fact{then}",
            )
        return Outcome(verdict_from_event(done.body), done, self._mint(done), replayed=True)

    def _check_target(self, target: Node | None, claims: tokens.Claims) -> None:
        if target is None:
            raise TokenError("token.unknown_node", f"run {claims.run!r} has no node {claims.node!r} to retry")
        if target.kind != "blocked_attempt":
            raise TokenError("token.not_blocked", f"node {target.node} is a {target.kind}, not a blocked attempt")
        if not target.retryable:
            raise TokenError(
                "token.terminal",
                f"node {target.node} is a terminal block ({target.verdict}/{target.reason}): "
                "it cannot be retried and no retry token is issued for it",
            )
        if target.attempt != claims.attempt:
            raise TokenError(
                "token.stale", f"the retry token is for attempt {claims.attempt} of {target.node}, not {target.attempt}"
            )
