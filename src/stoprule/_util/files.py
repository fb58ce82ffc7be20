"""The one file helper: atomic replacement, exclusive locks, bounded reads, durable appends.

    atomic_write(path, data)        a uniquely named temp file in the same folder, fsync, rename over ``path``
    with locked(path): ...          exclusive ``flock`` on ``path`` (created if missing)
    read_bounded(path, limit)       the bytes of a regular file of at most ``limit`` bytes
    append_durably(path, data)      one ``O_APPEND`` write, synced, under a shared lock
    with taken_aside(path, to): ... ``path`` renamed to ``to``, its appenders done (exclusive lock)
    stamp(path)                     ``(size, mtime_ns)``, ``(0, 0)`` when missing: what a cache keys a file on

Readers see the old or the new file, never a torn one; a failed write leaves the old
file and no temp file behind. ``read_bounded`` refuses a FIFO, a device or a directory
before reading a byte (opened non-blocking, so a FIFO never stalls the caller) and a
file over ``limit`` (:class:`FileTooLarge`, an ``OSError``).

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

from stoprule._util import oslite as os
from stoprule._util.regular import is_regular

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "FileTooLarge",
    "NotRegular",
    "RACY_NS",
    "append_durably",
    "atomic_write",
    "file_stamp",
    "locked",
    "racy",
    "read_bounded",
    "stamp",
    "taken_aside",
]


class NotRegular(OSError):
    """The path is a FIFO, a device, a socket or a directory, not a regular file."""


class FileTooLarge(OSError):
    """The file is larger than the caller allows."""


def _errno(name: str) -> int:
    """``errno.NAME``: errno imported only when an error is raised (not on a stop's path)."""
    import errno

    code: int = getattr(errno, name)
    return code


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
                try:  # noqa: SIM105 - contextlib is not on the stop's path
                    os.fchmod(fd, os.stat(path).st_mode & 0o7777)
                except FileNotFoundError:
                    pass
            view = memoryview(raw)
            while view:
                n = os.write(fd, view)
                if n <= 0:
                    raise OSError(_errno("ENOSPC"), "short write", tmp)
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
        try:  # noqa: SIM105 - contextlib costs the cold start ~1 ms
            os.unlink(tmp)
        except OSError:
            pass
        raise


class locked:  # noqa: N801 - used as a function: ``with locked(path):`` (contextlib costs a start ~1 ms)
    """Hold an exclusive lock on ``path`` (a lock file; its folder is created) for the block; with
    ``wait`` false, ``BlockingIOError`` at once when another process holds it. The lock file's
    descriptor is ``fd`` meanwhile."""

    def __init__(self, path: str, *, wait: bool = True, mode: int = 0o644) -> None:
        self.path, self.wait, self.mode = path, wait, mode
        self.fd = -1

    def __enter__(self) -> locked:
        os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), self.mode)
        try:
            from stoprule._util.native import LOCK_EX, LOCK_NB, flock

            flock(self.fd, LOCK_EX if self.wait else LOCK_EX | LOCK_NB)
        except ImportError:  # pragma: no cover - no flock (Windows): renames stay atomic
            pass
        except BaseException:
            os.close(self.fd)
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        os.close(self.fd)  # closing releases the lock


def read_bounded(path: str, limit: int) -> bytes:
    """The bytes of the regular file ``path``: ``NotRegular`` for anything else, ``FileTooLarge``
    over ``limit`` bytes, ``FileNotFoundError`` when missing (all ``OSError``)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if not is_regular(st.st_mode):
            raise NotRegular(_errno("EINVAL"), "not a regular file", path)
        if st.st_size > limit:
            raise FileTooLarge(_errno("EFBIG"), f"larger than {limit} bytes", path)
        chunks: list[bytes] = []
        total = 0
        while True:
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:  # grew while being read
                raise FileTooLarge(_errno("EFBIG"), f"larger than {limit} bytes", path)
        return b"".join(chunks)
    finally:
        os.close(fd)


def append_durably(path: str, data: bytes, mode: int = 0o600) -> None:
    """Append ``data`` to ``path`` (created with ``mode``) in one ``O_APPEND`` write and sync it
    (and its folder, when this call made the file): once this returns, ``data`` survives a crash
    of the process and of the machine. A shared lock is held meanwhile; a file renamed away
    (:func:`taken_aside`) between the open and the lock is not written: the new ``path`` is.
    Raises ``OSError`` (a short write too)."""
    from stoprule._util.native import LOCK_SH, flock

    while True:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), mode)
        try:
            flock(fd, LOCK_SH)
            st = os.fstat(fd)
            try:
                current = os.stat(path)
            except FileNotFoundError:
                continue
            if (current.st_ino, current.st_dev) != (st.st_ino, st.st_dev):
                continue  # taken aside meanwhile: append to the new file
            view = memoryview(data)
            while view:
                n = os.write(fd, view)
                if n <= 0:
                    raise OSError(_errno("ENOSPC"), "short write", path)
                view = view[n:]
            os.fdatasync(fd)
            if st.st_size == 0:  # (probably) made by this call: its name must survive a crash too
                dfd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
                try:
                    os.fsync(dfd)
                finally:
                    os.close(dfd)
            return
        finally:
            os.close(fd)  # (the lock goes with it)


class taken_aside:  # noqa: N801 - used as a function: ``with taken_aside(path, to):``
    """Rename ``path`` to ``to`` (``FileNotFoundError`` if it is gone) and hold an exclusive lock
    on it for the block: every :func:`append_durably` that opened ``path`` before the rename has
    finished (or will write to a new ``path``), so ``to`` no longer changes."""

    def __init__(self, path: str, to: str) -> None:
        self.path, self.to = path, to
        self.fd = -1

    def __enter__(self) -> None:
        from stoprule._util.native import LOCK_EX, flock

        os.replace(self.path, self.to)
        self.fd = os.open(self.to, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        try:
            flock(self.fd, LOCK_EX)
        except BaseException:
            os.close(self.fd)
            raise

    def __exit__(self, *exc: Any) -> None:
        os.close(self.fd)


RACY_NS = 2_000_000_000  # stamps taken this soon after a file changed do not vouch for its bytes


def file_stamp(label: str, path: str) -> list[Any]:
    """``[label, size, mtime, ctime, inode]`` of the file at ``path`` (``OSError`` when it cannot
    be stated). A change to its bytes changes its ctime, which no one can set back (``os.utime``
    sets the mtime, and the ctime to now): equal stamps vouch for equal bytes, unless :func:`racy`."""
    st = os.stat(path)
    return [label, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


def racy(stamps: list[list[Any]], now_ns: int, within_ns: int = RACY_NS) -> bool:
    """Whether a file of ``stamps`` (:func:`file_stamp`) changed within ``within_ns`` of
    ``now_ns``: its stamp does not vouch for its bytes yet (a change in the same clock tick)."""
    return any(max(mtime, ctime) >= now_ns - within_ns for _, _, mtime, ctime, _ in stamps)


def stamp(path: str) -> tuple[int, int]:
    """``(size, mtime_ns)`` of ``path``; ``(0, 0)`` when it cannot be read."""
    try:
        st = os.stat(path)
    except OSError:
        return (0, 0)
    return (st.st_size, st.st_mtime_ns)
