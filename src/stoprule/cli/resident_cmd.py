"""``stoprule resident``: the user's resident process, which decides stops with its packs,
engines and settings warm (see :mod:`stoprule.cli.resident`).

    stoprule resident serve [--idle SECONDS]   be it (the hook starts it on demand, detached)
    stoprule resident status                   whether one is running, its socket and pid
    stoprule resident stop                     stop it (the next stops are decided in their own process)

A stop is decided the same way by it or by a fresh ``stoprule hook``; with ``hook.resident:
true`` in ``.stoprule/config.yaml`` a stop decided in its own process starts one.
"""

from __future__ import annotations

import io
import os
import signal
import socket
import sys
from contextlib import suppress

import stoprule.agent.hook.providers  # noqa: F401 - what a stop imports, imported before the first one
import stoprule.cli.hook_cmd  # noqa: F401
from stoprule._util.files import locked
from stoprule.cli import resident, resident_wire
from stoprule.cli.main import run as run_command
from stoprule.diagnostics import EXIT_NOT_OK, EXIT_OK, CommandError
from stoprule.engine.packs import keep_loaded

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from typing import IO

__all__ = ["add_arguments", "run", "serve"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    idle = resident.IDLE_SECONDS
    sub = p.add_subparsers(dest="action", metavar="ACTION")
    sub.required = True
    sp = sub.add_parser("serve", help="be the resident process (in the foreground) until it is idle")
    sp.add_argument(
        "--idle",
        type=float,
        default=idle,
        metavar="SECONDS",
        help=f"exit after this long without a stop (default {idle:g})",
    )
    sub.add_parser("status", help="whether a resident process is running")
    sub.add_parser("stop", help="stop the resident process")


def pid_file(folder: str) -> str:
    """The lock the resident process holds while it runs (it holds its pid)."""
    return os.path.join(folder, "resident.lock")


def _pid(folder: str) -> int | None:
    """The pid of the resident process holding the lock in ``folder``, if one does."""
    path = pid_file(folder)
    if not os.path.exists(path):
        return None
    try:
        with locked(path, wait=False, mode=0o600):
            return None  # nobody holds it
    except BlockingIOError:  # held: read who holds it
        with open(path, "rb") as fh:
            text = fh.read(64).decode(errors="replace").strip()
        return int(text) if text.isdigit() else None
    except OSError:
        return None


def run(args: argparse.Namespace, stdin: IO[bytes], stdout: IO[str], stderr: IO[str]) -> int:
    if args.action == "serve":
        return serve(args.idle)
    folder = resident.runtime_dir()
    pid = _pid(folder) if folder else None
    if args.action == "status":
        if pid is None or folder is None:
            stdout.write("no resident process (stops are decided each in its own process)\n")
            return EXIT_NOT_OK
        stdout.write(f"resident process {pid}, socket {resident.socket_path(folder)}\n")
        return EXIT_OK
    if pid is None:
        stdout.write("no resident process\n")
        return EXIT_OK
    if not resident_wire.genuine(pid):
        raise CommandError(f"process {pid} holds the resident lock but is not a resident stoprule: not stopped")
    os.kill(pid, signal.SIGTERM)
    stdout.write(f"stopped resident process {pid}\n")
    return EXIT_OK


# ---------------------------------------------------------------------------------------- the process


class _Swap:
    """The process runs each request in the client's working directory and environment."""

    def __init__(self, cwd: bytes, env: bytes) -> None:
        self.cwd = cwd
        self.env = dict(v.split(b"=", 1) for v in env.split(b"\0") if b"=" in v) if env else {}

    def __enter__(self) -> None:
        self.saved_env = dict(os.environb)
        self.saved_cwd = os.getcwd()
        os.chdir(self.cwd)  # (first: a folder that is gone changes nothing)
        os.environb.clear()
        os.environb.update(self.env)

    def __exit__(self, *exc: object) -> None:
        os.environb.clear()
        os.environb.update(self.saved_env)
        os.chdir(self.saved_cwd)


def _handle(request: bytes) -> tuple[bytes, bool]:
    """The reply to one request, and whether the process should exit after it (another stoprule
    is asking: the next fresh hook starts the right one)."""
    protocol, identity, argv, cwd, env, data = resident_wire.unframe(request, 6)
    if protocol != resident_wire.PROTOCOL or identity != resident_wire.identity():
        return resident_wire.frame([b"declined", b"", b"", b""]), True
    args = argv.decode().split("\0")
    if args[:1] != ["hook"]:
        return resident_wire.frame([b"declined", b"", b"", b""]), False
    out, err = io.StringIO(), io.StringIO()
    try:
        with _Swap(cwd, env):
            code = run_command(args, io.BytesIO(data), out, err)
    except OSError:  # the client's folder is gone: it decides itself
        return resident_wire.frame([b"declined", b"", b"", b""]), False
    return resident_wire.frame([b"ok", str(code).encode(), out.getvalue().encode(), err.getvalue().encode()]), False


def _warm() -> None:
    """Keep evaluators between stops (what a stop imports is imported with this module)."""
    keep_loaded()


def serve(idle: float = resident.IDLE_SECONDS) -> int:
    """Be the user's resident process until ``idle`` seconds pass without a request (exit 0 at
    once if another one is running; CommandError if there is no safe directory for the socket)."""
    folder = resident.runtime_dir(create=True)
    if folder is None:
        raise CommandError(
            "no private directory for the resident process's socket (XDG_RUNTIME_DIR or /tmp)", EXIT_NOT_OK
        )
    try:
        with locked(pid_file(folder), wait=False, mode=0o600) as lock:
            os.ftruncate(lock.fd, 0)
            os.write(lock.fd, f"{os.getpid()}\n".encode())
            _serve(folder, idle)
    except BlockingIOError:
        pass  # another resident process holds it
    return EXIT_OK


def _serve(folder: str, idle: float) -> None:
    path = resident.socket_path(folder)
    resident.SERVING = True
    os.chdir("/")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # the socket is removed on the way out
    try:
        with suppress(FileNotFoundError):
            os.unlink(path)  # a stale socket: its process is gone (it held the lock)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)
        try:
            listener.bind(path)
        finally:
            os.umask(old)
        listener.listen(64)
        _warm()
        for _ in range(resident.MAX_REQUESTS):
            listener.settimeout(idle)
            try:
                conn, _addr = listener.accept()
            except TimeoutError:
                break
            try:
                conn.settimeout(resident_wire.WAIT_SECONDS)
                if resident_wire.peer(conn)[1] != os.getuid():
                    continue
                reply, leave = _handle(resident_wire.read_all(conn, resident.MAX_REQUEST_BYTES))
                conn.sendall(reply)
                if leave:
                    break
            except (OSError, ValueError):
                continue
            finally:
                conn.close()
    finally:
        with suppress(OSError):
            os.unlink(path)
