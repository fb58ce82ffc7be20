"""How long the ``torture`` fuzzing runs are: ``STOPRULE_TORTURE_SCALE`` times their full size.

The default (0.15) keeps ``.ci/run``'s ``pytest -m torture`` within a few minutes on 2
cores; ``STOPRULE_TORTURE_SCALE=1`` runs them at the full size the closing figures quote.
The durability and concurrency torture tests (SIGKILL trials, racing writers) are not
scaled: they always run at full strength.
"""

from __future__ import annotations

import os

SCALE = float(os.environ.get("STOPRULE_TORTURE_SCALE") or 0.15)


def scaled(full: int, least: int = 1) -> int:
    """``full`` at the configured scale (at least ``least``)."""
    return max(least, int(full * SCALE))
