"""``# fmt: skip`` only on tables: the markers that keep ``ruff format`` off a statement, checked.

    python tools/fmt_skips.py [PATH...]          # list the markers not on a table; exit 1 if any
    python tools/fmt_skips.py --drop [PATH...]   # remove those markers (then run `ruff format .`)

A table is a literal whose layout is its meaning: an assignment (at module or class level, or
a keyword argument's value) of a dict, list, tuple or set literal written over several lines,
or one row of such a literal. Everywhere else ``ruff format`` lays the code out, and a marker
only hides a hand-wrapped line from it. PATH defaults to ``src``, ``tests``, ``tools`` and
``benchmarks`` of this checkout. Standard library only.
"""

from __future__ import annotations

import ast
import sys
import tokenize
from collections.abc import Iterable
from pathlib import Path

__all__ = ["markers", "misplaced"]

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_PATHS = ("src", "tests", "tools", "benchmarks")
MARK = "# fmt: skip"
_LITERALS = (ast.Dict, ast.List, ast.Tuple, ast.Set)


def _files(paths: Iterable[str]) -> list[Path]:
    out: list[Path] = []
    for p in paths:
        path = Path(p) if Path(p).is_absolute() else ROOT / p
        out += [path] if path.is_file() else sorted(f for f in path.rglob("*.py") if "fixtures" not in f.parts)
    return out


def markers(path: Path) -> list[int]:
    """The lines of ``path`` whose comment is the marker."""
    with path.open("rb") as fh:
        return [t.start[0] for t in tokenize.tokenize(fh.readline) if t.type == tokenize.COMMENT and t.string == MARK]


def _table_lines(tree: ast.AST) -> set[int]:
    """Lines that end a multi-line literal assigned (or given as a keyword's value), or a row in one."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign, ast.keyword)) else None
        if isinstance(value, _LITERALS) and value.end_lineno and value.end_lineno > value.lineno:
            lines.add(value.end_lineno)
            items = value.keys + value.values if isinstance(value, ast.Dict) else value.elts
            lines.update(i.end_lineno for i in items if i is not None and i.end_lineno is not None)
    return lines


def misplaced(path: Path) -> list[int]:
    """The marker lines of ``path`` that are not on a table."""
    found = markers(path)
    if not found:
        return []
    tables = _table_lines(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
    return [n for n in found if n not in tables]


def _drop(path: Path, lines: list[int]) -> None:
    text = path.read_text(encoding="utf-8").split("\n")
    for n in lines:
        text[n - 1] = text[n - 1].replace("  " + MARK, "").replace(MARK, "").rstrip()
    path.write_text("\n".join(text), encoding="utf-8")


def main(argv: list[str]) -> int:
    drop = "--drop" in argv
    paths = [a for a in argv if a != "--drop"] or list(DEFAULT_PATHS)
    total = 0
    for path in _files(paths):
        bad = misplaced(path)
        total += len(bad)
        if drop and bad:
            _drop(path, bad)
        elif bad:
            print("\n".join(f"{path.relative_to(ROOT)}:{n}: {MARK} not on a table" for n in bad))
    if drop:
        print(f"removed {total} marker(s); now run `ruff format .`")
        return 0
    return 1 if total else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
