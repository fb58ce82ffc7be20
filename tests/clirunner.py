"""The CLI in process: ``stoprule.cli.main.run(argv, streams)`` with a given stdin, environment
and working directory, answered as :class:`subprocess.CompletedProcess` (``returncode``,
``stdout``, ``stderr``; bytes when the input was bytes, as ``subprocess.run`` gives them).

A test that needs the process boundary itself (signals, the console script's exit code,
racing processes, a harness running the hook through a shell, a cold-start import check)
starts a subprocess instead, and says so.
"""

from __future__ import annotations

import io
import os
import subprocess
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from stoprule.cli.main import run

__all__ = ["Result", "Terminal", "cli", "invoke", "process_env"]


@contextmanager
def process_env(env: Mapping[str, str], cwd: str | os.PathLike[str]) -> Iterator[None]:
    """``os.environ`` replaced by ``env`` and the working directory set to ``cwd``; both restored after."""
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)


def invoke(
    argv: list[str] | tuple[str, ...],
    input: str | bytes | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
) -> subprocess.CompletedProcess:
    """``stoprule ARGV`` in this process: ``env`` is its whole environment (default: this one),
    ``cwd`` its working directory (default: this one), ``input`` its stdin (default: empty)."""
    data = input.encode() if isinstance(input, str) else (input or b"")
    stdout, stderr = io.StringIO(), io.StringIO()
    with process_env(os.environ if env is None else env, Path.cwd() if cwd is None else cwd):
        try:
            code = run(list(argv), io.BytesIO(data), stdout, stderr)
        except SystemExit as exc:  # as the interpreter turns it into an exit status
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except BrokenPipeError:  # as main() answers it
            code = 0
    out, err = stdout.getvalue(), stderr.getvalue()
    if isinstance(input, bytes):
        return subprocess.CompletedProcess(
            list(argv), code, out.encode("utf-8", "surrogateescape"), err.encode("utf-8", "surrogateescape")
        )
    return subprocess.CompletedProcess(list(argv), code, out, err)


class Terminal(io.StringIO):
    """A captured stream that says it is a terminal (progress bars and colour are drawn on it)."""

    def isatty(self) -> bool:
        return True


@dataclass
class Result:
    code: int
    out: str
    err: str


def cli(*argv: str, stdin: bytes = b"", tty: bool | str = False) -> Result:
    """``stoprule ARGV`` in this process, its streams terminals when ``tty`` (``"err"``: only
    stderr) (the environment and cwd are the test's: use monkeypatch)."""
    out = Terminal() if tty is True else io.StringIO()
    err = Terminal() if tty else io.StringIO()
    code = run(list(argv), io.BytesIO(stdin), out, err)
    return Result(code, out.getvalue(), err.getvalue())
