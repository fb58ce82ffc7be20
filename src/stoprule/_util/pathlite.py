"""``os.path`` for the cold path, without importing ``os`` (:mod:`stoprule._util.oslite` says why).

The functions a stop calls, for ``str`` paths (and path-like objects giving one), as CPython
3.11's ``posixpath`` and ``genericpath`` compute them (adapted from them: PSF License). A bytes
path, and any other name of ``os.path``, is ``posixpath``'s (imported on first use, with ``os``).

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

import sys
from posix import environ, fspath, getcwd, lstat, readlink, stat

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "S_IFDIR", "S_IFLNK", "S_IFMT", "S_IFREG", "abspath", "basename", "dirname", "exists", "expanduser", "getsize",
    "isabs", "isdir", "isfile", "islink", "join", "lexists", "normpath", "realpath", "relpath", "samefile", "split",
]  # fmt: skip

sep = "/"
curdir = "."
pardir = ".."
S_IFMT, S_IFREG, S_IFDIR, S_IFLNK = 0o170000, 0o100000, 0o040000, 0o120000  # stat's, without importing stat


def _py_normpath(path: str) -> str:
    """posixpath.normpath's own Python code (Python 3.10's), for a str ("" stays "")."""
    if not path:
        return path
    # POSIX allows one or two initial slashes, but treats three or more as a single slash
    initial = 2 if path.startswith("//") and not path.startswith("///") else int(path.startswith("/"))
    comps: list[str] = []
    for comp in path.split("/"):
        if comp in ("", "."):
            continue
        if comp != ".." or (not initial and not comps) or (comps and comps[-1] == ".."):
            comps.append(comp)
        elif comps:
            comps.pop()
    return "/" * initial + "/".join(comps)


try:
    from posix import _path_normpath  # type: ignore[attr-defined]  # its C code, Python 3.11+
except ImportError:  # Python 3.10
    _path_normpath = _py_normpath


def _posixpath() -> Any:
    import posixpath

    return posixpath


def join(a: Any, *p: Any) -> Any:
    if len(p) == 1 and type(a) is str and type(p[0]) is str:  # the common call, first
        b = p[0]
        return b if b.startswith("/") else a + b if not a or a.endswith("/") else f"{a}/{b}"
    a = fspath(a)
    rest = [fspath(b) for b in p]
    if type(a) is not str or any(type(b) is not str for b in rest):
        return _posixpath().join(a, *p)  # bytes, or the TypeError os.path raises
    path = a
    for b in rest:
        if b.startswith("/"):
            path = b
        elif not path or path.endswith("/"):
            path += b
        else:
            path += "/" + b
    return path


def split(p: Any) -> tuple[Any, Any]:
    p = fspath(p)
    if type(p) is not str:
        return _posixpath().split(p)  # type: ignore[no-any-return]
    i = p.rfind("/") + 1
    head, tail = p[:i], p[i:]
    if head and head != "/" * len(head):
        head = head.rstrip("/")
    return head, tail


def dirname(p: Any) -> Any:
    return split(p)[0]


def basename(p: Any) -> Any:
    p = fspath(p)
    if type(p) is not str:
        return _posixpath().basename(p)
    return p[p.rfind("/") + 1 :]


def isabs(s: Any) -> bool:
    s = fspath(s)
    if type(s) is not str:
        return _posixpath().isabs(s)  # type: ignore[no-any-return]
    return s.startswith("/")


def normpath(path: Any) -> Any:
    path = fspath(path)
    if type(path) is not str:
        return _posixpath().normpath(path)
    return _path_normpath(path) or "."


def abspath(path: Any) -> Any:
    path = fspath(path)
    if type(path) is not str:
        return _posixpath().abspath(path)
    if not path.startswith("/"):
        path = join(getcwd(), path)
    return normpath(path)


def _mode(path: Any, follow: bool = True) -> int | None:
    """The file's ``st_mode``, or None where ``os.path``'s predicates answer False."""
    try:
        return (stat(path) if follow else lstat(path)).st_mode
    except (OSError, ValueError):
        return None


def exists(path: Any) -> bool:
    return _mode(path) is not None


def lexists(path: Any) -> bool:
    return _mode(path, follow=False) is not None


def isfile(path: Any) -> bool:
    mode = _mode(path)
    return mode is not None and mode & S_IFMT == S_IFREG


def isdir(s: Any) -> bool:
    mode = _mode(s)
    return mode is not None and mode & S_IFMT == S_IFDIR


def islink(path: Any) -> bool:
    mode = _mode(path, follow=False)
    return mode is not None and mode & S_IFMT == S_IFLNK


def getsize(filename: Any) -> int:
    return stat(filename).st_size


def samefile(f1: Any, f2: Any) -> bool:
    s1, s2 = stat(f1), stat(f2)
    return bool(s1.st_ino == s2.st_ino and s1.st_dev == s2.st_dev)


def expanduser(path: Any) -> Any:
    """``~`` and ``~/...`` from ``HOME``; anything else (``~user``, no ``HOME``) is ``posixpath``'s."""
    path = fspath(path)
    if type(path) is not str or not path.startswith("~"):
        return path if type(path) is str else _posixpath().expanduser(path)
    os = sys.modules.get("os")  # os.environ once os is imported (the one a process changes)
    if os is not None:
        home = os.environ.get("HOME")
    else:
        raw = environ.get(b"HOME")
        home = None if raw is None else raw.decode(sys.getfilesystemencoding(), sys.getfilesystemencodeerrors())
    i = path.find("/", 1)
    if i < 0:
        i = len(path)
    if i != 1 or home is None:
        return _posixpath().expanduser(path)
    return (home.rstrip("/") + path[i:]) or "/"


def realpath(filename: Any, *, strict: bool = False) -> Any:
    filename = fspath(filename)
    if type(filename) is not str:
        return _posixpath().realpath(filename, strict=strict)
    path, _ = _joinrealpath("", filename, strict, {})
    return abspath(path)


def _joinrealpath(path: str, rest: str, strict: bool, seen: dict[str, str | None]) -> tuple[str, bool]:
    """``posixpath._joinrealpath``: ``path`` joined with ``rest``, symbolic links resolved."""
    if rest.startswith("/"):
        rest = rest[1:]
        path = "/"
    while rest:
        name, _, rest = rest.partition("/")
        if not name or name == curdir:
            continue
        if name == pardir:
            if path:
                path, name = split(path)
                if name == pardir:
                    path = join(path, pardir, pardir)
            else:
                path = pardir
            continue
        newpath = join(path, name)
        try:
            is_link = lstat(newpath).st_mode & S_IFMT == S_IFLNK
        except OSError:
            if strict:
                raise
            is_link = False
        if not is_link:
            path = newpath
            continue
        if newpath in seen:  # already seen this path
            known = seen[newpath]
            if known is not None:
                path = known  # already resolved
                continue
            if strict:
                stat(newpath)  # raises the OSError of a symlink loop
            else:
                return join(newpath, rest), False  # a loop: the rest unresolved
        seen[newpath] = None  # not resolved yet
        path, ok = _joinrealpath(path, readlink(newpath), strict, seen)
        if not ok:
            return join(path, rest), False
        seen[newpath] = path  # resolved
    return path, True


def relpath(path: Any, start: Any = None) -> Any:
    if not path:
        raise ValueError("no path specified")
    path = fspath(path)
    start = curdir if start is None else fspath(start)
    if type(path) is not str or type(start) is not str:
        return _posixpath().relpath(path, start)
    start_list = [x for x in abspath(start).split("/") if x]
    path_list = [x for x in abspath(path).split("/") if x]
    i = 0
    for a, b in zip(start_list, path_list, strict=False):
        if a != b:
            break
        i += 1
    rel_list = [pardir] * (len(start_list) - i) + path_list[i:]
    if not rel_list:
        return curdir
    return join(*rel_list)


def __getattr__(name: str) -> Any:
    """Any other name of ``os.path``: ``posixpath``'s (a module attribute the import system looks
    for, ``__path__`` and the like, is not one)."""
    if name.startswith("__"):
        raise AttributeError(name)
    return getattr(_posixpath(), name)
