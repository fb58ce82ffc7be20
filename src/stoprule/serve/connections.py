"""Connections a worker does not let pile up: a time limit on each request head, a cap on open ones.

uvicorn closes a keep-alive connection after ``timeout_keep_alive`` of silence, but a connection
that never sends a request, or sends its head a byte at a time, stays open for good: enough of
them and the worker runs out of file descriptors and accepts nothing, health checks included.
Here every connection must deliver a complete request head within ``limits.header_timeout_ms`` of
opening (or of its previous answer), however it trickles; and a worker holding
``limits.max_connections`` connections closes the one that has waited longest for a request head
when another arrives. The worker also raises its open-file limit to the hard limit at start-up;
``max_connections`` 0 means what that limit allows, less a reserve for the ledger and the pack and
room for bursts of accepted connections: asyncio accepts up to the listen backlog at once, before
any of them can be shed, and a burst that runs out of descriptors stops accepting for a second.
"""

from __future__ import annotations

import asyncio
from typing import Any

__all__ = ["guarded", "open_file_limit"]

_RESERVE = 64  # descriptors kept for the ledger's connections, the pack's files, the probe, logs


def open_file_limit() -> int:
    """Raise this process's open-file limit to its hard limit; the limit now."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or hard > soft:
        target = 1 << 20 if hard == resource.RLIM_INFINITY else hard
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass
    return soft


def guarded(header_timeout: float, max_connections: int, reserve: int = 0) -> tuple[type[asyncio.Protocol], int]:
    """uvicorn's HTTP protocol class (httptools if installed, else h11) with the head time limit and
    the connection cap (0: from the open-file limit, less ``reserve`` more descriptors), and the
    listen backlog to use with it."""
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    files = open_file_limit()
    backlog = min(max(files // 16, 16), 2048)  # accepted at one wake-up; one more burst may come before any is shed
    cap = max_connections or max(files - _RESERVE - reserve - 3 * backlog, 16)
    base: Any = AutoHTTPProtocol  # uvicorn picks the class at import (httptools or h11): a variable
    waiting: dict[Any, None] = {}  # connections by when they began to wait for a request head, oldest first

    class Guarded(base):  # type: ignore[misc]  # a base chosen at run time
        _timer: asyncio.TimerHandle | None = None
        _armed_for: Any = None  # the request cycle that was current when the wait began

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            if len(self.connections) > cap:
                self._shed()
            self._arm()

        def on_response_complete(self) -> None:
            super().on_response_complete()  # (may start a pipelined request at once: then it re-arms when done)
            if not self.transport.is_closing() and (self.cycle is None or self.cycle.response_complete):
                self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            if self._timer is not None:
                self._timer.cancel()
            waiting.pop(self, None)
            super().connection_lost(exc)

        def _waiting(self) -> bool:
            """Waiting for a request head (no request is being read or answered)."""
            return self.cycle is self._armed_for

        def _arm(self) -> None:
            if self._timer is not None:
                self._timer.cancel()
            self._armed_for = self.cycle
            self._timer = self.loop.call_later(header_timeout, self._head_due)
            waiting.pop(self, None)
            waiting[self] = None

        def _head_due(self) -> None:
            self._timer = None
            if self._waiting() and not self.transport.is_closing():
                self.transport.close()

        def _shed(self) -> None:
            """Over the cap: close the connection waiting longest for a request head (else this one)."""
            for c in list(waiting):
                del waiting[c]
                if c is not self and c._waiting():  # (one reading or answering a request is not waiting: skipped)
                    c.transport.close()
                    return
            self.transport.close()

    return Guarded, backlog
