"""The one content-keyed cache: compiled packs (:mod:`stoprule.engine.packs`) and validated
project configs (:mod:`stoprule.config.reader`) are stored under a key made of the bytes they
came from, so an edit (even one that restores the mtime) is a miss and a hit skips the work.

    cache_file(name)         the path of entry ``name`` in the cache folder, or None (caching off)
    content_key(data)        a short key of ``data`` (CRC-32, Adler-32 and length)
    read_entry(path, limit)  the entry's bytes, or None when missing, unreadable, or not the user's own
    write_entry(path, data)  replace the entry atomically; an unwritable cache is not an error

The folder is ``$STOPRULE_CACHE_DIR``, else ``$XDG_CACHE_HOME/stoprule``, else
``~/.cache/stoprule``; ``$STOPRULE_NO_CACHE`` turns caching off. An entry is data, never
trusted: each reader checks what it loads against its source. The key is CRC-32 and Adler-32
(:mod:`stoprule._util.native`), not ``hashlib``, which would cost a stop's start ~2 ms.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

from stoprule._util import oslite as os
from stoprule._util.files import atomic_write, read_bounded
from stoprule._util.native import content_key

__all__ = ["cache_dir", "cache_file", "content_key", "read_entry", "write_entry"]


def cache_dir() -> str | None:
    """The cache folder, or None when ``$STOPRULE_NO_CACHE`` turns caching off."""
    if os.environ.get("STOPRULE_NO_CACHE"):
        return None
    if os.environ.get("STOPRULE_CACHE_DIR"):
        return os.environ["STOPRULE_CACHE_DIR"]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "stoprule")


def cache_file(name: str) -> str | None:
    """Where entry ``name`` lives, or None when caching is off."""
    folder = cache_dir()
    return os.path.join(folder, name) if folder is not None else None


def read_entry(path: str, limit: int) -> bytes | None:
    """The entry's bytes (at most ``limit``), or None when it is missing, too large or unreadable,
    or when anyone but the user could have written it (another user's file, or one the group or
    others may write, a symbolic link): such an entry is a miss."""
    try:
        st = os.lstat(path)
        getuid = getattr(os, "getuid", None)
        if getuid is not None and (st.st_uid != getuid() or st.st_mode & 0o022):
            return None
        return read_bounded(path, limit)
    except OSError:
        return None


def write_entry(path: str, data: bytes) -> None:
    """Replace the entry atomically (no fsync: a lost entry is only a miss); errors are ignored."""
    try:
        atomic_write(path, data, sync=False)
    except OSError:
        return
