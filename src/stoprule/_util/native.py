"""flock, poll, crc32 and adler32 for the cold path: from ``stoprule._util._native`` (one small C
module, built with the package, optional), else from the standard library's ``fcntl``, ``select``
and ``zlib``, with the same results. A stop needs one function of each; loading the three (and
``libz``) is ~1 ms of its start, the one module a third of that.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["LOCK_EX", "LOCK_NB", "LOCK_SH", "adler32", "content_key", "crc32", "flock", "readable"]

LOCK_SH, LOCK_EX, LOCK_NB = 1, 2, 4  # flock(2)'s, on every POSIX system

try:
    from stoprule._util._native import adler32, crc32, flock, readable
except ImportError:  # not built: the standard library's (imported when first used)

    def crc32(data: bytes, value: int = 0) -> int:
        """zlib's CRC-32 of ``data``, continuing from ``value``."""
        import zlib

        return zlib.crc32(data, value)

    def adler32(data: bytes, value: int = 1) -> int:
        """zlib's Adler-32 of ``data``, continuing from ``value``."""
        import zlib

        return zlib.adler32(data, value)

    def flock(fd: int, operation: int) -> None:
        """``fcntl.flock`` (ImportError where there is none: Windows)."""
        import fcntl

        fcntl.flock(fd, operation)

    def readable(fds: Sequence[int], timeout_ms: int) -> list[int]:
        """The descriptors of ``fds`` that can be read without blocking (data, end of file or an
        error) within ``timeout_ms`` (-1: no limit); [] when none did."""
        import select

        poller = select.poll()
        for fd in fds:
            poller.register(fd, select.POLLIN)
        return [fd for fd, _ in poller.poll(timeout_ms)]


def content_key(data: bytes) -> str:
    """A short name for ``data``: its CRC-32, Adler-32 and length, in hex."""
    return f"{crc32(data):08x}{adler32(data):08x}{len(data):x}"
