"""A regular file's bytes, never blocking: a FIFO, a device or a folder where a file should be
reads as nothing (``_util.files.read_bounded`` raises instead, and costs a few imports this
module avoids: the guard and the stop read the agent-writable files with it).

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

from stoprule._util import oslite as os
from stoprule._util.pathlite import S_IFMT, S_IFREG

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["is_regular", "read_appended", "read_regular"]


def is_regular(mode: int) -> bool:
    """``stat.S_ISREG(mode)``, without importing ``stat``."""
    return mode & S_IFMT == S_IFREG


def _open(path: str) -> tuple[int, os.stat_result] | None:
    """A descriptor of the regular file ``path`` and its stat (None: missing, unreadable, or not a
    regular file); opened without blocking on a FIFO or taking a terminal."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
    except OSError:
        os.close(fd)
        return None
    if not is_regular(st.st_mode):
        os.close(fd)
        return None
    return fd, st


def _read(fd: int, start: int, limit: int) -> bytes:
    """At most ``limit`` bytes of ``fd`` from ``start``."""
    if start:
        os.lseek(fd, start, os.SEEK_SET)
    chunks: list[bytes] = []
    left = limit
    while left > 0:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def read_regular(path: str, limit: int, *, tail: bool = False) -> bytes | None:
    """At most ``limit`` bytes of the regular file ``path`` (its last ones with ``tail``), or None
    when it is missing, unreadable or not a regular file."""
    opened = _open(path)
    if opened is None:
        return None
    fd, st = opened
    try:
        return _read(fd, st.st_size - limit if tail and st.st_size > limit else 0, limit)
    except OSError:
        return None
    finally:
        os.close(fd)


def read_appended(path: str, limit: int, mark: Any, overlap: int = 0) -> tuple[bytes, list[Any]] | None:
    """What was appended to the regular file ``path`` since ``mark`` (a mark this function
    returned: the file's path, inode and size then), from ``overlap`` bytes before it, and the new
    mark; at most the last ``limit`` bytes, all of them when ``mark`` is not one for this file as
    it is (none yet, another path, a replaced or a cut file). None as :func:`read_regular`."""
    opened = _open(path)
    if opened is None:
        return None
    fd, st = opened
    size = st.st_size
    start = 0
    if type(mark) is list and len(mark) == 3 and mark[:2] == [path, st.st_ino] and type(mark[2]) is int:
        start = max(0, mark[2] - overlap) if 0 <= mark[2] <= size else 0
    start = max(start, size - limit)
    try:
        return _read(fd, start, size - start), [path, st.st_ino, size]
    except OSError:
        return None
    finally:
        os.close(fd)
