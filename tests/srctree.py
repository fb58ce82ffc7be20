"""``src/stoprule``'s modules parsed once per test process: the tests that read every module's
syntax tree (error codes, exception classes, forbidden imports) share the parse."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

__all__ = ["SRC", "modules", "tree"]

SRC = Path(__file__).resolve().parent.parent / "src" / "stoprule"


@cache
def _parse(path: Path, mtime_ns: int) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def tree(path: Path) -> ast.Module:
    """The file's syntax tree (parsed once per version of the file; read it, never change it)."""
    return _parse(path, path.stat().st_mtime_ns)


def modules(under: Path = SRC) -> list[tuple[Path, ast.Module]]:
    """Every ``*.py`` below ``under`` with its tree, in path order."""
    return [(path, tree(path)) for path in sorted(under.rglob("*.py"))]
