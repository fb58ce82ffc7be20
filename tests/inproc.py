"""Run the CLI in process: ``stoprule.cli.main.run(argv, streams)`` with captured streams."""

from __future__ import annotations

import io
from dataclasses import dataclass

from stoprule.cli.main import run

__all__ = ["Result", "Terminal", "cli"]


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
    """``stoprule ARGV`` in this process (the environment and cwd are the test's: use monkeypatch).
    ``tty``: stdout and stderr say they are terminals (``"err"``: only stderr)."""
    out = Terminal() if tty is True else io.StringIO()
    err = Terminal() if tty else io.StringIO()
    code = run(list(argv), io.BytesIO(stdin), out, err)
    return Result(code, out.getvalue(), err.getvalue())
