"""The bytecode of what a wired hook imports, in one file: a fresh process (the stop hook as
``stoprule init`` wires it, ``launch.py``) imports its ~70 modules from one read instead of ~70
rounds of the path finder (stats, an open, two reads, a close each).

    install()      launch.py: the kept bundle's modules are imported from it (first on sys.meta_path)
    keep()         when the hook's answer is out: keep the bundle again if a module missed it

The file sits beside this package's bytecode (``__pycache__/hook-bundle.<cache tag>.bin``, one per
interpreter and bytecode version) and is trusted as that bytecode is: only when no one but its
owner (this user or the system's administrator) may write it. Each module's entry holds its
source's stamp, as the compiled-pack cache keys a file (:mod:`stoprule.engine.packs`): size,
mtime, ctime (nanoseconds; a change to the bytes sets the ctime, which no one sets back) and
inode, and is used only while the source's ``stat`` still says so: a changed source is imported
as usual (from its own ``.pyc`` or source), and the bundle kept again after the command. A
bundle that cannot be read or is for another interpreter is ignored.

Its format: the index's length (8 bytes, little-endian), the index, then each module's code as a
``.pyc`` holds it; the index is :mod:`marshal` (the ``.pyc`` format) of ``(magic, hexversion,
{module: (path under the package's folder, is a package, stamp, where its code starts after the
index, its length)})``. A module's code is unmarshalled, from the bytes read, only when it is
imported. A process that compiled a pack (it imports the compiler) keeps none: the next stop's
modules are the ones to keep.

With ``$STOPRULE_NO_CACHE``, none is read or kept; with ``sys.dont_write_bytecode``, none is kept.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

import _frozen_importlib as _bootstrap  # (frozen: the import system's own, already loaded)
import _frozen_importlib_external as _external
import _imp
import marshal
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from importlib.machinery import ModuleSpec
    from typing import Any

__all__ = ["BundleFinder", "install", "keep", "path"]

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the stoprule package's folder
_MAX_BYTES = 64 << 20
_MAGIC = _external.MAGIC_NUMBER
_TAG = sys.implementation.cache_tag

Stamp = tuple[int, int, int, int]  # a source's size, mtime_ns, ctime_ns, inode
Entry = tuple[str, bool, Stamp, bytes | memoryview]


def _stamp(st: os.stat_result) -> Stamp:
    return st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino


def path() -> str:
    """Where the bundle of this interpreter is kept."""
    return os.path.join(_ROOT, "__pycache__", f"hook-bundle.{sys.implementation.cache_tag}.bin")


class _Loader(_external.SourceFileLoader):
    """A source file's loader (its data, resources and file name as usual) whose code comes from
    the bundle."""

    def __init__(self, fullname: str, origin: str, code: bytes | memoryview) -> None:
        super().__init__(fullname, origin)
        self.code = code

    def get_code(self, fullname: str) -> Any:
        try:
            code = marshal.loads(self.code)
        except Exception:  # noqa: BLE001 - a damaged entry: the module's own bytecode or source
            return super().get_code(fullname)
        _imp._fix_co_filename(code, self.path)  # type: ignore[attr-defined]  # as the import system does
        return code


class BundleFinder:
    """The first finder on ``sys.meta_path``: a module of the bundle whose source is unchanged."""

    def __init__(self, entries: dict[str, Entry]) -> None:
        self.entries = entries
        self.stale = False  # a module of the bundle whose source changed (imported as usual)
        self.before = frozenset(sys.modules)  # imported before it (this module and its packages)

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> ModuleSpec | None:
        entry = self.entries.get(name)
        if entry is None:
            return None
        rel, is_package, stamp, code = entry
        origin = os.path.join(_ROOT, rel)
        try:
            st = os.stat(origin)
        except OSError:
            st = None
        if st is None or _stamp(st) != stamp:
            self.stale = True
            return None
        spec = _bootstrap.ModuleSpec(name, _Loader(name, origin, code), origin=origin, is_package=is_package)
        spec.has_location = True  # (as spec_from_file_location makes it, without its checks)
        folder, file = os.path.split(origin)
        spec.cached = os.path.join(folder, "__pycache__", f"{file[:-3]}.{_TAG}.pyc")
        if is_package:
            spec.submodule_search_locations = [folder]
        return spec


def _read() -> dict[str, Entry]:
    """The kept bundle's entries; empty when there is none, or it is unreadable, for another
    interpreter, or writable by anyone but its owner."""
    if os.environ.get("STOPRULE_NO_CACHE") or _TAG is None:  # (no cache tag: no bytecode is kept)
        return {}
    try:
        fd = os.open(path(), os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return {}
    try:
        st = os.fstat(fd)
        getuid = getattr(os, "getuid", None)
        if (
            st.st_mode & 0o170000 != 0o100000  # not a regular file
            or st.st_size > _MAX_BYTES
            or (getuid is not None and (st.st_uid not in (getuid(), 0) or st.st_mode & 0o022))
        ):
            return {}
        view = memoryview(os.read(fd, st.st_size + 1))
        head = int.from_bytes(view[:8], "little")
        magic, version, index = marshal.loads(view[8 : 8 + head])
        if magic != _MAGIC or version != sys.hexversion or not isinstance(index, dict):
            return {}
        base = 8 + head
        if base + sum(entry[4] for entry in index.values()) != len(view):  # cut short, or more than it says
            return {}
        return {
            name: (rel, is_package, tuple(stamp), view[base + start : base + start + length])
            for name, (rel, is_package, stamp, start, length) in index.items()
        }
    except Exception:  # noqa: BLE001 - unreadable or malformed: imported as usual
        return {}
    finally:
        os.close(fd)


def install() -> BundleFinder:
    """Put the kept bundle's finder first on ``sys.meta_path`` (an empty one when none is kept: the
    command then keeps one, :func:`keep`)."""
    finder = BundleFinder(_read())
    sys.meta_path.insert(0, finder)
    return finder


def _installed() -> BundleFinder | None:
    return next((f for f in sys.meta_path if isinstance(f, BundleFinder)), None)


def _entry(name: str, origin: str, is_package: bool) -> Entry | None:
    """The module's entry: the code of its valid ``.pyc``, else compiled from its source now."""
    try:
        st = os.stat(origin)
        try:
            with open(_external.cache_from_source(origin), "rb") as fh:
                pyc = fh.read()
        except OSError:
            pyc = b""
        header = (
            _MAGIC
            + b"\0\0\0\0"
            + (int(st.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little")
            + (st.st_size & 0xFFFFFFFF).to_bytes(4, "little")
        )
        if pyc[:16] == header:
            code = pyc[16:]
        else:
            with open(origin, "rb") as fh:
                source = fh.read()
            code = marshal.dumps(compile(source, origin, "exec", dont_inherit=True))
        if _stamp(os.stat(origin)) != _stamp(st):  # changed meanwhile: left to the next run
            return None
    except (OSError, SyntaxError, ValueError):
        return None
    return os.path.relpath(origin, _ROOT), is_package, _stamp(st), code


def keep(finder: BundleFinder | None = None) -> bool:
    """Keep the bundle again when a module of this package was imported from elsewhere than the
    bundle (a changed source, a module it lacks), or none is kept: the modules this process imported
    and the entries still valid of the one kept (``finder``: the one installed). Written atomically,
    not synced (a lost bundle is only made again). Returns whether it was written; never raises."""
    finder = finder or _installed()
    if finder is None or sys.dont_write_bytecode or os.environ.get("STOPRULE_NO_CACHE") or _TAG is None:
        return False
    if "stoprule.engine.build" in sys.modules:  # it compiled a pack: not what a stop imports
        return False
    try:
        missed = {}
        for name, module in list(sys.modules.items()):
            spec = getattr(module, "__spec__", None)
            origin = getattr(spec, "origin", None)
            if (
                not name.startswith("stoprule.")
                or not isinstance(origin, str)
                or not origin.endswith(".py")
                or isinstance(getattr(spec, "loader", None), _Loader)
                or name in finder.before
            ):
                continue
            missed[name] = (origin, getattr(spec, "submodule_search_locations", None) is not None)
        if not missed and not finder.stale and finder.entries:
            return False
        target = path()
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if not os.access(os.path.dirname(target), os.W_OK):  # an install this user may not write: two stats
            return False
        entries = {}
        for name, old in finder.entries.items():  # the kept ones still valid
            try:
                st = os.stat(os.path.join(_ROOT, old[0]))
            except OSError:
                continue
            if _stamp(st) == old[2]:
                entries[name] = old
        for name, (origin, is_package) in missed.items():
            entry = _entry(name, origin, is_package)
            if entry is not None and not entry[0].startswith(".."):
                entries[name] = entry
        from stoprule._util.files import atomic_write

        index, blobs, start = {}, [], 0
        for name, (rel, is_package, stamp, code) in sorted(entries.items()):
            index[name] = (rel, is_package, stamp, start, len(code))
            blobs.append(bytes(code))
            start += len(code)
        head = marshal.dumps((_MAGIC, sys.hexversion, index))
        atomic_write(target, b"".join([len(head).to_bytes(8, "little"), head, *blobs]), sync=False)
        return True
    except Exception:  # noqa: BLE001 - a bundle not kept is only made again
        return False
