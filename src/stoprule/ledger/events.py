"""What one recorded decision is made of: canonical JSON, digests, the hash-chain link, the event body.

A run's events form a hash chain::

    hash(1) = sha256(GENESIS + "\\n" + body(1))
    hash(n) = sha256(hash(n-1) + "\\n" + body(n))

where ``body`` is the event's canonical JSON exactly as stored (UTF-8) and hashes are
written ``sha256:<hex>``. Changing, dropping or reordering any event breaks every later link.

Runs are chained on their own, so writers of different runs never wait on each other. The
ledger chain runs over *anchors*: each names the runs written since the anchor before it, with
their event count, head hash and last event id::

    anchor(i) = {"anchor": i, "at": TIME, "runs": [[run, events, head, last event id], ...]}
    hash(anchor 1) = sha256(GENESIS + "\\n" + anchor(1))
    hash(anchor i) = sha256(hash(anchor i-1) + "\\n" + anchor(i))

and the last anchor's hash is the ledger head, signed with the key file (``keys.head_mac``):
deleting a whole run that an anchor names, or renumbering or reordering its events, no longer
matches the anchor. (Schema 2 chained every event of every run: ``head_link``, kept to check
and upgrade such ledgers.)

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

import json
import re

from stoprule.engine.evaluator import Match, Verdict
from stoprule.ledger.sha import sha256_hex

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

__all__ = [
    "EVENT_TYPE",
    "GENESIS",
    "anchor_body",
    "MAX_MATCHED",
    "canonical",
    "digest",
    "head_link",
    "link",
    "well_formed",
    "truncate_matched",
    "validation_event",
    "verdict_from_event",
]

EVENT_TYPE = "validation_performed"
GENESIS = "sha256:" + "0" * 64
MAX_MATCHED = 32  # matched rules kept per event; the rest are counted, not stored

# the envelope's decision fields; matched rules and the policy digest are stored beside them (warnings
# are about the input, whose digest is stored)
_VERDICT_FIELDS = tuple(f for f in Verdict._fields if f not in ("matched", "policy", "warnings"))


_SURROGATE = "[\ud800-\udfff]"  # compiled on first use: a text has one only if it is not UTF-8


def _escape(m: re.Match[str]) -> str:
    return f"\\u{ord(m.group()):04x}"


def _utf8(text: str) -> bytes:
    """UTF-8; bytes that were not UTF-8 (read back with ``surrogateescape`` by ``log verify``) as they were."""
    return text.encode("utf-8", "surrogateescape")


def canonical(value: Any, *, finite: bool = False) -> str:
    """Deterministic JSON: sorted keys, no spaces, UTF-8 kept as is (with ``finite``: ValueError for
    a NaN or an infinity, which JSON has no number for).

    A lone surrogate (which JSON input can carry as ``"\\udfff"`` but UTF-8 cannot encode) is
    written as its ``\\uXXXX`` escape, so every canonical text is valid UTF-8 and reads back equal.
    """
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=not finite)
    if text.isascii():
        return text
    try:
        text.encode("utf-8")  # fails on a lone surrogate only
    except UnicodeEncodeError:
        return re.sub(_SURROGATE, _escape, text)
    return text


def digest(text: str) -> str:
    """``sha256:<hex>`` of ``text`` as UTF-8."""
    return "sha256:" + sha256_hex(_utf8(text))


def link(prev: str, body: str) -> str:
    """The chain hash of an event whose predecessor's hash is ``prev`` (``GENESIS`` for the first)."""
    return "sha256:" + sha256_hex(_utf8(f"{prev}\n{body}"))


def head_link(prev: str, event_id: int, event_hash: str) -> str:
    """The ledger chain's next value after event ``event_id`` (``GENESIS`` before the first event)."""
    return "sha256:" + sha256_hex(_utf8(f"{prev}\n{event_id}\n{event_hash}"))


def anchor_body(anchor: int, at: str, runs: list[tuple[str, int, str, int]]) -> str:
    """The canonical text of anchor ``anchor``: ``runs`` as ``(run, events, head, last event id)``, by run."""
    return canonical({"anchor": anchor, "at": at, "runs": sorted([list(r) for r in runs])})


def truncate_matched(matched: Sequence[Match], cap: int = MAX_MATCHED) -> tuple[list[dict[str, str]], int]:
    """The matched rules to store and how many were cut.

    Rules are kept in the evaluator's ranking (priority, then declaration order: a total,
    deterministic order, winner first), so the same verdict always stores the same prefix.
    """
    kept = [m.to_dict() for m in matched[:cap]]
    return kept, max(len(matched) - cap, 0)


def validation_event(
    *,
    run: str,
    seq: int,
    node: str,
    parent: str | None,
    kind: str,
    retryable: bool,
    attempt: int,
    retry_of: str | None,
    fact: str,
    verdict: Verdict,
    at: str,
    by: str | None = None,
) -> dict[str, Any]:
    """The body of a ``validation_performed`` event: what was decided, on which fact, by which policy
    (and ``by``: the name of the server token that recorded it, when a server did)."""
    matched, cut = truncate_matched(verdict.matched)
    body = {
        "type": EVENT_TYPE,
        "run": run,
        "seq": seq,
        "node": node,
        "parent": parent,
        "kind": kind,
        "retryable": retryable,
        "attempt": attempt,
        "retry_of": retry_of,
        "at": at,
        "policy": verdict.policy,
        "fact": fact,
        "verdict": {f: getattr(verdict, f) for f in _VERDICT_FIELDS},
        "matched": matched,
        "matched_total": len(verdict.matched),
        "matched_cut": cut,
    }
    if by is not None:
        body["by"] = by
    return body


def well_formed(body: Any) -> bool:
    """Whether a stored event body has the shape :func:`validation_event` gives it (readers rely on it)."""
    if not isinstance(body, dict) or not isinstance(body.get("verdict"), dict):
        return False
    if not all(f in body["verdict"] for f in _VERDICT_FIELDS):
        return False
    keys = ("type", "run", "seq", "node", "kind", "attempt", "at", "policy", "fact", "matched_total", "matched_cut")
    if not all(k in body for k in keys) or not isinstance(body.get("matched"), list):
        return False
    return all(isinstance(m, dict) and {"rule", "verdict", "reason"} <= m.keys() for m in body["matched"])


def verdict_from_event(body: dict[str, Any]) -> Verdict:
    """The verdict as recorded (``matched`` as stored, possibly truncated)."""
    v = body["verdict"]
    return Verdict(
        **{f: v[f] for f in _VERDICT_FIELDS},
        matched=tuple(Match(m["rule"], m["verdict"], m["reason"]) for m in body["matched"]),
        policy=body["policy"],
    )
