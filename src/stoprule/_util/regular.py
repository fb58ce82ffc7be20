"""A regular file's bytes, never blocking: a FIFO, a device or a folder where a file should be
reads as nothing (``_util.files.read_bounded`` raises instead, and costs a few imports this
module avoids: the guard and the stop read the agent-writable files with it).

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

import os

__all__ = ["read_regular"]

_REGULAR = 0o100000  # stat.S_IFREG, without importing stat
_TYPE = 0o170000


def read_regular(path: str, limit: int, *, tail: bool = False) -> bytes | None:
    """At most ``limit`` bytes of the regular file ``path`` (its last ones with ``tail``), or None
    when it is missing, unreadable or not a regular file."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if st.st_mode & _TYPE != _REGULAR:
            return None
        if tail and st.st_size > limit:
            os.lseek(fd, st.st_size - limit, os.SEEK_SET)
        chunks: list[bytes] = []
        left = limit
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)
