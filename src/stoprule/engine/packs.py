"""Finding a pack and loading it compiled, through a cache checked against the pack's files.

Selection order: ``--policy PATH``, ``$STOPRULE_POLICY``, ``policies/`` in the nearest
``.stoprule/`` at or above the working directory, the bundled default pack. A cache hit
imports neither YAML, pydantic nor pathlib: this module is on the CLI's cold-start path.

The cache holds one file per pack directory, a line of JSON, then the JSON texts the compiled
pack holds as they are (its rulesets and conditions: as JSON strings, each start would undo
their escaping), their sizes in the line. The line holds the compiled pack as data
(:func:`stoprule.engine.compiled.to_data`, read back building only the compiled pack's own
record types: never code, unlike a pickle), the pack files' stats (size, mtime, ctime, inode)
and a checksum of their names and bytes, and the compiler modules' stats. A start stats the
files: the same stats are a hit without reading them; different stats (a ``touch``, a
checkout) are a hit only if the files' checksum is still the one recorded. Stats taken within
``RACY_NS`` of a file's last change do not vouch for it (a change in the same clock tick
could keep them equal): the next start checks that file's content, as git does. An entry
that does not read back (altered, truncated, its texts not the sizes recorded, from another
version), or that anyone but the user could have written, is compiled again.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

import sys

from stoprule._util import oslite as os
from stoprule._util.cache import cache_dir, read_entry, write_entry
from stoprule._util.files import RACY_NS, file_stamp, racy
from stoprule._util.jsonin import loads
from stoprule._util.jsonout import dumps
from stoprule._util.native import adler32, crc32
from stoprule.engine.compiled import CompiledPolicy, from_data, to_data
from stoprule.engine.evaluator import Evaluator
from stoprule.language.files import pack_files
from stoprule.project import find_project
from stoprule.version import __version__

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path
    from typing import Any

__all__ = ["bundled_pack", "compile_policy", "keep_loaded", "load_policy", "pack_path", "select_pack"]

CACHE_FORMAT = "12"
MAX_ENTRY_BYTES = 64 << 20  # a cache file larger than this is not read
# every module of these packages (and the base modules beside them) shapes what a pack
# compiles to: the cache key covers each of them, found on disk, never listed by hand
_COMPILER_PACKAGES = ("language", "facts", "engine", "_util")
_PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _bundled() -> str:
    installed = os.path.join(_PACKAGE_ROOT, "policies")
    if os.path.isdir(installed):
        return installed
    return os.path.join(os.path.dirname(os.path.dirname(_PACKAGE_ROOT)), "policies")


def _select(explicit: str | os.PathLike[str] | None, env: Mapping[str, str], cwd: str | None) -> str:
    if explicit:
        return os.fspath(explicit)
    if env.get("STOPRULE_POLICY"):
        return env["STOPRULE_POLICY"]
    state = find_project(cwd)  # the nearest .stoprule/ upward, as git finds .git
    local = os.path.join(state, "policies") if state else ""
    if local and os.path.isdir(local):
        return local
    return _bundled()


def bundled_pack() -> Path:
    """The default pack: inside the installed package, or the repo's ``policies/``."""
    from pathlib import Path

    return Path(_bundled())


def select_pack(
    explicit: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
) -> Path:
    """The pack to use: ``explicit``, else ``$STOPRULE_POLICY``, else ``policies/`` of the nearest
    ``.stoprule/`` at or above ``cwd``, else the bundled pack."""
    from pathlib import Path

    return Path(_select(explicit, os.environ if env is None else env, os.fspath(cwd) if cwd else None))


def pack_path(
    explicit: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None, cwd: str | None = None
) -> str:
    """:func:`select_pack` as a string, without importing pathlib (the hook's cold start)."""
    return _select(explicit, os.environ if env is None else env, cwd)


def _compiler_stats() -> list[list[Any]]:
    """The compiler modules' size and mtime (a changed compiler invalidates what it compiled),
    each module found on disk, never listed by hand."""
    out: list[list[Any]] = []
    for name in ("diagnostics.py", "limits.py"):
        st = os.stat(os.path.join(_PACKAGE_ROOT, name))
        out.append([name, st.st_size, st.st_mtime_ns])
    for package in _COMPILER_PACKAGES:
        with os.scandir(os.path.join(_PACKAGE_ROOT, package)) as it:
            found = sorted((e.name, e.stat()) for e in it if e.name.endswith(".py"))
        out += [[f"{package}/{name}", st.st_size, st.st_mtime_ns] for name, st in found]
    return out


def _file_stats(files: list[str]) -> list[list[Any]]:
    """Each pack file's stamp (:func:`~stoprule._util.files.file_stamp`), labelled by its path."""
    return [file_stamp(path, path) for path in files]


def _sources_digest(files: list[str]) -> str:
    """A checksum of the pack files' names, sizes and bytes (read only when their stats do not
    vouch for the entry): it tells an edited pack from the one compiled, with CRC-32 and Adler-32, which the
    stop has loaded (``hashlib`` would cost it ~2 ms; the compiled pack's own digest, sha256,
    is the compiler's). Files that match it and not the entry are the same bytes: making them
    match on purpose would only get the pack compiled from the files before the edit."""
    crc, adler, size = 0, 1, 0
    for p in files:
        with open(p, "rb") as fh:
            data = fh.read()
        head = f"{os.path.basename(p)}\0{len(data)}\0".encode("utf-8", "surrogateescape")
        crc = crc32(data, crc32(head, crc))
        adler = adler32(data, adler32(head, adler))
        size += len(head) + len(data)
    return f"{crc:08x}{adler:08x}{size:x}"


def _entry_path(cdir: str, root: str) -> str:
    key = "\n".join([os.path.abspath(root), __version__, CACHE_FORMAT, sys.version.split()[0]]).encode()
    return os.path.join(cdir, f"pack-{crc32(key):08x}{adler32(key):08x}.entry")


def _read(path: str) -> tuple[dict[str, Any], list[str]] | None:
    """The cache entry at ``path`` and the texts after it (None when it is missing or does not
    read as one): a line of JSON whose ``texts`` gives the UTF-8 size of each text that follows."""
    raw = read_entry(path, MAX_ENTRY_BYTES)
    if raw is None:
        return None
    head, _, tail = raw.partition(b"\n")
    try:
        entry = loads(head)
        sizes = entry["texts"] if type(entry) is dict else None
        if type(sizes) is not list or any(type(n) is not int or n < 0 for n in sizes) or sum(sizes) != len(tail):
            return None
        texts, at = [], 0
        for n in sizes:
            texts.append(tail[at : at + n].decode("utf-8", "surrogatepass"))
            at += n
    except (ValueError, KeyError):
        return None
    return entry, texts


def _cached(
    found: tuple[dict[str, Any], list[str]] | None, root: str, compiler: list[list[Any]], files: list[str]
) -> tuple[CompiledPolicy | None, list[list[Any]] | None]:
    """``(the compiled pack, None)`` on a hit whose stats still vouch for it; ``(pack, new stats)``
    on a hit found by content (the entry to be written again); ``(None, None)`` on a miss."""
    if found is None:
        return None, None
    entry, texts = found
    if entry.get("format") != CACHE_FORMAT or entry.get("version") != __version__:
        return None, None
    if entry.get("root") != os.path.abspath(root) or entry.get("compiler") != compiler:
        return None, None
    stats = _file_stats(files)
    restamp = None
    if stats != entry.get("files") or entry.get("racy"):
        if _sources_digest(files) != entry.get("sources"):
            return None, None
        restamp = stats
    try:
        return from_data(entry.get("compiled"), texts), restamp
    except (ValueError, TypeError, RecursionError):
        return None, None


def compile_policy(path: str | os.PathLike[str] | None = None, *, cache: bool = True) -> CompiledPolicy:
    """Compile the selected pack, reusing a cached compilation of byte-identical files."""
    import time

    root = _select(path, os.environ, None)
    cdir = cache_dir() if cache else None
    if cdir is not None and os.path.isdir(root):
        try:
            compiler, files = _compiler_stats(), pack_files(root)
            entry_path = _entry_path(cdir, root)
            found = _read(entry_path)
            compiled, restamp = _cached(found, root, compiler, files)
        except OSError:  # a file vanished meanwhile: compiled below (which names any problem)
            compiled, restamp, found = None, None, None
        if compiled is not None:
            if restamp is not None and found is not None:
                head, texts = found
                now = time.time_ns()
                _store(entry_path, dict(head, files=restamp, racy=racy(restamp, now, RACY_NS)), texts)
            return compiled
    entry = None
    if cdir is not None:
        try:  # what the files are before the compiler reads them: a change meanwhile shows next time
            now = time.time_ns()
            compiler, files = _compiler_stats(), pack_files(root)
            stats = _file_stats(files)
            entry = {"format": CACHE_FORMAT, "version": __version__, "root": os.path.abspath(root),
                     "compiler": compiler, "files": stats, "racy": racy(stats, now, RACY_NS),
                     "sources": _sources_digest(files)}  # fmt: skip
        except OSError:
            entry = None
    from stoprule.engine.build import compile_pack

    compiled = compile_pack(root).compiled
    assert compiled is not None
    if cdir is not None and entry is not None:
        data, texts = to_data(compiled)
        _store(_entry_path(cdir, root), dict(entry, compiled=data), texts)
    return compiled


def _store(path: str, entry: dict[str, Any], texts: list[str]) -> None:
    """Write the entry, then ``texts`` as they are, atomically; an unwritable cache is not an error."""
    try:
        tail = [t.encode("utf-8", "surrogatepass") for t in texts]
        head = dumps(dict(entry, texts=[len(t) for t in tail]), separators=(",", ":")).encode()
        write_entry(path, b"\n".join([head, b"".join(tail)]))
    except (TypeError, ValueError):
        return


# pack directory -> (its files' stats, its evaluator): in a long-lived process (keep_loaded), the
# evaluator of a pack whose files keep their stats is used again, its engine and code warm
_KEPT: dict[str, tuple[list[list[Any]], Evaluator]] | None = None


def keep_loaded(on: bool = True) -> None:
    """In a long-lived process (the resident one), keep each pack's evaluator while the pack's
    files keep their stats (a file changed within ``RACY_NS`` of being stated is loaded again)."""
    global _KEPT
    _KEPT = {} if on else None


def load_policy(path: str | os.PathLike[str] | None = None, *, cache: bool = True) -> Evaluator:
    """Load and compile a pack (selected as the CLI does) into a ready :class:`Evaluator`."""
    if _KEPT is None or not cache:
        return Evaluator(compile_policy(path, cache=cache))
    import time

    root = _select(path, os.environ, None)
    try:
        stats = _file_stats(pack_files(root))
    except OSError:
        return Evaluator(compile_policy(path, cache=cache))
    kept = _KEPT.get(root)
    if kept is not None and kept[0] == stats:
        return kept[1]
    evaluator = Evaluator(compile_policy(path, cache=cache))
    if not racy(stats, time.time_ns(), RACY_NS):
        if len(_KEPT) >= 64:
            _KEPT.clear()
        _KEPT[root] = (stats, evaluator)
    return evaluator
