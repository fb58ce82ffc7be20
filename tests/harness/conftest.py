"""Fixtures of the real-harness tier (marker ``harness``; ``python -m pytest -m harness -n 0``).

A harness that is not installed is skipped, unless ``STOPRULE_REQUIRE_HARNESSES=1`` (set by
``.ci/run``): then it fails.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from harnesses import PROMPT, Session, require, run_session
from model_servers import Turn


@pytest.fixture
def run_session_(tmp_path: Path) -> Callable[..., Session]:
    """``run_session(harness, turns, default=None) -> Session``: a headless run to its end."""

    def run(harness: str, turns: list[Turn], default: Turn | None = None, prompt: str = PROMPT) -> Session:
        require(harness)
        return run_session(harness, tmp_path, turns, default, prompt)

    return run
