"""``os`` for the cold path, without importing ``os``.

``import os`` costs a process started without ``site`` (a wired hook: ``python -I -S``) about
1.1 ms, a tenth of a bare interpreter's start: most of it ``_collections_abc``'s abstract
classes, which ``os`` imports for ``os.environ``. The modules a stop imports use this module as
``os`` (``from stoprule._util import oslite as os``), which is, on POSIX:

- ``posix``'s functions and constants, the ones ``os`` re-exports;
- ``path``: :mod:`stoprule._util.pathlite`, the part of ``os.path`` a stop calls;
- ``environ``: ``os.environ`` once ``os`` is imported (every test, any warm process), else the
  process's environment decoded as ``os.environ`` decodes it (read-only use: the cold path
  never changes its environment; a child gets an explicit one);
- ``makedirs``, ``fdopen`` and the constants ``os`` defines itself, as CPython 3.11's ``os``
  computes them (adapted from it: PSF License);
- any other name: ``os``'s, imported on first use.

Elsewhere it is ``os`` itself.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # type checkers see ``os``
    from os import *  # noqa: F403
    from os import PathLike as PathLike
    from os import _Environ as _Environ
    from os import _exit as _exit
    from os import environ as environ
    from os import environb as environb
    from os import fdopen as fdopen
    from os import makedirs as makedirs
    from os import path as path
elif "posix" not in sys.builtin_module_names:  # not POSIX: ``os`` itself
    import os as _os

    sys.modules[__name__] = _os
else:
    from posix import *  # noqa: F403
    from posix import _exit  # noqa: F401
    from posix import environ as _environb

    from stoprule._util import pathlite as path

    del environ  # type: ignore[name-defined]  # noqa: F821  - posix's holds bytes: see __getattr__
    name = "posix"
    sep, altsep, curdir, pardir, extsep, pathsep, linesep = "/", None, ".", "..", ".", ":", "\n"
    defpath, devnull = "/bin:/usr/bin", "/dev/null"
    SEEK_SET, SEEK_CUR, SEEK_END = 0, 1, 2
    _decoded: dict[str, str] | None = None

    def makedirs(name: Any, mode: int = 0o777, exist_ok: bool = False) -> None:
        head, tail = path.split(name)
        if not tail:
            head, tail = path.split(head)
        if head and tail and not path.exists(head):
            try:  # noqa: SIM105 - contextlib is not on the cold path
                makedirs(head, exist_ok=exist_ok)
            except FileExistsError:  # another process made it meanwhile
                pass
            if tail == (b"." if isinstance(tail, bytes) else curdir):
                return
        try:
            mkdir(name, mode)  # noqa: F405
        except OSError:
            if not exist_ok or not path.isdir(name):
                raise

    def fdopen(
        fd: int, mode: str = "r", buffering: int = -1, encoding: str | None = None, *args: Any, **kwargs: Any
    ) -> Any:
        if not isinstance(fd, int):
            raise TypeError(f"invalid fd type ({type(fd)}, expected integer)")
        import io

        if "b" not in mode:
            encoding = io.text_encoding(encoding)
        return io.open(fd, mode, buffering, encoding, *args, **kwargs)  # noqa: UP020 - not posix's open

    def __getattr__(name: str) -> Any:
        """``environ`` (see the module's docstring; ``environb``: its bytes), and any name this module
        lacks: ``os``'s (a module attribute the import system looks for, ``__path__`` and the like,
        is not one)."""
        if name.startswith("__"):
            raise AttributeError(name)
        if name in ("environ", "environb"):
            os = sys.modules.get("os")
            if os is not None:
                return getattr(os, name)
            if name == "environb":
                return _environb
            global _decoded
            if _decoded is None:
                enc, errors = sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()
                _decoded = {k.decode(enc, errors): v.decode(enc, errors) for k, v in _environb.items()}
            return _decoded
        import os

        return getattr(os, name)


if TYPE_CHECKING:
    from typing import Any
