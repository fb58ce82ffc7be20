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


_CLEAN: dict[str, None] = {}  # run ids redaction leaves as they are (bounded: cleared when full)


def check_run_id(run: str) -> str:
    """A run id is 1-200 printable characters without surrounding spaces, and nothing redaction would
    hide (LedgerError otherwise).

    Everything written to disk is redacted first, but a run id cannot be: it keys the run's chain, its
    lock and its status row, and its caller continues the run by it, so a redacted id would merge
    every run whose id hid a secret and lose the caller's run. An id that holds what looks like a
    secret (a key, a token, a password in a URL) is refused instead, before anything is written, and
    the message shows it redacted."""
    if not isinstance(run, str) or not run or len(run) > MAX_RUN_ID or run != run.strip() or not run.isprintable():
        from stoprule._util.redact import redact

        shown = redact(run) if isinstance(run, str) else run
        raise LedgerError(
            codes.LEDGER_BAD_RUN_ID,
            f"run id {shown!r} is not valid: use 1-{MAX_RUN_ID} printable characters, no leading or trailing space",
        )
    if run not in _CLEAN:
        from stoprule._util.redact import redact

        shown = redact(run)
        if shown != run:
            raise LedgerError(
                codes.LEDGER_BAD_RUN_ID,
                f"run id {shown!r} holds what looks like a secret: a run id is written as it is (it cannot be "
                "redacted and still name the run), so it is refused and nothing was recorded; name runs by "
                "something that is not a credential (a session id, a build number)",
            )
        if len(_CLEAN) >= 4096:
            _CLEAN.clear()
        _CLEAN[run] = None
    return run
