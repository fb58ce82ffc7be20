"""Finding a pack and loading it compiled, through a cache keyed by its bytes.

Selection order: ``--policy PATH``, ``$STOPRULE_POLICY``, ``policies/`` in the nearest
``.stoprule/`` at or above the working directory, the bundled default pack. A cache hit
imports neither YAML, pydantic nor pathlib: this module is on the CLI's cold-start path.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

import os
import pickle
import sys
import zlib
from collections.abc import Mapping

from stoprule._util.cache import cache_dir, content_key, read_entry, write_entry
from stoprule._util.codegen import export, preload
from stoprule.engine.compiled import CompiledPolicy
from stoprule.engine.evaluator import Evaluator
from stoprule.language.files import pack_files
from stoprule.project import find_project
from stoprule.version import __version__

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["bundled_pack", "compile_policy", "load_policy", "pack_path", "select_pack"]

CACHE_FORMAT = "9"
_MAX_ENTRY_BYTES = 1 << 30  # a compiled pack far beyond any the pack limits allow
# every module of these packages (and the base modules beside them) shapes what a pack
# compiles to: the cache key covers each of them, found on disk, never listed by hand
_COMPILER_PACKAGES = ("language", "facts", "engine", "_util")
_PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _compiler_sources() -> list[str]:
    found = [os.path.join(_PACKAGE_ROOT, name) for name in ("diagnostics.py", "limits.py")]
    for package in _COMPILER_PACKAGES:
        folder = os.path.join(_PACKAGE_ROOT, package)
        found += sorted(os.path.join(folder, n) for n in os.listdir(folder) if n.endswith(".py"))
    return found


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


def _stamp(root: str) -> str | None:
    """What the cache is keyed on: each pack file's name, size and content checksums
    (CRC-32 and Adler-32, so an edit that restores the mtime is still seen), and the
    compiler modules' size and mtime (a changed compiler invalidates what it compiled).

    ``zlib`` is already loaded and ``hashlib`` is not (see :mod:`stoprule._util.cache`). The
    pack's digest itself (sha256 over the normalised files) is computed when it is compiled.
    """
    if not os.path.isdir(root):
        return None
    parts = [os.path.abspath(root), __version__, CACHE_FORMAT, sys.version.split()[0]]
    for module in _compiler_sources():  # a changed compiler invalidates what it compiled
        st = os.stat(module)
        parts.append(f"{os.path.relpath(module, _PACKAGE_ROOT)}:{st.st_size}:{st.st_mtime_ns}")
    for path in pack_files(root):
        with open(path, "rb") as fh:
            data = fh.read()
        parts.append(f"{path}:{len(data)}:{zlib.crc32(data):08x}:{zlib.adler32(data):08x}")
    return "\n".join(parts)


def compile_policy(path: str | os.PathLike[str] | None = None, *, cache: bool = True) -> CompiledPolicy:
    """Compile the selected pack, reusing a cached compilation of byte-identical files."""
    root = _select(path, os.environ, None)
    cdir = cache_dir() if cache else None
    stamp = _stamp(root) if cdir is not None else None
    entry = os.path.join(cdir, f"{content_key(stamp.encode())}.pickle") if cdir is not None and stamp else None
    if entry is not None:
        raw = read_entry(entry, _MAX_ENTRY_BYTES)
        try:
            if raw is not None:
                cached_stamp, obj, code = pickle.loads(raw)
                if cached_stamp == stamp and isinstance(obj, CompiledPolicy):
                    preload(code)  # the generated projectors and validator, compiled
                    return obj
        except (pickle.UnpicklingError, EOFError, AttributeError, ImportError, TypeError, ValueError):
            pass
    from stoprule.engine.build import compile_pack

    compiled = compile_pack(root).compiled
    assert compiled is not None
    if entry is not None and stamp is not None:
        from stoprule.engine.evaluator import generated_sources

        data = (stamp, compiled, export(generated_sources(compiled)))
        write_entry(entry, pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL))
    return compiled


def load_policy(path: str | os.PathLike[str] | None = None, *, cache: bool = True) -> Evaluator:
    """Load and compile a pack (selected as the CLI does) into a ready :class:`Evaluator`."""
    return Evaluator(compile_policy(path, cache=cache))
