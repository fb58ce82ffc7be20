"""The start of the command as ``stoprule init`` wires it into a harness:
``PYTHON -I -S /path/to/stoprule/launch.py ARGS``.

A hook runs a fresh process at every stop (the tool-call guard at every tool call), and a
console script's start is the interpreter's plus ``site``'s (its ``.pth`` files, the venv:
~3 ms) plus the script's own ``import re``. ``launch.py`` starts the command without both:

- ``-I``: no ``PYTHON*`` variable, no user site, not the current or the script's folder on the
  path (a project's files never shadow a module);
- ``-S``: no ``site``: the folder holding the ``stoprule`` package goes on the path instead (in a
  normal install that is site-packages, which holds its dependencies too).

A top-level module found nowhere on that path (a dependency in another folder: an editable
install's venv, the system's packages) runs ``site``'s start once, then is searched again
(:class:`SiteOnMiss`), so the command finds every module the console script would.

stoprule's own modules (a stop imports ~70) are found by :class:`OwnModules`, from one listing of
each of its folders, as the path finder finds them (a package, then an extension module, then a
source file, from the same files and bytecode) without its per-module work (a folder ``stat``, a
file ``stat``, the suffix loops: ~1 ms of a stop); a source file's bytecode is read by
:class:`SourceLoader`, which takes a matching cache without ``SourceLoader.get_code``'s generic
steps (~10 us of each import, ~0.7 ms of a stop).
``launch.py`` itself stays a few lines: a script is compiled at every start (its bytecode is
never kept), this module's is.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from importlib.machinery import ModuleSpec
    from typing import Any

__all__ = ["OwnModules", "SiteOnMiss", "SourceLoader", "start"]

_PACKAGE = __name__.partition(".")[0] + "."
_EXTERNAL: Any = sys.modules.get("_frozen_importlib_external")  # CPython's path finder and loaders
_NO_FLAGS = b"\0\0\0\0"  # a pyc header's flags: a timestamp pyc (not hash-based)
_COMPILE: Any = getattr(_EXTERNAL, "_compile_bytecode", None)  # a pyc's code object, as the loaders read it
_OS: Any = sys.modules["posix" if "posix" in sys.modules else "nt"]  # os's functions, without importing os
_SEP = "\\" if _OS.__name__ == "nt" else "/"


class SiteOnMiss:
    """The last finder on ``sys.meta_path``: a top-level module no other finder found runs
    ``site.main()`` (once; the finder then leaves) and is searched for again."""

    @staticmethod
    def find_spec(name: str, path: Any = None, target: Any = None) -> ModuleSpec | None:
        if path is not None or SiteOnMiss not in sys.meta_path:  # a submodule: its package's path decides
            return None
        sys.meta_path.remove(SiteOnMiss)
        import site

        site.main()
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec: ModuleSpec | None = find(name, None, target) if find is not None else None
            if spec is not None:
                return spec
        return None


class OwnModules:
    """A finder before the path finder on ``sys.meta_path``: a submodule of stoprule in its package's
    one folder, found in that folder's listing (read once per process), as the path finder's
    ``FileFinder`` finds it: a package (a folder with ``__init__.py``), else an extension module,
    else a source file. Anything else, and a name the listing does not hold, is the path finder's."""

    _listings: dict[str, frozenset[str]] = {}

    @classmethod
    def find_spec(cls, name: str, path: Any = None, target: Any = None) -> ModuleSpec | None:
        if not name.startswith(_PACKAGE) or path is None or len(path) != 1 or type(path[0]) is not str:
            return None
        folder = path[0]
        names = cls._listings.get(folder)
        if names is None:
            try:
                names = cls._listings[folder] = frozenset(_OS.listdir(folder))
            except OSError:
                return None
        tail = name.rpartition(".")[2]
        folder = folder if folder.endswith(_SEP) else folder + _SEP
        if tail in names:
            init = f"{folder}{tail}{_SEP}__init__.py"
            try:
                if _OS.stat(init).st_mode & 0o170000 != 0o100000:  # os.path.isfile, without os
                    return None
            except (OSError, ValueError):
                return None  # not a regular package: the path finder's
            return _source_spec(name, init, [init[:-12]])
        import _imp

        for suffix in _imp.extension_suffixes():
            if tail + suffix in names:
                file = folder + tail + suffix
                return _EXTERNAL.spec_from_file_location(  # type: ignore[no-any-return]
                    name, file, loader=_EXTERNAL.ExtensionFileLoader(name, file)
                )
        if tail + ".py" in names:
            return _source_spec(name, folder + tail + ".py", None)
        return None

    @classmethod
    def invalidate_caches(cls) -> None:
        """``importlib.invalidate_caches()``: list the folders again."""
        cls._listings.clear()


if _EXTERNAL is not None:

    class SourceLoader(_EXTERNAL.SourceFileLoader):  # type: ignore[misc]
        """The path finder's loader of a source file (``SourceFileLoader``), whose ``get_code``
        takes the bytecode cache when it matches the source as ``SourceLoader.get_code`` checks
        it (a timestamp pyc of this Python's magic number, the source's mtime and size), without
        its generic steps; anything else (no cache, a stale or hash-based one, an unreadable
        source) is ``SourceLoader.get_code``'s, which compiles and writes the cache as usual."""

        cached: str | None = None  # the bytecode cache's path (the spec's ``cached``)

        def get_code(self, fullname: str) -> Any:
            path, cached = self.path, self.cached
            if cached is not None and _COMPILE is not None:
                try:
                    st = _stat(path)
                    data = _read(cached)
                except OSError:
                    data = b""
                if (
                    data[:4] == _EXTERNAL.MAGIC_NUMBER
                    and data[4:8] == _NO_FLAGS
                    and int.from_bytes(data[8:12], "little") == int(st.st_mtime) & 0xFFFFFFFF
                    and int.from_bytes(data[12:16], "little") == st.st_size & 0xFFFFFFFF
                ):
                    return _COMPILE(memoryview(data)[16:], fullname, cached, path)
            return super().get_code(fullname)

    _stat = _OS.stat

    def _read(file: str) -> bytes:
        """The file's bytes in four system calls (``open().read()`` makes seven: the buffered
        reader's ``isatty`` and ``tell``, and a second read for the end); b"" if it changed size
        while read (the stock loader then reads it)."""
        fd = _OS.open(file, _OS.O_RDONLY | _OS.O_CLOEXEC)
        try:
            size = _OS.fstat(fd).st_size
            data: bytes = _OS.read(fd, size + 1)
        finally:
            _OS.close(fd)
        return data if len(data) == size else b""


def _source_spec(name: str, file: str, search: list[str] | None) -> ModuleSpec:
    """The spec ``spec_from_file_location`` makes for a source file (a package's ``__init__.py``
    with ``search``, its folder), made directly, with :class:`SourceLoader` and the bytecode
    cache's path worked out once."""
    loader = SourceLoader(name, file)
    spec: ModuleSpec = sys.modules["_frozen_importlib"].ModuleSpec(name, loader, origin=file, is_package=bool(search))
    spec.has_location = True
    if search is not None:
        spec.submodule_search_locations = search
    try:  # noqa: SIM105 - contextlib is not on the stop's path
        spec.cached = loader.cached = _EXTERNAL.cache_from_source(file)
    except NotImplementedError:  # sys.implementation.cache_tag is None: no bytecode cache
        pass
    return spec


def start() -> None:
    """With ``-S``, :class:`SiteOnMiss` after every finder; in CPython, :class:`OwnModules` first."""
    if sys.flags.no_site:
        sys.meta_path.append(SiteOnMiss)
    path_finder = getattr(_EXTERNAL, "PathFinder", None)
    if path_finder in sys.meta_path and OwnModules not in sys.meta_path:
        sys.meta_path.insert(0, OwnModules)  # first: no built-in or frozen module is stoprule's
