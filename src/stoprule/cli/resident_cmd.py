"""``stoprule resident``: the user's resident process, which decides stops with its packs,
engines and settings warm (see :mod:`stoprule.cli.resident`).

    stoprule resident serve [--idle SECONDS]   be it (the hook starts it on demand, detached)
    stoprule resident status                   whether one is running, its socket and pid
    stoprule resident stop                     stop it (the next stops are decided in their own process)

A stop is decided the same way by it or by a fresh ``stoprule hook``; with ``hook.resident:
true`` in ``.stoprule/config.yaml`` a stop decided in its own process starts one.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from typing import IO

__all__ = ["add_arguments", "run"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    from stoprule.cli.resident import IDLE_SECONDS

    sub = p.add_subparsers(dest="action", metavar="ACTION")
    sub.required = True
    sp = sub.add_parser("serve", help="be the resident process (in the foreground) until it is idle")
    sp.add_argument("--idle", type=float, default=IDLE_SECONDS, metavar="SECONDS",
                    help=f"exit after this long without a stop (default {IDLE_SECONDS:g})")  # fmt: skip
    sub.add_parser("status", help="whether a resident process is running")
    sub.add_parser("stop", help="stop the resident process")


def _pid(folder: str) -> int | None:
    """The pid of the resident process holding the lock in ``folder``, if one does."""
    import fcntl

    from stoprule.cli.resident import pid_file

    try:
        fd = os.open(pid_file(folder), os.O_RDONLY)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:  # held: read who holds it
            text = os.read(fd, 64).decode(errors="replace").strip()
            return int(text) if text.isdigit() else None
        return None  # nobody holds it
    finally:
        os.close(fd)


def run(args: argparse.Namespace, stdin: IO[bytes], stdout: IO[str], stderr: IO[str]) -> int:
    from stoprule.cli import resident

    if args.action == "serve":
        return resident.serve(args.idle)
    folder = resident.runtime_dir()
    pid = _pid(folder) if folder else None
    if args.action == "status":
        if pid is None:
            stdout.write("no resident process (stops are decided each in its own process)\n")
            return 1
        stdout.write(f"resident process {pid}, socket {resident.socket_path(folder)}\n")  # type: ignore[arg-type]
        return 0
    if pid is None:
        stdout.write("no resident process\n")
        return 0
    import signal

    os.kill(pid, signal.SIGTERM)
    stdout.write(f"stopped resident process {pid}\n")
    return 0
