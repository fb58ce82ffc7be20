"""How a resident process and its clients talk and check each other: the identity both share,
length-prefixed frames, the peer's credentials, whether a process is the genuine resident
stoprule, and the client's request (:func:`ask`). Loaded only once a resident process's socket is
there (the client) or by the process itself (:mod:`stoprule.cli.resident_cmd`).

On the cold path (tools/import_graph.py) when a resident process listens: its imports stay
few, light and lazy.
"""

from __future__ import annotations

import sys

from stoprule._util import oslite as os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "PROTOCOL",
    "SERVE_ARGV",
    "WAIT_SECONDS",
    "ask",
    "frame",
    "genuine",
    "identity",
    "peer",
    "read_all",
    "unframe",
]

WAIT_SECONDS = 30.0  # how long a client waits for an answer before deciding itself
PROTOCOL = b"stoprule-resident-1"
SERVE_ARGV = ("-I", "-m", "stoprule", "resident", "serve")


def identity() -> bytes:
    """What client and process must share: the stoprule version and install, the interpreter."""
    from stoprule.version import __version__

    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return f"{__version__}\0{here}\0{os.path.realpath(sys.executable)}".encode()


def frame(parts: list[bytes]) -> bytes:
    return b"".join(len(p).to_bytes(4, "big") + p for p in parts)


def unframe(data: bytes, count: int) -> list[bytes]:
    """``count`` length-prefixed parts of ``data`` (ValueError if it holds anything else)."""
    parts, at = [], 0
    for _ in range(count):
        n = int.from_bytes(data[at : at + 4], "big")
        if at + 4 + n > len(data):
            raise ValueError("a truncated frame")
        parts.append(data[at + 4 : at + 4 + n])
        at += 4 + n
    if at != len(data):
        raise ValueError("trailing bytes")
    return parts


def read_all(sock: Any, limit: int) -> bytes:
    chunks: list[bytes] = []
    total = 0
    while True:
        chunk = sock.recv(1 << 16)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        total += len(chunk)
        if total > limit:
            raise ValueError("too large")


def peer(sock: Any) -> tuple[int, int]:
    """``(pid, uid)`` of the process at the other end (Linux ``SO_PEERCRED``)."""
    import _socket

    raw = sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, 12)
    return int.from_bytes(raw[0:4], sys.byteorder), int.from_bytes(raw[4:8], sys.byteorder)


def genuine(pid: int) -> bool:
    """Whether process ``pid`` is a resident stoprule started as :func:`start` starts one: this
    interpreter, ``-I -m stoprule resident serve`` (and at most ``--idle N``), no ``LD_*``."""
    try:
        if os.readlink(f"/proc/{pid}/exe") != os.path.realpath(sys.executable):
            return False
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            argv = fh.read().split(b"\0")[1:-1]
        with open(f"/proc/{pid}/environ", "rb") as fh:
            env = fh.read().split(b"\0")
    except OSError:
        return False
    rest = argv[len(SERVE_ARGV) :]
    if [a.decode(errors="replace") for a in argv[: len(SERVE_ARGV)]] != list(SERVE_ARGV):
        return False
    if rest and (len(rest) != 2 or rest[0] != b"--idle" or not rest[1].replace(b".", b"", 1).isdigit()):
        return False
    return not any(v.startswith(b"LD_") for v in env)


def ask(path: str, argv: list[str], data: bytes) -> tuple[int, bytes, bytes] | None:
    import _socket

    env = b"\0".join(k + b"=" + v for k, v in os.environb.items())
    try:
        request = frame([PROTOCOL, identity(), "\0".join(argv).encode(), os.getcwdb(), env, data])
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return None
    try:
        sock.settimeout(WAIT_SECONDS)
        sock.connect(path)
        pid, uid = peer(sock)
        if uid != os.getuid() or not genuine(pid):
            return None
        sock.sendall(request)
        sock.shutdown(_socket.SHUT_WR)
        reply = read_all(sock, 64 << 20)
        status, code, out, err = unframe(reply, 4)
        if status != b"ok":
            return None
        return int(code), out, err
    except (OSError, ValueError):
        return None
    finally:
        sock.close()
