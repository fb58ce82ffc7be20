"""Regular expressions for a short-lived process (the stop hook): compiled on first use, and
compiled without ``re`` where this interpreter has compiled them before.

    WORD = lazy(r"\\w+")          # a regex to its users: WORD.search(text), WORD.sub(...), ...
    compiled(r"(?i)^note\\b")      # the regex now: its program from the cache when there

Importing ``re`` (its parser, compiler and ``enum``) costs a start more than a third of a bare
interpreter's, and compiling a pattern a tenth of a millisecond. :func:`compiled` keeps each
pattern's program (what ``re``'s compiler makes of it, a list of numbers) in a file of its own
beside this package's bytecode (``__pycache__``, a folder per interpreter version and regex
engine: trusted as that bytecode is, and only when no one but its owner may write it), and the
next process hands it to the regex engine (``_sre``) directly: no ``re`` at all. The engine validates every program
it is given; one it refuses (or a file that cannot be read) is compiled by ``re`` again.

A method looked up on a :func:`lazy` regex (``search``, ``sub``, ``finditer`` ...) is the compiled
regex's own, kept on the instance: later lookups find it directly.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

import sys

from stoprule._util import oslite as os

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re
    from typing import Any, AnyStr

__all__ = ["FOLDS_TO_ASCII", "compiled", "lazy"]

# the characters re.IGNORECASE matches with an ASCII letter that str.lower() does not map to it
# (İ ı ſ K): a shortcut that lowers a text before matching must check for them first
FOLDS_TO_ASCII = ("\u0130", "\u0131", "\u017f", "\u212a")

_COMPILED: dict[tuple[str | bytes, int], Any] = {}


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


def _program_path(pattern: str | bytes, flags: int) -> str | None:
    """Where the program of ``pattern`` is kept: a file of its own (named by a digest of the pattern
    and flags) beside this package's bytecode, or None with ``$STOPRULE_NO_CACHE``."""
    global _FOLDER
    if os.environ.get("STOPRULE_NO_CACHE"):
        return None
    from stoprule._util.native import content_key

    if _FOLDER is None:
        import _sre  # type: ignore[import-not-found]

        tag = f"regex.{sys.implementation.cache_tag}-{sys.hexversion:x}-{_sre.MAGIC}-{_sre.CODESIZE}-{sys.byteorder}-2"
        _FOLDER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "__pycache__", tag)
    key = (pattern if isinstance(pattern, bytes) else pattern.encode("utf-8", "surrogatepass")) + b"\0%d" % flags
    return f"{_FOLDER}/{content_key(key)}.json"


_FOLDER: str | None = None  # the programs' folder (_program_path), worked out once


def _from_program(pattern: str | bytes, flags: int) -> Any:
    """The regex made from its kept program, or None: none kept, a file that is unreadable,
    malformed, another pattern's, or writable by anyone but its owner (this user or the system's
    administrator), or a program the engine refuses. The file is JSON (data, never code):
    ``[pattern, is bytes, flags, engine flags, program, groups, group index, index group]``, the
    program its 32-bit words in hex (this machine's byte order: the folder's name says it)."""
    path = _program_path(pattern, flags)
    if path is None:
        return None
    try:
        st = os.lstat(path)
        getuid = getattr(os, "getuid", None)
        if getuid is not None and (st.st_uid not in (getuid(), 0) or st.st_mode & 0o022):
            return None
        from stoprule._util.files import read_bounded
        from stoprule._util.jsonin import loads

        kept, is_bytes, kept_flags, engine_flags, code, groups, groupindex, indexgroup = loads(
            read_bounded(path, 1 << 22)
        )
        if (kept.encode("latin-1") if is_bytes is True else kept) != pattern or kept_flags != flags:
            return None
        import _sre

        program = memoryview(bytes.fromhex(code)).cast("I").tolist()  # (TypeError: not the hex of words)
        return _sre.compile(pattern, engine_flags, program, groups, groupindex, tuple(indexgroup))
    except Exception:  # noqa: BLE001 - unreadable, malformed or refused: compiled again
        return None


def _keep(pattern: str | bytes, flags: int, args: tuple[Any, ...]) -> None:
    """Keep the program (atomically, no fsync: a lost file is only compiled again)."""
    path = _program_path(pattern, flags)
    if path is None:
        return
    from stoprule._util.files import atomic_write
    from stoprule._util.jsonout import dumps

    text = pattern.decode("latin-1") if isinstance(pattern, bytes) else pattern
    import _sre

    if _sre.CODESIZE != 4:  # the words are read back as C unsigned ints
        return
    engine_flags, code, *rest = args
    program = b"".join(c.to_bytes(4, sys.byteorder) for c in code).hex()  # compact, and read fast
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        row = [text, isinstance(pattern, bytes), flags, engine_flags, program, *rest]
        atomic_write(path, dumps(row, separators=(",", ":")), sync=False)
    except (OSError, ValueError, TypeError):
        pass


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
    _keep(pattern, flags, args)
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
