"""The served pack: compiled from a directory, recompiled when its files change, swapped atomically.

A change is seen by polling the pack files' names, sizes, mtimes and CRC-32s. The new pack is
compiled aside (in a thread: the event loop keeps serving with the old one) and, once it passes
every check stage, becomes the current :class:`Served` in one assignment. A pack that fails
check is refused: the old one keeps serving and the refusal is kept for ``/metrics`` and
``/v1/policy``. A request takes the current :class:`Served` once and uses it to the end, so it
is decided by exactly one pack, the one its response names.
"""

from __future__ import annotations

import os
import time
import zlib
from dataclasses import dataclass

from stoprule.diagnostics import PolicyError
from stoprule.engine.evaluator import Evaluator
from stoprule.engine.packs import compile_policy, select_pack
from stoprule.language.files import pack_files

__all__ = ["PackHolder", "Served"]


@dataclass(frozen=True)
class Served:
    evaluator: Evaluator
    root: str
    digest: str
    files: tuple[str, ...]
    compiled_at: float

    def info(self) -> dict[str, object]:
        return {
            "digest": self.digest,
            "root": self.root,
            "files": [os.path.basename(f) for f in self.files],
            "compiled_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.compiled_at)),
        }


def stamp(root: str) -> str:
    """What identifies the pack's files now (a change of any of them changes it)."""
    parts = []
    try:
        for path in pack_files(root):
            with open(path, "rb") as fh:
                data = fh.read()
            parts.append(f"{os.path.basename(path)}:{len(data)}:{zlib.crc32(data):08x}")
    except OSError as exc:
        parts.append(f"unreadable:{exc}")
    return "\n".join(parts)


def _load(root: str) -> Served:
    compiled = compile_policy(root)
    return Served(Evaluator(compiled), root, compiled.digest, tuple(compiled.files), time.time())


class PackHolder:
    """The current pack and the last refusal (None when the pack on disk is the one served)."""

    def __init__(self, policy: str | None) -> None:
        self.root = os.fspath(select_pack(policy))
        self._stamp = stamp(self.root)
        self.current = _load(self.root)  # a pack that fails at start-up: PolicyError (the server does not start)
        self.refused: str | None = None

    def changed(self) -> str | None:
        """The new stamp if the files changed since the last (attempted) load, else None."""
        now = stamp(self.root)
        return now if now != self._stamp else None

    def reload(self, new_stamp: str) -> bool:
        """Compile the pack as it is now; swap it in if it checks (True), else keep the old one (False)."""
        self._stamp = new_stamp
        try:
            fresh = _load(self.root)
        except PolicyError as exc:
            self.refused = exc.render().splitlines()[0] if exc.render() else str(exc)
            return False
        except Exception as exc:  # noqa: BLE001 - an unreadable file mid-edit: refused the same way
            self.refused = f"{type(exc).__name__}: {exc}"
            return False
        self.current = fresh  # one assignment: requests hold the Served they started with
        self.refused = None
        return True
