"""Fixtures of the real-harness tier (marker ``harness``; ``python -m pytest -m harness -n 0``).

A harness that is not installed is skipped, unless ``STOPRULE_REQUIRE_HARNESSES=1`` (set by
``.ci/run``): then it fails.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from harnesses import PINNED, PROMPT, Session, latest_mode, require, run_session, version
from model_servers import Turn


@pytest.fixture
def run_session_(tmp_path: Path) -> Callable[..., Session]:
    """``run_session(harness, turns, default=None) -> Session``: a headless run to its end."""

    def run(harness: str, turns: list[Turn], default: Turn | None = None, prompt: str = PROMPT) -> Session:
        require(harness)
        return run_session(harness, tmp_path, turns, default, prompt)

    return run


_OUTCOMES: dict[str, dict[str, list[str]]] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """The canary's tally: each harness-tier test's outcome, by harness."""
    if report.when != "call" and not (report.when == "setup" and report.outcome != "passed"):
        return
    harness = next(
        (
            h
            for h in PINNED
            if f"[{h}" in report.nodeid or f"-{h}]" in report.nodeid or h.replace("-", "_") in report.nodeid
        ),
        None,
    )
    if harness is not None:
        _OUTCOMES.setdefault(harness, {}).setdefault(report.outcome, []).append(report.nodeid.split("::")[-1])


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """With ``STOPRULE_HARNESS_LATEST=1``: what changed against the pins (version, and the
    sessions that no longer behave as on the pinned release)."""
    if not latest_mode() or not _OUTCOMES:
        return
    w = terminalreporter.write_line
    w("canary: the harness tier against each harness's newest npm release")
    for harness, (package, pinned, _) in PINNED.items():
        got = _OUTCOMES.get(harness, {})
        newest = version(harness)
        moved = f"pinned {pinned}, newest {newest}" + (" (the same release)" if newest == pinned else " (moved)")
        tally = ", ".join(f"{len(v)} {k}" for k, v in sorted(got.items())) or "not run"
        w(f"  {harness:12} {package}: {moved}; {tally}")
        for name in got.get("failed", []):  # on the pinned release too: not a change of the binary
            w(f"      {'changed' if newest != pinned else 'failed (as pinned)'}: {name}")
