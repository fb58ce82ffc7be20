"""Run a short command and capture its output, as ``subprocess.run(argv, capture_output=True,
stdin=DEVNULL, timeout=T)`` does, without importing :mod:`subprocess` (it imports ``locale``
and ``selectors``: ~1.5 ms of the hook's cold start, for one ``git status``).

POSIX: ``os.posix_spawnp`` with two pipes read under ``poll`` (:mod:`stoprule._util.native`) until the deadline; signals
Python ignores (SIGPIPE, SIGXFSZ) are reset to their defaults in the child, as ``subprocess``
does. Elsewhere: :mod:`subprocess`. Whatever ends the wait early (the deadline, an exception
such as the hook's own time budget), the child is killed and reaped. :func:`spawn` starts a
command to be collected later (the stop's ``git status`` runs while the pack loads).

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

import time

from stoprule._util import oslite as os
from stoprule.diagnostics import StopruleError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

__all__ = ["CommandTimeout", "Running", "capture", "spawn"]


class CommandTimeout(StopruleError):
    """The command was still running at its deadline (it was killed)."""


def capture(argv: list[str], timeout: float, env: Mapping[str, str] | None = None) -> tuple[int, bytes, bytes]:
    """``(exit code, stdout, stderr)`` of ``argv``, stdin from the null device, in ``env`` (default:
    this process's); FileNotFoundError when the program is not on PATH, CommandTimeout after
    ``timeout`` seconds."""
    return spawn(argv, env).collect(timeout)


class Running:
    """A command started by :func:`spawn`: :meth:`collect` waits for it (once), :meth:`kill` ends it."""

    def __init__(self, argv: list[str], env: Mapping[str, str]) -> None:
        self.argv, self.env = argv, env
        self.pid = 0
        self.fds: list[int] = []
        self.posix = hasattr(os, "posix_spawnp") and hasattr(os, "waitstatus_to_exitcode")
        if not self.posix:
            return  # run by subprocess when collected
        signal = _signal()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        self.fds = [out_r, err_r]
        try:
            self.pid = os.posix_spawnp(
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
        except BaseException:
            self._close()
            raise
        finally:
            os.close(out_w)
            os.close(err_w)

    def collect(self, timeout: float) -> tuple[int, bytes, bytes]:
        """``(exit code, stdout, stderr)``, waiting at most ``timeout`` seconds from now
        (CommandTimeout after it: the command is killed)."""
        if not self.posix:
            return _with_subprocess(self.argv, timeout, self.env)
        from stoprule._util.native import readable

        deadline = time.monotonic() + timeout
        out_r, err_r = self.fds
        try:
            chunks: dict[int, list[bytes]] = {out_r: [], err_r: []}
            reading = [out_r, err_r]
            while reading:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise CommandTimeout(f"{self.argv[0]} ran over {timeout:.3f} s")
                for fd in readable(reading, max(1, int(left * 1000))):
                    data = os.read(fd, 65536)
                    if data:
                        chunks[fd].append(data)
                    else:
                        reading.remove(fd)
            delay = 0.0001
            while True:  # its output is closed: it is exiting
                done, status = os.waitpid(self.pid, os.WNOHANG)
                if done:
                    self.pid = 0
                    return os.waitstatus_to_exitcode(status), b"".join(chunks[out_r]), b"".join(chunks[err_r])
                if time.monotonic() >= deadline:
                    raise CommandTimeout(f"{self.argv[0]} ran over {timeout:.3f} s")
                time.sleep(delay)
                delay = min(delay * 2, 0.005)
        finally:
            self.kill()

    def kill(self) -> None:
        """End the command if it still runs (killed and reaped) and close its pipes."""
        self._close()
        if self.pid:  # still running: stopped early by the deadline or an exception
            try:  # noqa: SIM105 - contextlib costs the cold start ~1 ms
                os.kill(self.pid, _signal().SIGKILL)
            except OSError:
                pass
            os.waitpid(self.pid, 0)
            self.pid = 0

    def _close(self) -> None:
        for fd in self.fds:
            os.close(fd)
        self.fds = []


def spawn(argv: list[str], env: Mapping[str, str] | None = None) -> Running:
    """Start ``argv`` (stdin from the null device, its output piped) and return at once:
    FileNotFoundError when the program is not on PATH."""
    return Running(argv, os.environ if env is None else env)


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
