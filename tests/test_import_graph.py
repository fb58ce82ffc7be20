"""One-way layers in ``src/stoprule``: the rules of ``tools/import_graph.py`` (its docstring
lists them), each a test, and the checker itself on small trees made to break them."""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parent.parent


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("import_graph", REPO / "tools" / "import_graph.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


ig = _load()
SRC = REPO / "src"


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return ig.module_graph(SRC)


def _lines(found: list) -> str:
    return "\n  " + "\n  ".join(" -> ".join(x) if isinstance(x, (list, tuple)) else str(x) for x in found)


def test_the_graph_is_read(graph: dict[str, set[str]]) -> None:
    assert "stoprule.cli.eval_cmd" in graph and "stoprule.facts.parse" in graph["stoprule.cli.eval_cmd"]
    assert "stoprule.cli.log_cmd" in graph["stoprule.cli.eval_cmd"]  # a lazy import inside a function
    assert set(ig.package_graph(graph)) <= set(ig.LAYERS), "a new package: give it a layer in tools/import_graph.py"


def test_no_module_cycles(graph: dict[str, set[str]]) -> None:
    found = ig.cycles(ig.layer_edges(graph))
    assert not found, "import cycles between modules:" + _lines(found)


def test_no_package_cycles(graph: dict[str, set[str]]) -> None:
    found = ig.cycles(ig.package_graph(graph))
    assert not found, "import cycles between packages:" + _lines(found)


def test_each_layer_imports_only_lower_layers(graph: dict[str, set[str]]) -> None:
    """language imports no engine; analysis and ledger do not know each other; agent is a leaf
    below the CLI (no analysis, no ledger); nothing below the CLI imports it."""
    found = ig.layer_violations(graph)
    assert not found, "arrows against the layers:" + _lines(found)


def test_no_module_imports_its_own_package_init(graph: dict[str, set[str]]) -> None:
    """A package's ``__init__`` re-exports for users; inside, import from the defining module."""
    found = ig.ancestor_edges(graph)
    assert not found, "imports of an enclosing package's __init__:" + _lines(found)


def test_no_import_by_a_computed_name() -> None:
    """The graph sees every dependency: ``import_module`` with a computed name only in the CLI's command table."""
    found = [d for d in ig.dynamic_imports(SRC) if d.partition(":")[0] not in ig.DYNAMIC_OK]
    assert not found, "computed imports (use a plain import or an explicit table of imports):" + _lines(found)


def test_cold_path_modules_say_so() -> None:
    found = ig.cold_path_docstrings(SRC)
    assert not found, f"modules of COLD_PATH whose docstring does not say '{ig.MARK}':" + _lines(found)


@pytest.mark.torture  # the whole tool again (.ci/run runs it too); each of its checks has its own test above
def test_the_tool_exits_0_on_this_tree(capsys: pytest.CaptureFixture[str]) -> None:
    assert ig.main([str(SRC)]) == 0, capsys.readouterr().out
    assert "violations: 0" in capsys.readouterr().out


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(textwrap.dedent(text))
    return tmp_path


def test_the_checker_sees_lazy_cycles_and_relative_imports(tmp_path: Path) -> None:
    """A cycle closed by a lazy relative import, and one through a package ``__init__``."""
    g = ig.module_graph(
        _tree(
            tmp_path,
            {
                "pkg/__init__.py": "from .a import A\n",
                "pkg/a.py": "from . import b\nA = 1\n",
                "pkg/b.py": "def f():\n    from .sub.c import C\n",
                "pkg/sub/__init__.py": "",
                "pkg/sub/c.py": "TYPE_CHECKING = False\nif TYPE_CHECKING:\n    from ..a import A\nC = 1\n",
                "pkg/d.py": "from pkg import A\n",  # into its own package's __init__, which does not import d: no cycle
            },
        )
    )
    assert g["pkg.a"] == {"pkg.b"} and g["pkg.b"] == {"pkg.sub.c"} and g["pkg.d"] == {"pkg"}
    assert ig.cycles(ig.layer_edges(g)) == [["pkg.a", "pkg.b", "pkg.sub.c", "pkg.a"]]
    assert ig.ancestor_edges(g) == [("pkg.d", "pkg")]


def test_the_checker_sees_package_cycles_layers_and_computed_imports(tmp_path: Path) -> None:
    """Two packages importing each other through different modules (no module cycle), an upward
    arrow, agent importing the ledger, a literal ``import_module`` (an arrow) and a computed one."""
    src = _tree(
        tmp_path,
        {
            "stoprule/__init__.py": "",
            "stoprule/agent/__init__.py": "",
            "stoprule/agent/a.py": "from stoprule.ledger import store\n",
            "stoprule/agent/b.py": "",
            "stoprule/ledger/__init__.py": "",
            "stoprule/ledger/store.py": "",
            "stoprule/ledger/c.py": "import importlib\nimportlib.import_module('stoprule.agent.b')\n",
            "stoprule/language/__init__.py": "",
            "stoprule/language/x.py": "import importlib\nM = importlib.import_module('.y', 'stoprule.language')\n"
            "def f():\n    from stoprule.engine import e\n",
            "stoprule/engine/__init__.py": "",
            "stoprule/engine/e.py": "",
        },
    )
    g = ig.module_graph(src)
    assert g["stoprule.ledger.c"] == {"stoprule.agent.b"}
    assert ig.cycles(ig.layer_edges(g)) == []
    assert ig.cycles(ig.package_graph(g)) == [["agent", "ledger", "agent"]]
    assert ig.layer_violations(g) == [
        "stoprule.agent.a -> stoprule.ledger.store: agent is a leaf below the CLI: it may not import ledger",
        "stoprule.language.x -> stoprule.engine.e: language may not import engine",
        "stoprule.ledger.c -> stoprule.agent.b: ledger may not import agent",
    ]
    assert ig.dynamic_imports(src) == ["stoprule.language.x:2"]
    assert any(v.startswith("package cycle: agent -> ledger") for v in ig.violations(src))


def test_no_local_import_off_the_cold_path() -> None:
    assert ig.local_imports(SRC) == []


def test_the_checker_sees_a_local_import_off_the_cold_path(tmp_path: Path) -> None:
    """A function-level import in a module off the cold path is flagged, unless it is a library
    of LAZY_OK; on a cold-path module it is the point."""
    src = _tree(
        tmp_path,
        {
            "stoprule/__init__.py": "",
            "stoprule/analysis/__init__.py": "",
            "stoprule/analysis/a.py": "def f():\n    import json\n    import cvc5\n    from rich.table import Table\n",
            "stoprule/engine/__init__.py": "",
            "stoprule/engine/packs.py": "def f():\n    from stoprule.engine import build\n",
        },
    )
    assert ig.local_imports(src) == ["stoprule.analysis.a:2: json"]


def test_no_cold_path_module_imports_os() -> None:
    assert ig.cold_path_os(SRC) == []


def test_the_checker_sees_os_on_the_cold_path(tmp_path: Path) -> None:
    """``import os``, ``from os import`` and ``import posixpath`` in a module of the cold path are
    flagged, at the top or in a function; off the cold path, and in the modules of OS_OK, they are not."""
    src = _tree(
        tmp_path,
        {
            "stoprule/__init__.py": "import os\n",
            "stoprule/project.py": "def f():\n    from os import path\n",
            "stoprule/limits.py": "import posixpath\n",
            "stoprule/version.py": "from stoprule._util import oslite as os\n",
            "stoprule/_util/__init__.py": "",
            "stoprule/_util/oslite.py": "import os\n",
            "stoprule/analysis/__init__.py": "import os\n",
        },
    )
    assert ig.cold_path_os(src) == ["stoprule.limits:1", "stoprule.project:2", "stoprule:1"]
