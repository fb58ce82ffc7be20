"""Fixtures of the real-harness tier (marker ``harness``; ``python -m pytest -m harness -n 0``).

A harness that is not installed is skipped, unless ``STOPRULE_REQUIRE_HARNESSES=1`` (set by
``.ci/run``): then it fails.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from harnesses import PROMPT, Session, binary, run_session
from model_servers import Turn


def require(harness: str) -> None:
    """Skip (fail in CI) when the harness or node is missing."""
    missing = [what for what, ok in (("node", shutil.which("node")), (str(binary(harness)), binary(harness).exists()))
               if not ok]  # fmt: skip
    if missing:
        why = f"{harness}: not installed ({', '.join(missing)}); run python tests/harness/install.py"
        if os.environ.get("STOPRULE_REQUIRE_HARNESSES") == "1":
            pytest.fail(why)
        pytest.skip(why)


@pytest.fixture
def run_session_(tmp_path: Path) -> Callable[..., Session]:
    """``run_session(harness, turns, default=None) -> Session``: a headless run to its end."""

    def run(harness: str, turns: list[Turn], default: Turn | None = None, prompt: str = PROMPT) -> Session:
        require(harness)
        return run_session(harness, tmp_path, turns, default, prompt)

    return run
