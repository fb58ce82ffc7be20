"""The import graph of ``src/stoprule``, read with ``ast``: modules, arrows, cycles.

    python benchmarks/import_graph.py [SRC]      # SRC defaults to this checkout's src/

Every ``import`` and ``from ... import`` anywhere in a file counts (lazy imports inside
functions and ``if TYPE_CHECKING:`` blocks included); relative imports are resolved, and
``from pkg import name`` points at ``pkg.name`` when that is a module, else at ``pkg``.

Two counts of cycles are printed:

- *layer cycles*: edges from a module into an enclosing package's ``__init__`` are
  ignored (Python runs a package's ``__init__`` before any of its modules anyway), as
  ``../shared/hooks/before-stop`` does;
- *all cycles*: every edge counts, so ``from .. import __version__`` inside a package
  whose ``__init__`` imports the module back is a cycle too.

``tests/test_import_graph.py`` imports :func:`module_graph` and :func:`cycles` from here.
Stdlib only.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable
from pathlib import Path

__all__ = ["ancestor_edges", "cycles", "layer_edges", "module_graph"]

Graph = dict[str, set[str]]

SRC = Path(__file__).resolve().parent.parent / "src"


def _modules(src: Path) -> dict[str, Path]:
    mods: dict[str, Path] = {}
    for path in sorted(src.rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        mods[".".join(parts)] = path
    return mods


def _targets(tree: ast.AST, module: str, is_package: bool, mods: Iterable[str]) -> set[str]:
    known = set(mods)
    package = module if is_package else module.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name in known)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - (node.level - 1)]
                base = ".".join(parts + ([base] if base else []))
            for alias in node.names:
                for candidate in (f"{base}.{alias.name}", base):
                    if candidate in known:
                        out.add(candidate)
                        break
    out.discard(module)
    return out


def module_graph(src: Path = SRC) -> Graph:
    """Module name -> the modules of the same tree it imports (anywhere in the file)."""
    mods = _modules(src)
    graph: Graph = {}
    for name, path in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        graph[name] = _targets(tree, name, path.name == "__init__.py", mods)
    return graph


def _is_ancestor(package: str, module: str) -> bool:
    return module.startswith(package + ".")


def layer_edges(graph: Graph) -> Graph:
    """The graph without edges from a module into an enclosing package's ``__init__``."""
    return {u: {v for v in vs if not _is_ancestor(v, u)} for u, vs in graph.items()}


def ancestor_edges(graph: Graph) -> list[tuple[str, str]]:
    """Edges from a module into an enclosing package's ``__init__`` (sorted)."""
    return sorted((u, v) for u, vs in graph.items() for v in vs if _is_ancestor(v, u))


def _components(graph: Graph) -> list[list[str]]:
    """Strongly connected components (Tarjan, iterative), each sorted; singletons without a self-loop dropped."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                if len(comp) > 1 or node in graph.get(node, ()):
                    found.append(sorted(comp))
    return sorted(found)


def cycles(graph: Graph, limit: int = 1000) -> list[list[str]]:
    """Elementary cycles, each as ``[a, b, ..., a]`` starting at its smallest module (at most ``limit``)."""
    out: list[list[str]] = []
    for comp in _components(graph):
        members = set(comp)
        for start in comp:  # cycles whose smallest member is ``start``
            allowed = {m for m in members if m >= start}
            path = [start]
            work = [iter(sorted(graph[start] & allowed))]
            while work:
                nxt = next(work[-1], None)
                if nxt is None:
                    work.pop()
                    path.pop()
                    continue
                if nxt == start:
                    out.append([*path, start])
                    if len(out) >= limit:
                        return out
                elif nxt not in path:
                    path.append(nxt)
                    work.append(iter(sorted(graph[nxt] & allowed)))
    return out


def main(argv: list[str]) -> int:
    src = Path(argv[0]) if argv else SRC
    graph = module_graph(src)
    arrows = sum(len(vs) for vs in graph.values())
    print(f"{src}: {len(graph)} modules, {arrows} arrows")
    for title, g in (("layer cycles (edges into an enclosing package's __init__ ignored)", layer_edges(graph)),
                     ("all cycles (every edge)", graph)):  # fmt: skip
        found = cycles(g)
        print(f"{title}: {len(found)}")
        for c in found:
            print("  " + " -> ".join(c))
    up = ancestor_edges(graph)
    print(f"imports of an enclosing package's __init__: {len(up)}")
    for u, v in up:
        print(f"  {u} -> {v}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
