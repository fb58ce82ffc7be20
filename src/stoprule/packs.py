"""Finding a pack and loading it compiled, through a cache keyed by its bytes.

Selection order: ``--policy PATH``, ``$STOPRULE_POLICY``, ``./.stoprule/policies/``,
the bundled default pack. A cache hit imports neither YAML nor pydantic.
"""

from __future__ import annotations

import os
import pickle
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

from .compiled import CompiledPolicy
from .evaluator import Evaluator
from .files import pack_files, raw_key

__all__ = ["bundled_pack", "compile_policy", "load_policy", "select_pack"]

CACHE_FORMAT = "1"


def bundled_pack() -> Path:
    """The default pack: inside the installed package, or the repo's ``policies/``."""
    here = Path(__file__).resolve().parent
    installed = here / "policies"
    return installed if installed.is_dir() else here.parent.parent / "policies"


def select_pack(
    explicit: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> Path:
    env = os.environ if env is None else env
    if explicit:
        return Path(explicit)
    if env.get("STOPRULE_POLICY"):
        return Path(env["STOPRULE_POLICY"])
    local = (cwd or Path.cwd()) / ".stoprule" / "policies"
    if local.is_dir():
        return local
    return bundled_pack()


def _cache_dir() -> Path | None:
    if os.environ.get("STOPRULE_NO_CACHE"):
        return None
    base = os.environ.get("STOPRULE_CACHE_DIR") or os.environ.get("XDG_CACHE_HOME")
    root = Path(base) if base else Path.home() / ".cache"
    return root / "stoprule" if not os.environ.get("STOPRULE_CACHE_DIR") else root


def _cache_key(root: Path) -> str | None:
    if not root.is_dir():
        return None
    from . import __version__

    key, _ = raw_key(root, pack_files(root))
    py = f"{sys.version_info[0]}.{sys.version_info[1]}"
    return f"{key[:32]}-{__version__}-{CACHE_FORMAT}-py{py}"


def compile_policy(path: str | os.PathLike[str] | None = None, *, cache: bool = True) -> CompiledPolicy:
    """Compile the selected pack, reusing a cached compilation of identical files."""
    root = select_pack(path)
    cdir = _cache_dir() if cache else None
    key = _cache_key(root) if cdir is not None else None
    if cdir is not None and key is not None:
        cached = cdir / f"{key}.pickle"
        try:
            with cached.open("rb") as fh:
                obj = pickle.load(fh)
            if isinstance(obj, CompiledPolicy):
                return obj
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError):
            pass
    from .compiler import compile_pack

    compiled = compile_pack(root).compiled
    assert compiled is not None
    if cdir is not None and key is not None:
        _store(cdir, f"{key}.pickle", compiled)
    return compiled


def _store(cdir: Path, name: str, compiled: CompiledPolicy) -> None:
    """Write atomically (temp file + rename); an unwritable cache is not an error."""
    try:
        cdir.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=cdir, prefix=".tmp-", suffix=".pickle")
        with os.fdopen(fd, "wb") as fh:
            pickle.dump(compiled, fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, cdir / name)
    except OSError:
        return


def load_policy(path: str | os.PathLike[str] | None = None, *, cache: bool = True) -> Evaluator:
    """Load and compile a pack (selected as the CLI does) into a ready :class:`Evaluator`."""
    return Evaluator(compile_policy(path, cache=cache))
