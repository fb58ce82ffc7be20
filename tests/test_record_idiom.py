"""One record idiom (``_util/records.py`` states the rule): frozen dataclasses, and ``@record``
only in the modules of the cold path; no NamedTuple or TypedDict."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SRC = REPO / "src"
sys.path.insert(0, str(REPO / "tools"))
from import_graph import COLD_PATH, COLD_PATH_WHEN, _modules  # noqa: E402

MODULES = _modules(SRC)
# off the cold path, still to move to frozen dataclasses
PENDING: set[str] = set()


def _decorators(tree: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for d in node.decorator_list:
                target = d.func if isinstance(d, ast.Call) else d
                names.add(target.id if isinstance(target, ast.Name) else getattr(target, "attr", ""))
    return names


def _bases(tree: ast.AST) -> set[str]:
    return {
        b.id if isinstance(b, ast.Name) else getattr(b, "attr", "")
        for n in ast.walk(tree)
        if isinstance(n, ast.ClassDef)
        for b in n.bases
    }


@pytest.mark.parametrize("module", sorted(MODULES))
def test_records_follow_the_rule(module: str) -> None:
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    assert not _bases(tree) & {"NamedTuple", "TypedDict"}, f"{module}: use a frozen dataclass"
    if "record" in _decorators(tree):
        assert module in COLD_PATH or module in COLD_PATH_WHEN, (
            f"{module}: @record is for the cold path only; use @dataclass(frozen=True)"
        )


def test_the_rule_sees_a_record_off_the_cold_path() -> None:
    tree = ast.parse("@record\nclass A:\n    x: int\n\n\nclass B(NamedTuple):\n    y: int\n")
    assert "record" in _decorators(tree) and "NamedTuple" in _bases(tree)
