"""A warm ``stoprule`` for tests that run documented shell commands (tests/test_docs.py).

Most of a ``stoprule`` process's time in those tests is its interpreter start and imports
(``check`` costs ~400 ms of CPU as a process, ~30 ms warm). Here one server process per test
process imports stoprule (every module but the service, the MCP server and PostgreSQL) once;
the ``stoprule`` a shell runs is a small client (:func:`client_script`) that sends the server its
arguments, working directory and environment and passes it its standard streams themselves (the
file descriptors, over a Unix socket); the server forks a child that takes those descriptors as
0, 1 and 2, that directory and that environment, runs the CLI's ``main`` as the console script
does, and sends back the exit code. A command is still its own process with its own streams
(pipes, redirections, terminals and exit codes behave as with the console script); only the
interpreter start and the imports are shared. Where the server is not running the client runs
the real console script.

    python tests/warmcli.py SOCKET        # serve (prints "ready" once listening)
"""

from __future__ import annotations

import contextlib
import importlib
import io
import os
import pkgutil
import select
import signal
import socket
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Iterator

__all__ = ["client_script", "running"]

# never preloaded (a child imports them if it needs them): the decision service, the MCP server,
# PostgreSQL and the SMT solver's modules, which the docs' commands do not run
SKIP = ("stoprule.serve", "stoprule.ledger.postgres", "stoprule.agent.blockers.mcp", "stoprule.__main__",
        "stoprule.analysis.solver", "stoprule.analysis.encoding")  # fmt: skip
EXTRA = ("ruamel.yaml",)


def _preload() -> None:
    import stoprule

    for info in pkgutil.walk_packages(stoprule.__path__, "stoprule."):
        if not info.name.startswith(SKIP):
            with contextlib.suppress(Exception):  # an optional module that cannot load here loads in the child
                importlib.import_module(info.name)
    for name in EXTRA:
        with contextlib.suppress(Exception):
            importlib.import_module(name)


def _streams(env: dict[str, str]) -> None:
    """``sys.stdin``/``stdout``/``stderr`` on descriptors 0-2, as a new interpreter makes them:
    UTF-8; with ``PYTHONUNBUFFERED`` the writers have no buffer at all; else a terminal's stdout
    and stderr are line-buffered."""

    def writer(fd: int, errors: str, line: bool) -> io.TextIOWrapper:
        raw = io.FileIO(fd, "wb", closefd=False)
        if env.get("PYTHONUNBUFFERED"):
            return io.TextIOWrapper(raw, encoding="utf-8", errors=errors, write_through=True)  # type: ignore[type-var]
        return io.TextIOWrapper(io.BufferedWriter(raw), encoding="utf-8", errors=errors, line_buffering=line)

    sys.stdin = io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "rb", closefd=False)), encoding="utf-8")
    sys.stdout = writer(1, "strict", os.isatty(1))
    sys.stderr = writer(2, "backslashreplace", True)


def _child(conn: socket.socket, request: dict, fds: list[int]) -> None:
    code = 1
    try:
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        for fd in fds:
            if fd > 2:
                os.close(fd)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        _streams(request["env"])
        sys.argv = ["stoprule", *request["argv"]]
        from stoprule.cli.main import main

        try:
            code = main(sys.argv[1:])  # given: main() does not end the process itself
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            if exc.code is not None and not isinstance(exc.code, int):
                sys.stderr.write(f"{exc.code}\n")
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
    except BaseException:  # noqa: BLE001 - as the interpreter would: the traceback on stderr, exit 1
        with contextlib.suppress(Exception):
            os.write(2, traceback.format_exc().encode("utf-8", "backslashreplace"))
        code = 1
    finally:
        with contextlib.suppress(OSError):
            conn.sendall(str(code).encode())
        os._exit(code & 0xFF)


def _read_request(conn: socket.socket) -> tuple[dict, list[int]]:
    """The client's request: its size (4 bytes), then NUL-separated cwd, the argument count, the
    arguments and the environment's ``NAME=value`` items; the three descriptors beside it."""
    data, fds, _flags, _addr = socket.recv_fds(conn, 1 << 16, 3)
    size = int.from_bytes(data[:4], "big")
    body = data[4:]
    while len(body) < size:
        chunk = conn.recv(size - len(body))
        if not chunk:
            raise ConnectionError("the client went away")
        body += chunk
    cwd, count, *rest = [os.fsdecode(x) for x in body.split(b"\0")]
    argv, items = rest[: int(count)], rest[int(count) :]
    env = dict(item.split("=", 1) for item in items if "=" in item)
    return {"cwd": cwd, "argv": argv, "env": env}, list(fds)


def serve(path: str) -> None:
    import gc

    _preload()
    gc.freeze()  # the preloaded objects out of the collector's sight: a child's collections leave their pages shared
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(64)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print("ready", flush=True)
    while True:
        ready, _, _ = select.select([server], [], [], 0.5)
        with contextlib.suppress(ChildProcessError):  # reap (their CPU time counts to this process)
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        if not ready:
            continue
        conn, _ = server.accept()
        try:
            request, fds = _read_request(conn)
        except (OSError, ValueError):
            conn.close()
            continue
        if os.fork() == 0:
            server.close()
            _child(conn, request, fds)
        conn.close()
        for fd in fds:
            os.close(fd)


@contextlib.contextmanager
def running() -> Iterator[str]:
    """A warm server for the duration: yields its socket's path."""
    folder = tempfile.mkdtemp(prefix="sr-warm-")
    path = os.path.join(folder, "s")
    proc = subprocess.Popen([sys.executable, __file__, path], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        if proc.stdout.readline().strip() != "ready":
            raise RuntimeError("the warm stoprule server did not start")
        yield path
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        if proc.stdout is not None:
            proc.stdout.close()
        with contextlib.suppress(OSError):
            os.remove(path)
        os.rmdir(folder)


def client_script(socket_path: str, real: str) -> str:
    """The ``stoprule`` a sandbox puts on PATH: hands the command to the server at
    ``socket_path``, or runs ``real`` (the console script) when there is none."""
    # the C modules only (no json, no socket wrapper): the client's start is most of its cost
    return f"""#!{sys.executable} -IS
import _socket, array, os, sys
s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
try:
    s.connect({socket_path!r})
except OSError:
    os.execv({real!r}, [{real!r}, *sys.argv[1:]])
fds = []
for fd in (0, 1, 2):
    try:
        os.fstat(fd)
        fds.append(fd)
    except OSError:
        fds.append(os.open(os.devnull, os.O_RDWR))
items = [os.getcwd(), str(len(sys.argv) - 1), *sys.argv[1:], *(k + "=" + v for k, v in os.environ.items())]
body = "\\0".join(items).encode("utf-8", "surrogateescape")
data = len(body).to_bytes(4, "big") + body
sent = s.sendmsg([data], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, array.array("i", fds))])
s.sendall(data[sent:])
answer = b""
while True:
    chunk = s.recv(64)
    if not chunk:
        break
    answer += chunk
sys.exit(int(answer) if answer.strip() else 70)
"""


if __name__ == "__main__":
    serve(sys.argv[1])
