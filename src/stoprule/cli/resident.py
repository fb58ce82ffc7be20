"""The resident mode: one process per user decides stops for thin clients, its packs, engines
and settings warm; the fresh-process hook stays the way that always works.

    forward(argv, stdin, ...)   ``stoprule hook``: ask the resident process, or None (decide here)
    start()                     the fresh hook, with ``hook.resident: true``: start one, detached
    (the process itself: ``stoprule resident serve``, :mod:`stoprule.cli.resident_cmd`; how the
    two talk and check each other: :mod:`stoprule.cli.resident_wire`)

Reachable only by its user: a Unix socket in a directory only the user can enter
(``$XDG_RUNTIME_DIR/stoprule``, else ``/tmp/stoprule-UID``, refused unless it is the user's
and mode 0700); the process checks each client's credentials (``SO_PEERCRED``) and the client
checks the process it reached: the user's, running this interpreter as ``-I -m stoprule
resident serve`` (nothing else on its command line but ``--idle N``), with no ``LD_*``
variable. A client that cannot verify it (no ``/proc``), a process of another stoprule
(version, install or interpreter) and any failure on the way make the client decide in its
own process, as without a resident process.

Each request carries the hook's command line, working directory, environment and stdin: the
process decides it as a fresh ``stoprule hook`` would there (same settings, same pack, same
state files, the same journaled ledger write before it answers), one request at a time in
its main thread (the hook's time budget is a signal). It keeps each pack's evaluator while
the pack's files keep their stats (:func:`stoprule.engine.packs.keep_loaded`), and exits
after ``idle`` seconds without a request.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy (the client
side imports ``_socket`` and :mod:`~stoprule.cli.resident_wire` only when a resident process may
be listening).
"""

from __future__ import annotations

import sys

from stoprule._util import oslite as os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import IO

    from stoprule.config.reader import Settings

__all__ = [
    "IDLE_SECONDS",
    "MAX_PAYLOAD_BYTES",
    "forward",
    "runtime_dir",
    "socket_path",
    "start",
]

IDLE_SECONDS = 600.0  # a resident process exits after this long without a request
MAX_REQUESTS = 100_000  # and after this many (a long-lived process's caches stay bounded)
# the hook's payload limit (stoprule.agent.hook.event's, which a client need not import: a test
# holds them equal), and a request's: the payload and room for the environment
MAX_PAYLOAD_BYTES = 8 << 20
MAX_REQUEST_BYTES = MAX_PAYLOAD_BYTES + (1 << 20)
SERVING = False  # True inside the resident process (its own hook calls never forward)


def runtime_dir(create: bool = False) -> str | None:
    """The user's private directory for the socket, or None when there is none that is safe:
    ``$XDG_RUNTIME_DIR/stoprule``, else ``/tmp/stoprule-UID``; made (mode 0700) with ``create``.
    Refused unless it is a real directory (not a link) owned by the user with no access for others."""
    if not hasattr(os, "getuid"):
        return None
    base = os.environ.get("XDG_RUNTIME_DIR")
    path = os.path.join(base, "stoprule") if base and os.path.isabs(base) else f"/tmp/stoprule-{os.getuid()}"
    if create:
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
        except OSError:
            return None
    try:
        st = os.lstat(path)
    except OSError:
        return None
    import stat

    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        return None
    return path


def socket_path(folder: str) -> str:
    return os.path.join(folder, "resident.sock")


def forward(argv: list[str], stdin: IO[bytes], stdout: IO[str], stderr: IO[str]) -> tuple[int | None, IO[bytes]]:
    """``stoprule hook ARGV``: have the resident process decide it. Returns ``(exit code, stdin)``
    once its answer is written, or ``(None, stdin)`` to decide here (``stdin`` then replays what
    was read). Only when a resident process's socket is there is stdin read first."""
    if SERVING:
        return None, stdin
    folder = runtime_dir()
    if folder is None or not os.path.exists(socket_path(folder)):
        return None, stdin
    import io

    try:
        data = stdin.read(MAX_PAYLOAD_BYTES + 1)
    except (OSError, ValueError):
        data = b""
    from stoprule.cli.resident_wire import ask

    answer = ask(socket_path(folder), argv, data)
    if answer is None:
        return None, io.BytesIO(data)
    code, out, err = answer
    stdout.write(out.decode("utf-8", "replace"))
    stderr.write(err.decode("utf-8", "replace"))
    return code, io.BytesIO(b"")


def start(settings: Settings) -> None:
    """After a stop decided in its own process with ``hook.resident: true``: start the user's
    resident process (none answered this stop; a second one started at the same time exits at
    once). Detached (its own session, no stdio), with a minimal environment; never raises."""
    if SERVING or not settings.hook.get("resident"):
        return
    from stoprule.cli.resident_wire import SERVE_ARGV

    try:
        folder = runtime_dir(create=True)
        if folder is None:
            return
        keep = ("PATH", "HOME", "LANG", "LC_ALL", "XDG_RUNTIME_DIR")
        env = {k: os.environ[k] for k in keep if k in os.environ}
        null = os.devnull
        os.posix_spawn(
            sys.executable,
            [sys.executable, *SERVE_ARGV],
            env,
            file_actions=[(os.POSIX_SPAWN_OPEN, fd, null, os.O_RDWR, 0) for fd in (0, 1, 2)],
            setsid=True,
        )
    except (OSError, AttributeError, NotImplementedError):
        return
