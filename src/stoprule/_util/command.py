"""Run a short command and capture its output, as ``subprocess.run(argv, capture_output=True,
stdin=DEVNULL, timeout=T)`` does, without importing :mod:`subprocess` (it imports ``locale``
and ``selectors``: ~1.5 ms of the hook's cold start, for one ``git status``).

POSIX: ``os.posix_spawnp`` with two pipes read under ``poll`` until the deadline; signals
Python ignores (SIGPIPE, SIGXFSZ) are reset to their defaults in the child, as ``subprocess``
does. Elsewhere: :mod:`subprocess`. Whatever ends the wait early (the deadline, an exception
such as the hook's own time budget), the child is killed and reaped.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

import os
import time

from stoprule.diagnostics import StopruleError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

__all__ = ["CommandTimeout", "capture"]


class CommandTimeout(StopruleError):
    """The command was still running at its deadline (it was killed)."""


def capture(argv: list[str], timeout: float, env: Mapping[str, str] | None = None) -> tuple[int, bytes, bytes]:
    """``(exit code, stdout, stderr)`` of ``argv``, stdin from the null device, in ``env`` (default:
    this process's); FileNotFoundError when the program is not on PATH, CommandTimeout after
    ``timeout`` seconds."""
    env = os.environ if env is None else env
    if not hasattr(os, "posix_spawnp") or not hasattr(os, "waitstatus_to_exitcode"):
        return _with_subprocess(argv, timeout, env)
    import select

    signal = _signal()

    deadline = time.monotonic() + timeout
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    pid = 0
    try:
        try:
            pid = os.posix_spawnp(
                argv[0],
                argv,
                env,
                file_actions=[
                    (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                    (os.POSIX_SPAWN_DUP2, out_w, 1),
                    (os.POSIX_SPAWN_DUP2, err_w, 2),
                ],
                setsigdef=[s for s in (getattr(signal, "SIGPIPE", None), getattr(signal, "SIGXFSZ", None)) if s],
            )
        finally:
            os.close(out_w)
            os.close(err_w)
        chunks: dict[int, list[bytes]] = {out_r: [], err_r: []}
        poller = select.poll()
        for fd in chunks:
            poller.register(fd, select.POLLIN)
        reading = len(chunks)
        while reading:
            left = deadline - time.monotonic()
            if left <= 0:
                raise CommandTimeout(f"{argv[0]} ran over {timeout:.3f} s")
            for fd, _ in poller.poll(max(1, int(left * 1000))):
                data = os.read(fd, 65536)
                if data:
                    chunks[fd].append(data)
                else:
                    poller.unregister(fd)
                    reading -= 1
        delay = 0.0001
        while True:  # its output is closed: it is exiting
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                pid = 0
                return os.waitstatus_to_exitcode(status), b"".join(chunks[out_r]), b"".join(chunks[err_r])
            if time.monotonic() >= deadline:
                raise CommandTimeout(f"{argv[0]} ran over {timeout:.3f} s")
            time.sleep(delay)
            delay = min(delay * 2, 0.005)
    finally:
        os.close(out_r)
        os.close(err_r)
        if pid:  # still running: stopped early by the deadline or an exception
            try:  # noqa: SIM105 - contextlib costs the cold start ~1 ms
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
            os.waitpid(pid, 0)


def _signal() -> Any:
    """The signal constants and functions: the C module ``_signal`` where there is one (the
    ``signal`` module turns them into enums on import, about 1 ms of a hook's start)."""
    try:
        import _signal  # type: ignore[import-not-found]

        return _signal
    except ImportError:  # pragma: no cover - not CPython
        import signal

        return signal


def _with_subprocess(argv: list[str], timeout: float, env: Mapping[str, str]) -> tuple[int, bytes, bytes]:
    import subprocess

    try:
        p = subprocess.run(argv, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL, env=env)
    except subprocess.TimeoutExpired:
        raise CommandTimeout(f"{argv[0]} ran over {timeout:.3f} s") from None
    return p.returncode, p.stdout, p.stderr
