"""The one file helper: atomic replacement, exclusive locks, bounded reads.

    atomic_write(path, data)        a uniquely named temp file in the same folder, fsync, rename over ``path``
    with locked(path): ...          exclusive ``flock`` on ``path`` (created if missing)
    read_bounded(path, limit)       the bytes of a regular file of at most ``limit`` bytes
    stamp(path)                     ``(size, mtime_ns)``, ``(0, 0)`` when missing: what a cache keys a file on

Readers see the old or the new file, never a torn one; a failed write leaves the old
file and no temp file behind. ``read_bounded`` refuses a FIFO, a device or a directory
before reading a byte (opened non-blocking, so a FIFO never stalls the caller) and a
file over ``limit`` (:class:`FileTooLarge`, an ``OSError``).

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from contextlib import contextmanager, suppress

__all__ = ["FileTooLarge", "NotRegular", "atomic_write", "locked", "read_bounded", "stamp"]


class NotRegular(OSError):
    """The path is a FIFO, a device, a socket or a directory, not a regular file."""


class FileTooLarge(OSError):
    """The file is larger than the caller allows."""


def atomic_write(
    path: str,
    data: str | bytes,
    *,
    sync: bool = True,
    mode: int = 0o644,
    exclusive: bool = False,
    sync_folder: bool = False,
    keep_mode: bool = False,
) -> bool:
    """Replace ``path`` with ``data`` atomically (the folder is created); with ``exclusive``, only
    create it (False when it exists: nothing written). ``sync`` flushes the file to disk,
    ``sync_folder`` the folder too (the rename itself survives a crash). A new file gets ``mode``
    (less the umask); with ``keep_mode``, a file that is replaced keeps its own permission bits.
    Raises ``OSError``."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    tmp = os.path.join(folder, f".tmp-{os.getpid()}-{os.urandom(6).hex()}-{os.path.basename(path)}"[:255])
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        try:
            if keep_mode:
                with suppress(FileNotFoundError):
                    os.fchmod(fd, os.stat(path).st_mode & 0o7777)
            view = memoryview(raw)
            while view:
                n = os.write(fd, view)
                if n <= 0:
                    raise OSError(errno.ENOSPC, "short write", tmp)
                view = view[n:]
            if sync:
                os.fsync(fd)
        finally:
            os.close(fd)
        if exclusive:
            try:
                os.link(tmp, path)
            except FileExistsError:
                return False
            finally:
                os.unlink(tmp)
        else:
            os.replace(tmp, path)
        if sync_folder:
            dfd = os.open(folder, os.O_RDONLY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)
        return True
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp)
        raise


@contextmanager
def locked(path: str) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (a lock file; its folder is created) for the block."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            import fcntl

            fcntl.flock(fd, fcntl.LOCK_EX)
        except ImportError:  # pragma: no cover - no flock (Windows): renames stay atomic
            pass
        yield
    finally:
        os.close(fd)  # closing releases the lock


def read_bounded(path: str, limit: int) -> bytes:
    """The bytes of the regular file ``path``: ``NotRegular`` for anything else, ``FileTooLarge``
    over ``limit`` bytes, ``FileNotFoundError`` when missing (all ``OSError``)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    fd = os.open(path, flags)
    try:
        import stat

        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegular(errno.EINVAL, "not a regular file", path)
        if st.st_size > limit:
            raise FileTooLarge(errno.EFBIG, f"larger than {limit} bytes", path)
        chunks: list[bytes] = []
        total = 0
        while True:
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:  # grew while being read
                raise FileTooLarge(errno.EFBIG, f"larger than {limit} bytes", path)
        return b"".join(chunks)
    finally:
        os.close(fd)


def stamp(path: str) -> tuple[int, int]:
    """``(size, mtime_ns)`` of ``path``; ``(0, 0)`` when it cannot be read."""
    try:
        st = os.stat(path)
    except OSError:
        return (0, 0)
    return (st.st_size, st.st_mtime_ns)
