"""``log import``: append the records ``log export`` wrote to another ledger, exactly as recorded.

Each record's event body is rebuilt from the record (the same fields ``validation_event`` wrote)
and must hash, linked to the run's head in the target ledger, to the record's ``event`` hash:
so the imported chain is the exported one, byte for byte, and ``log verify`` passes on both.
Into an empty ledger the event ids (and so the ledger head) come out the same as well.
A run the target already holds must continue exactly where the record says (its next ``seq``);
anything else is refused before anything is written, and the import is one transaction.
"""

from __future__ import annotations

import json
from typing import Any

from stoprule import codes
from stoprule.ledger.errors import LedgerError
from stoprule.ledger.events import EVENT_TYPE, canonical, digest
from stoprule.ledger.protocols import LedgerBackend

__all__ = ["body_of", "import_records"]

_VERDICT = ("ok", "verdict", "reason", "rule", "stop", "message", "requires_user_review", "review_reason",
            "high_risk_stop")  # fmt: skip


def body_of(rec: dict[str, Any]) -> dict[str, Any]:
    """The ``validation_performed`` body an exported record was made from."""
    env = rec["envelope"]
    body = {
        "type": EVENT_TYPE,
        "run": rec["run"],
        "seq": rec["seq"],
        "node": rec["node"],
        "parent": rec["parent"],
        "kind": rec["kind"],
        "retryable": rec["retryable"],
        "attempt": rec["attempt"],
        "retry_of": rec["retry_of"],
        "at": rec["at"],
        "policy": rec["policy"],
        "fact": rec["fact_digest"],
        "verdict": {f: env[f] for f in _VERDICT},
        "matched": env["matched"],
        "matched_total": rec["matched_total"],
        "matched_cut": rec["matched_cut"],
    }
    if rec.get("by") is not None:  # the server token that recorded it
        body["by"] = rec["by"]
    return body


def import_records(ledger: LedgerBackend, data: bytes, name: str) -> tuple[int, int]:
    """Append every record of ``data`` (NDJSON from ``log export``) in one transaction; (runs, events)."""
    records: list[tuple[dict[str, Any], str, str, int]] = []
    for n, raw in enumerate(data.split(b"\n"), 1):
        if not raw.strip():
            continue
        try:
            rec = json.loads(raw)
            body = body_of(rec)
            fact_body = canonical(rec["fact"])
        except (ValueError, KeyError, TypeError) as exc:
            raise LedgerError(codes.LEDGER_IMPORT, f"{name}: line {n}: not a `log export` record ({exc})") from None
        if digest(fact_body) != rec["fact_digest"]:
            raise LedgerError(codes.LEDGER_IMPORT, f"{name}: line {n}: the fact does not match its digest")
        records.append((body, fact_body, rec["event"], n))
    runs: set[str] = set()
    with ledger.write():
        ledger.hold([body["run"] for body, _, _, _ in records], len(records))
        for body, fact_body, want, n in records:
            node = ledger.append_recorded(body, fact_body)
            if node.hash != want:
                raise LedgerError(
                    codes.LEDGER_IMPORT,
                    f"{name}: line {n}: run {body['run']!r} node {body['node']} does not chain to the exported "
                    "hash (the record was altered, or the run here differs from the exported one); nothing imported",
                )
            runs.add(body["run"])
    return len(runs), len(records)
