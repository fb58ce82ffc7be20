"""One-way layers: no import cycles in ``src/stoprule`` and no upward arrows (DESIGN.md).

The graph is read with ``ast`` by ``benchmarks/import_graph.py``: every ``import`` anywhere
in a file counts, lazy ones inside functions and ``TYPE_CHECKING`` blocks included.
"""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parent.parent


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("import_graph", REPO / "benchmarks" / "import_graph.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


ig = _load()


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return ig.module_graph(REPO / "src")


def _in(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _arrows(graph: dict[str, set[str]], src: str, dst: str) -> list[str]:
    """Arrows from package ``src`` into package ``dst`` (``src`` may be ``*``: any module outside ``dst``)."""
    return sorted(
        f"{u} -> {v}"
        for u, vs in graph.items()
        for v in vs
        if _in(v, dst) and not _in(u, dst) and (src == "*" or _in(u, src))
    )


def test_the_graph_is_read(graph: dict[str, set[str]]) -> None:
    assert "stoprule.cli.eval_cmd" in graph and "stoprule.facts.parse" in graph["stoprule.cli.eval_cmd"]
    assert "stoprule.cli.log_cmd" in graph["stoprule.cli.eval_cmd"]  # a lazy import inside a function


def test_no_import_cycles(graph: dict[str, set[str]]) -> None:
    found = ig.cycles(ig.layer_edges(graph))
    assert not found, "import cycles:\n" + "\n".join("  " + " -> ".join(c) for c in found)


def test_no_module_imports_its_own_package_init(graph: dict[str, set[str]]) -> None:
    """A package's ``__init__`` re-exports for users; inside, import from the defining module."""
    up = ig.ancestor_edges(graph)
    assert not up, "imports of an enclosing package's __init__:\n" + "\n".join(f"  {u} -> {v}" for u, v in up)


def test_cli_is_imported_only_by_the_cli(graph: dict[str, set[str]]) -> None:
    bad = [a for a in _arrows(graph, "*", "stoprule.cli") if not a.startswith("stoprule.__main__ ->")]
    assert not bad, "upward arrows into the CLI:\n  " + "\n  ".join(bad)


@pytest.mark.parametrize(
    ("src", "dst"),
    [
        ("stoprule.ledger", "stoprule.cli"),
        ("stoprule.analysis", "stoprule.cli"),
        ("stoprule.ledger", "stoprule.analysis"),
        ("stoprule.analysis", "stoprule.ledger"),
        ("stoprule.agent", "stoprule.cli"),
        ("stoprule.agent", "stoprule.ledger"),  # the CLI passes a recording function in
        ("stoprule.agent", "stoprule.analysis"),
        ("stoprule.ledger", "stoprule.agent"),
        ("stoprule.analysis", "stoprule.agent"),
        ("stoprule.serve", "stoprule.cli"),  # serve sits above agent and ledger, below the CLI
        ("stoprule.agent", "stoprule.serve"),
        ("stoprule.ledger", "stoprule.serve"),
        ("stoprule.engine", "stoprule.serve"),
    ],
)
def test_layer_rules(graph: dict[str, set[str]], src: str, dst: str) -> None:
    bad = _arrows(graph, src, dst)
    assert not bad, f"{src} must not import {dst}:\n  " + "\n  ".join(bad)


def test_the_ledger_is_imported_only_by_the_cli(graph: dict[str, set[str]]) -> None:
    bad = [a for a in _arrows(graph, "*", "stoprule.ledger") if not a.startswith(("stoprule.cli.", "stoprule.serve."))]
    assert not bad, "the evaluator, compiler and analysis do not know the ledger:\n  " + "\n  ".join(bad)


def test_the_checker_sees_lazy_cycles_and_relative_imports(tmp_path: Path) -> None:
    """The check itself: a cycle closed by a lazy relative import, and one through a package ``__init__``."""
    files = {
        "pkg/__init__.py": "from .a import A\n",
        "pkg/a.py": "from . import b\nA = 1\n",
        "pkg/b.py": "def f():\n    from .sub.c import C\n",
        "pkg/sub/__init__.py": "",
        "pkg/sub/c.py": "TYPE_CHECKING = False\nif TYPE_CHECKING:\n    from ..a import A\nC = 1\n",
        "pkg/d.py": "from pkg import A\n",  # into its own package's __init__, which does not import d: no cycle
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(textwrap.dedent(text))
    g = ig.module_graph(tmp_path)
    assert g["pkg.a"] == {"pkg.b"} and g["pkg.b"] == {"pkg.sub.c"} and g["pkg.d"] == {"pkg"}
    assert ig.cycles(ig.layer_edges(g)) == [["pkg.a", "pkg.b", "pkg.sub.c", "pkg.a"]]
    assert ig.ancestor_edges(g) == [("pkg.d", "pkg")]
