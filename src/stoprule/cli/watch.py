"""``--watch`` for ``check`` and ``test``: run, then run again whenever a watched file changes.

A stdlib poll (every :data:`POLL` seconds: the size and modification time of each YAML file of
the pack, its ``tests/``, the case files named, and the global pack), not an OS file-event
library: a pack is a few dozen small files, so a poll costs microseconds, needs no compiled
dependency, and sees changes on every OS and on network and container mounts alike. Ctrl-C
ends it; the exit code is the last run's.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from typing import IO

from stoprule.cli.common import handled
from stoprule.language.files import global_pack

__all__ = ["POLL", "watch"]

POLL = 0.5  # seconds between two looks at the files


def _stopped() -> bool:
    """Whether to stop watching (only Ctrl-C stops it; tests replace this)."""
    return False


def _on_run(code: int) -> None:
    """Called after each run with its exit code (tests observe the runs through it)."""


def _snapshot(roots: Iterable[str]) -> dict[str, tuple[int, int]]:
    out: dict[str, tuple[int, int]] = {}
    for root in roots:
        if os.path.isfile(root):
            candidates = [root]
        elif os.path.isdir(root):
            candidates = []
            for folder in (root, os.path.join(root, "tests")):
                if os.path.isdir(folder):
                    candidates += [os.path.join(folder, n) for n in sorted(os.listdir(folder))]
        else:
            continue
        for path in candidates:
            if path.endswith((".yaml", ".yml")):
                try:
                    st = os.stat(path)
                except OSError:
                    continue
                out[path] = (st.st_mtime_ns, st.st_size)
    return out


def watch(roots: list[str], run_once: Callable[[], int], stderr: IO[str]) -> int:
    """Run ``run_once`` now and after every change under ``roots`` (files, or pack folders and
    their ``tests/``) until Ctrl-C; returns the last run's exit code."""
    glob = global_pack()
    roots = [*roots, *([glob] if glob else [])]
    seen = _snapshot(roots)
    stderr.write(f"stoprule: watching {len(seen)} file(s) in {', '.join(roots)} (Ctrl-C stops)\n")
    stderr.flush()
    code = handled(run_once, stderr)
    _on_run(code)
    try:
        while not _stopped():
            time.sleep(POLL)
            now = _snapshot(roots)
            if now == seen:
                continue
            changed = sorted(p for p in now.keys() | seen.keys() if now.get(p) != seen.get(p))
            seen = now
            stderr.write(f"stoprule: changed: {', '.join(os.path.basename(p) for p in changed)}; re-running\n")
            stderr.flush()
            code = handled(run_once, stderr)
            _on_run(code)
    except KeyboardInterrupt:
        stderr.write("\n")
    return code
