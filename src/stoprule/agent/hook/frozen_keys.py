"""The keys and stamps a frozen session is checked by (:mod:`stoprule.agent.hook.frozen`), and
taken by when it freezes (:mod:`stoprule.agent.hook.freezing`): of the pack's files, the switch
files, the hook's environment.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

from stoprule._util import oslite as os
from stoprule._util.files import RACY_NS, file_stamp, racy
from stoprule._util.native import content_key

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

__all__ = ["PACK_MARK", "pack_key", "pack_stamp"]

PACK_MARK = "FROZEN"  # in a frozen pack copy: its files are the whole pack (no global layering)
_ENV_PREFIXES = ("STOPRULE_", "XDG_", "GIT_")
_SWITCHES = {"blockers": ("blockers", "switch.json")}  # below the project's root: what a stop reads live


def _key(data: bytes | None) -> str:
    return "-" if data is None else content_key(data)


def _read(path: str, limit: int = 8 << 20) -> bytes | None:
    from stoprule._util.regular import read_regular

    return read_regular(path, limit)


def _pack_files(pack: str) -> list[str]:
    from stoprule.language.files import pack_files

    try:
        return pack_files(pack)
    except OSError:
        return []


def _pack_paths(pack: str) -> list[tuple[str, str]]:
    """``(name, path)`` of each of the pack's files (every layer) and of its ``agent/`` data."""
    out = [(os.path.basename(path), path) for path in _pack_files(pack)]
    agent = os.path.join(pack, "agent")
    if os.path.isdir(agent):
        out += [(f"agent/{n}", os.path.join(agent, n)) for n in sorted(os.listdir(agent))]
    return out


def pack_key(pack: str) -> str:
    """A key over the pack's files (every layer), their names and bytes."""
    return _key("\n".join(f"{name}:{_key(_read(path))}" for name, path in _pack_paths(pack)).encode())


def pack_stamp(pack: str) -> list[list[Any]] | None:
    """Each of the pack's files' stamp (:func:`~stoprule._util.files.file_stamp`), labelled by its
    name (None: one could not be stated): equal stamps vouch for equal bytes, as the compiled-pack
    cache's do, unless a file changed within ``RACY_NS`` of the stamp (:func:`_racy`)."""
    try:
        return [file_stamp(name, path) for name, path in _pack_paths(pack)]
    except OSError:
        return None


def _racy(stamp: list[list[Any]]) -> bool:
    """Whether a file of ``stamp`` changed within ``RACY_NS`` of now (the stamp does not vouch yet)."""
    import time

    return racy(stamp, time.time_ns(), RACY_NS)


def _env(env: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k.startswith(_ENV_PREFIXES)}


def _switches(project: str | None) -> dict[str, str]:
    root = os.path.dirname(project) if project else None
    return {name: _key(_read(os.path.join(root, ".stoprule", *rel))) for name, rel in _SWITCHES.items()} if root else {}
