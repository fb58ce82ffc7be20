"""Regular expressions for a short-lived process (the stop hook): compiled on first use, and
compiled without ``re`` where this interpreter has compiled them before.

    WORD = lazy(r"\\w+")          # a regex to its users: WORD.search(text), WORD.sub(...), ...
    compiled(r"(?i)^note\\b")      # the regex now: its program from the cache when there

Importing ``re`` (its parser, compiler and ``enum``) costs a start more than a third of a bare
interpreter's, and compiling a pattern a tenth of a millisecond. :func:`compiled` keeps each
pattern's program (what ``re``'s compiler makes of it, a list of numbers) in a file beside this
package's bytecode (``__pycache__``, one file per interpreter version and regex engine: trusted
as that bytecode is, and only when no one but its owner may write it), and the next process hands
it to the regex engine (``_sre``) directly: no ``re`` at all. The engine validates every program
it is given; one it refuses (or a file that cannot be read) is compiled by ``re`` again.

A method looked up on a :func:`lazy` regex (``search``, ``sub``, ``finditer`` ...) is the compiled
regex's own, kept on the instance: later lookups find it directly.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re
    from typing import Any, AnyStr

__all__ = ["compiled", "lazy"]

#: the programs kept in the cache, at most (a file of a few hundred kilobytes)
MAX_PROGRAMS = 2000
_COMPILED: dict[tuple[str | bytes, int], Any] = {}
_PROGRAMS: dict[tuple[str | bytes, int], tuple[Any, ...]] | None = None  # (pattern, flags) -> the engine's arguments


class _Lazy:
    def __init__(self, pattern: Any, flags: int = 0) -> None:
        self.pattern, self.flags = pattern, flags

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # copy, pickle and the like: not a regex method
            raise AttributeError(name)
        method = getattr(compiled(self.pattern, self.flags), name)
        setattr(self, name, method)
        return method


def lazy(pattern: AnyStr, flags: int = 0) -> re.Pattern[AnyStr]:
    """``pattern`` as a regex compiled on first use."""
    made: re.Pattern[AnyStr] = _Lazy(pattern, flags)  # type: ignore[assignment]
    return made  # a regex to its users: each method is the compiled regex's own once looked up


def _cache_path() -> str | None:
    """Where this interpreter's programs are kept: beside this package's bytecode (what may change
    them may change the bytecode too), or None with ``$STOPRULE_NO_CACHE``."""
    if os.environ.get("STOPRULE_NO_CACHE"):
        return None
    import _sre  # type: ignore[import-not-found]

    name = f"regex.{sys.implementation.cache_tag}-{sys.hexversion:x}-{_sre.MAGIC}-{_sre.CODESIZE}.json"
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "__pycache__", name)


def _programs() -> dict[tuple[str | bytes, int], tuple[Any, ...]]:
    """The kept programs (read once per process): none when the file is missing, unreadable,
    malformed, or writable by anyone but its owner (this user or the system's administrator).
    The file is JSON (data, never code): ``[[pattern, is bytes, flags, engine flags, program,
    groups, group index, index group], ...]``."""
    global _PROGRAMS
    if _PROGRAMS is None:
        _PROGRAMS = {}
        path = _cache_path()
        if path is None:
            return _PROGRAMS
        try:
            st = os.lstat(path)
            getuid = getattr(os, "getuid", None)
            if getuid is not None and (st.st_uid not in (getuid(), 0) or st.st_mode & 0o022):
                return _PROGRAMS
            from stoprule._util.files import read_bounded

            raw = read_bounded(path, 16 << 20)
            from stoprule._util.jsonin import loads

            rows = loads(raw)
        except (OSError, ValueError, RecursionError):
            return _PROGRAMS
        for row in rows if type(rows) is list else ():
            try:
                pattern, is_bytes, flags, engine_flags, code, groups, groupindex, indexgroup = row
                if type(pattern) is str and type(code) is list and type(groupindex) is dict:
                    key = (pattern.encode("latin-1") if is_bytes is True else pattern, int(flags))
                    _PROGRAMS[key] = (int(engine_flags), code, int(groups), groupindex, tuple(indexgroup))
            except (TypeError, ValueError):  # a malformed row: compiled again
                continue
    return _PROGRAMS


def _save(table: dict[tuple[str | bytes, int], tuple[Any, ...]]) -> None:
    """Write the kept programs (atomically, no fsync: a lost file is only compiled again)."""
    path = _cache_path()
    if path is None:
        return
    from stoprule._util.files import atomic_write
    from stoprule._util.jsonout import dumps

    rows = [
        [p.decode("latin-1") if isinstance(p, bytes) else p, isinstance(p, bytes), f, *args]
        for (p, f), args in table.items()
    ]
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        atomic_write(path, dumps(rows, separators=(",", ":")), sync=False)
    except (OSError, ValueError, TypeError):
        pass


def _from_program(pattern: str | bytes, flags: int) -> Any:
    """The regex made from its cached program, or None (none cached, or one the engine refuses)."""
    args = _programs().get((pattern, flags))
    if type(args) is not tuple or len(args) != 5:
        return None
    import _sre

    try:
        return _sre.compile(pattern, *args)
    except Exception:  # noqa: BLE001 - a program the engine refuses: compiled again
        return None


def _compile(pattern: str | bytes, flags: int) -> Any:
    """The regex compiled by ``re``'s own parser and compiler (as ``re.compile`` does), its program
    kept in the cache; ``re.compile`` where this interpreter's ``re`` is laid out otherwise."""
    import re

    try:
        import _sre

        comp: Any = getattr(re, "_compiler", None) or re.sre_compile  # type: ignore[attr-defined]
        parser: Any = getattr(comp, "_parser", None) or comp.sre_parse
        p = parser.parse(pattern, flags)
        code = [int(c) for c in comp._code(p, flags)]  # (opcodes are int subclasses)
        indexgroup: list[str | None] = [None] * p.state.groups
        for k, i in p.state.groupdict.items():
            indexgroup[i] = k
        groupindex = {str(k): int(i) for k, i in p.state.groupdict.items()}
        args = (int(flags | p.state.flags), code, int(p.state.groups - 1), groupindex, tuple(indexgroup))
        rx = _sre.compile(pattern, *args)
    except Exception:  # noqa: BLE001 - another layout of re: compiled, not kept
        return re.compile(pattern, flags)
    table = _programs()
    if len(table) < MAX_PROGRAMS:
        table[(pattern, flags)] = args
        _save(table)
    return rx


def compiled(pattern: AnyStr, flags: int = 0) -> re.Pattern[AnyStr]:
    """``re.compile(pattern, flags)`` (``flags`` an int: ``re.I`` is 2, ``re.S`` 16, ``re.M`` 8),
    its program from the cache when this interpreter has compiled it before."""
    key = (pattern, flags)
    rx = _COMPILED.get(key)
    if rx is None:
        rx = _COMPILED[key] = _from_program(pattern, flags) or _compile(pattern, flags)
    made: re.Pattern[AnyStr] = rx
    return made
