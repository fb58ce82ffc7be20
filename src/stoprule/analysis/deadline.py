"""The exhaustive analysis' deadline: one clock every search step ticks."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from stoprule.diagnostics import AnalysisError

__all__ = ["OutOfTime", "set_deadline", "tick"]


class OutOfTime(AnalysisError):
    """The exploration passed the deadline given to :func:`set_deadline`."""


_deadline: list[Any] = [None, time.monotonic]
_ticks = [0]


def set_deadline(when: float | None, clock: Callable[[], float] = time.monotonic) -> None:
    """Stop every exploration with :class:`OutOfTime` once ``clock()`` passes ``when``."""
    _deadline[0], _deadline[1] = when, clock


def tick() -> None:
    """One step of a search: raises :class:`OutOfTime` past the deadline (checked every 256)."""
    _ticks[0] += 1
    if _ticks[0] & 255 == 0 and _deadline[0] is not None and _deadline[1]() > _deadline[0]:
        raise OutOfTime
