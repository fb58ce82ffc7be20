"""Small helpers shared by the benchmark scripts (stdlib only)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def tree_state() -> str:
    """The commit measured and whether src/ or policies/ differ from it (read-only git calls)."""
    try:
        head = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(REPO), "status", "--porcelain", "--", "src", "policies"],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.split("\n")
        changed = [ln[3:] for ln in dirty if ln.strip()]
    except (OSError, subprocess.SubprocessError):
        return "unknown (no git)"
    if not head:
        return "unknown (not a git checkout)"
    return f"{head}" + (f" + uncommitted changes in {', '.join(changed)}" if changed else " (clean src/ and policies/)")


def timed(fn) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process) of one call of ``fn``."""
    w0, c0 = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - w0, time.process_time() - c0


def print_header(pack: str) -> None:
    """What was measured where: Python, cores, load, pack and the git tree."""
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, load average {os.getloadavg()[0]:.2f}; pack {pack}")
    print(f"tree: {tree_state()}")
