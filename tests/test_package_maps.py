"""Every package's ``__init__`` docstring maps its modules: each module and subpackage of
``src/stoprule`` is named in its package's docstring, so the tree reads from the top down."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src" / "stoprule"
PACKAGES = sorted(p.parent for p in SRC.rglob("__init__.py"))


def _members(package: Path) -> list[str]:
    """The package's modules (``name``) and subpackages (``name/``)."""
    modules = [p.stem for p in package.glob("*.py") if p.name != "__init__.py"]
    subpackages = [p.name + "/" for p in package.iterdir() if (p / "__init__.py").is_file()]
    return sorted(modules + subpackages)


def _unnamed(package: Path) -> list[str]:
    doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text(encoding="utf-8"))) or ""
    return [m for m in _members(package) if not re.search(rf"(?<![\w.]){re.escape(m.rstrip('/'))}(?:/|\b)", doc)]


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: str(p.relative_to(SRC.parent)))
def test_the_package_docstring_names_every_module(package: Path) -> None:
    assert not _unnamed(package), f"{package}/__init__.py: its docstring does not name {_unnamed(package)}"


def test_the_check_sees_a_module_that_is_not_named(tmp_path: Path) -> None:
    (tmp_path / "__init__.py").write_text('"""Modules::\n\n    alpha   the first\n    sub/    more\n"""\n')
    for name in ("alpha.py", "beta.py"):
        (tmp_path / name).write_text("")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "__init__.py").write_text("")
    assert _unnamed(tmp_path) == ["beta"]
