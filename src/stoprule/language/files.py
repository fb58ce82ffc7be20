"""Which files make up a pack, and a cheap key over their raw bytes (no YAML parsing).

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

import os

__all__ = ["pack_files", "raw_key"]


def pack_files(root: str | os.PathLike[str]) -> list[str]:
    """Paths of the pack's YAML files, sorted by name (subfolders such as ``tests/`` excluded)."""
    with os.scandir(root) as it:
        names = sorted(
            e.name for e in it if e.is_file() and e.name.endswith((".yaml", ".yml")) and not e.name.startswith(".")
        )
    return [os.path.join(root, n) for n in names]


def raw_key(files: list[str]) -> tuple[str, list[tuple[str, bytes]]]:
    """sha256 over the file names and contents, and the contents read."""
    import hashlib

    h = hashlib.sha256()
    contents = []
    for p in files:
        with open(p, "rb") as fh:
            data = fh.read()
        name = os.path.basename(p)
        contents.append((name, data))
        h.update(name.encode() + b"\0" + str(len(data)).encode() + b"\0" + data)
    return h.hexdigest(), contents
