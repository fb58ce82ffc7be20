"""The ledger's errors: each carries a stable ``code`` and a message naming what is wrong.

StopruleError
 └── LedgerError   the ledger cannot be opened, read or appended to, or an id is unknown
      └── TokenError   a retry token is malformed, truncated, forged, foreign, retired or spent

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

from stoprule import codes
from stoprule.diagnostics import StopruleError

__all__ = ["MAX_RUN_ID", "LedgerError", "TokenError", "check_run_id"]

MAX_RUN_ID = 200


class LedgerError(StopruleError):
    """Something about the ledger or a run/node id is wrong; nothing was recorded."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(code, message)
        self.code = code
        self.message = message

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"

    def to_dict(self) -> dict[str, object]:
        return {"code": self.code, "message": self.message}


class TokenError(LedgerError):
    """A retry token was refused (``code`` says why: ``token.forged``, ``token.truncated`` ...)."""


def check_run_id(run: str) -> str:
    """A run id is 1-200 printable characters without surrounding spaces (LedgerError otherwise)."""
    if not isinstance(run, str) or not run or len(run) > MAX_RUN_ID or run != run.strip() or not run.isprintable():
        raise LedgerError(
            codes.LEDGER_BAD_RUN_ID,
            f"run id {run!r} is not valid: use 1-{MAX_RUN_ID} printable characters, no leading or trailing space",
        )
    return run
