"""The guard's own entry, what ``stoprule init`` wires before every tool call::

    /path/to/python -S -I /path/to/stoprule/agent/guard/__main__.py HARNESS

Run by path without ``site`` (``-S``: no site-packages scan, no ``.pth`` files) and isolated
from the environment (``-I``: no ``PYTHON*`` variables, no working directory on the path): the
package's own folder is put on the path, and nothing but the standard library and stoprule's
guard is imported, so the guard starts about as fast as a bare interpreter. ``python -m
stoprule.agent.guard HARNESS`` and ``stoprule guard HARNESS`` run the same thing.
"""

from __future__ import annotations

import sys

if not __package__:  # run by path: the folder holding the stoprule package goes first on the path
    from posix import getcwd  # os's, without importing os (stoprule._util.oslite)

    _file = __file__ if __file__.startswith("/") else f"{getcwd()}/{__file__}"
    if "//" in _file or any(part in (".", "..") for part in _file.split("/")):  # not as init writes it
        from posixpath import normpath  # (imports os: only a start by such a path pays it)

        _file = normpath(_file)
    sys.path.insert(0, _file.rsplit("/", 4)[0])  # .../stoprule/agent/guard/__main__.py

from stoprule._util import oslite as os  # noqa: E402
from stoprule.agent.guard.run import answer  # noqa: E402


def main() -> int:
    harnesses = ("claude-code", "codex", "gemini", "cursor", "copilot", "opencode")
    if len(sys.argv) != 2 or sys.argv[1] not in harnesses:
        sys.stderr.write(f"usage: {os.path.basename(sys.argv[0])} {{{','.join(harnesses)}}} (payload on stdin)\n")
        return 0
    code = answer(sys.argv[1], sys.stdin.buffer, sys.stdout, sys.stderr)
    sys.stdout.flush()
    return code


if __name__ == "__main__":
    sys.exit(main())
