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


# --- the tiers (pyproject.toml's markers): what the default run leaves out, CI runs ------------

PYPROJECT = (REPO / "pyproject.toml").read_text(encoding="utf-8")
CI = (REPO / ".ci" / "run").read_text(encoding="utf-8")
_DESELECTED = re.compile(r"not (\w+)")
ON_DEMAND = {"slow"}  # the one tier CI does not run (pyproject.toml says how to run it)
#: folders of tests/ that are a tier of their own, not an area of the default run
OWN_TIER = {"fixtures", "harness"}


def _default_selection() -> str:
    found = re.search(r"""^addopts = ".*?-m '([^']*)'""", PYPROJECT, re.M)
    assert found, "pyproject.toml's addopts has no -m"
    return found[1]


def test_every_tier_left_out_by_default_is_run_by_ci() -> None:
    tiers = set(_DESELECTED.findall(_default_selection()))
    assert {"torture", "integration"} <= tiers
    for tier in tiers - ON_DEMAND:
        assert re.search(rf"-m pytest -m '?{tier}\b", CI), f".ci/run does not run `pytest -m {tier}`"
        assert re.search(rf'"{tier}: [^"]*run by \.ci/run', PYPROJECT), f"pyproject.toml's {tier} marker"


def _marks(decorators: list[ast.expr]) -> set[str]:
    """The ``pytest.mark.NAME`` names among a function's decorators (called or not)."""
    out = set()
    for d in decorators:
        node = d.func if isinstance(d, ast.Call) else d
        if isinstance(node, ast.Attribute) and ast.unparse(node.value) == "pytest.mark":
            out.add(node.attr)
    return out


def _default_tests(path: Path) -> list[str]:
    """The test functions of a module no tier marker takes out of the default run (a table's
    cases marked one by one still leave their function in it)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    tiers = set(_DESELECTED.findall(_default_selection()))
    module = {
        ast.unparse(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets)
    }
    if any(f"pytest.mark.{tier}" in m for m in module for tier in tiers):
        return []
    return [
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.name.startswith("test_")
        and not _marks(node.decorator_list) & tiers
    ]


AREAS = sorted({p.name for p in TESTS.iterdir() if p.is_dir() and any(p.rglob("test_*.py"))} - OWN_TIER)


@pytest.mark.parametrize("area", AREAS)
def test_each_area_keeps_tests_in_the_default_run(area: str) -> None:
    kept = [name for path in sorted((TESTS / area).rglob("test_*.py")) for name in _default_tests(path)]
    assert len(kept) >= 3, f"tests/{area}: a newcomer's run exercises it (keep a fast representative)"


def test_the_tier_rules_see_what_they_read(tmp_path: Path) -> None:
    path = tmp_path / "test_x.py"
    path.write_text(
        "import pytest\n@pytest.mark.integration\ndef test_a(): pass\n"
        "@pytest.mark.parametrize('x', [1])\ndef test_b(x): pass\n"
    )
    assert _default_tests(path) == ["test_b"]
    path.write_text("import pytest\npytestmark = pytest.mark.integration\ndef test_a(): pass\n")
    assert _default_tests(path) == []
