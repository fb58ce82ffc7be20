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
source file, loaded by the same loaders from the same files and bytecode) without its per-module
work (a folder ``stat``, a file ``stat``, the suffix loops: ~1 ms of a stop).
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

__all__ = ["OwnModules", "SiteOnMiss", "start"]

_PACKAGE = __name__.partition(".")[0] + "."


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
        import os

        folder = path[0]
        names = cls._listings.get(folder)
        if names is None:
            try:
                names = cls._listings[folder] = frozenset(os.listdir(folder))
            except OSError:
                return None
        tail = name.rpartition(".")[2]
        external: Any = sys.modules["_frozen_importlib_external"]
        if tail in names:
            init = os.path.join(folder, tail, "__init__.py")
            if not os.path.isfile(init):
                return None  # not a regular package: the path finder's
            return external.spec_from_file_location(  # type: ignore[no-any-return]
                name, init, loader=external.SourceFileLoader(name, init), submodule_search_locations=[init[:-12]]
            )
        import _imp

        for suffix in _imp.extension_suffixes():
            if tail + suffix in names:
                file = os.path.join(folder, tail + suffix)
                return external.spec_from_file_location(  # type: ignore[no-any-return]
                    name, file, loader=external.ExtensionFileLoader(name, file)
                )
        if tail + ".py" in names:
            file = os.path.join(folder, tail + ".py")
            return external.spec_from_file_location(  # type: ignore[no-any-return]
                name, file, loader=external.SourceFileLoader(name, file)
            )
        return None

    @classmethod
    def invalidate_caches(cls) -> None:
        """``importlib.invalidate_caches()``: list the folders again."""
        cls._listings.clear()


def start() -> None:
    """With ``-S``, :class:`SiteOnMiss` after every finder; in CPython, :class:`OwnModules` before
    the path finder."""
    if sys.flags.no_site:
        sys.meta_path.append(SiteOnMiss)
    if "_frozen_importlib_external" in sys.modules:
        external = sys.modules["_frozen_importlib_external"]
        at = next((i for i, f in enumerate(sys.meta_path) if f is getattr(external, "PathFinder", None)), None)
        if at is not None and OwnModules not in sys.meta_path:
            sys.meta_path.insert(at, OwnModules)
