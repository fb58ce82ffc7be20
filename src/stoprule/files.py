"""Which files make up a pack, and a cheap key over their raw bytes (no YAML parsing)."""

from __future__ import annotations

import hashlib
from pathlib import Path

__all__ = ["pack_files", "raw_key"]


def pack_files(root: Path) -> list[Path]:
    """The YAML files of a pack, sorted by name (subfolders such as ``tests/`` excluded)."""
    return sorted(
        p for p in root.iterdir() if p.is_file() and p.suffix in (".yaml", ".yml") and not p.name.startswith(".")
    )


def raw_key(root: Path, files: list[Path]) -> tuple[str, list[tuple[str, bytes]]]:
    """sha256 over the file names and contents, and the contents read."""
    h = hashlib.sha256()
    contents = []
    for p in files:
        data = p.read_bytes()
        contents.append((p.name, data))
        h.update(p.name.encode() + b"\0" + str(len(data)).encode() + b"\0" + data)
    return h.hexdigest(), contents
