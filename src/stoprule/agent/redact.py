"""Secrets become ``[REDACTED]`` before anything is written: see :mod:`stoprule._util.redact`
(it lives below every layer, so the ledger redacts with the same patterns)."""

from __future__ import annotations

from stoprule._util.redact import REDACTED, redact, redact_obj

__all__ = ["REDACTED", "redact", "redact_obj"]
