"""The import graph of ``src/stoprule`` and its rules, read with ``ast`` (standard library only).

    python tools/import_graph.py [SRC]     # SRC defaults to this checkout's src/; exit 1 on a violation

Every ``import`` and ``from ... import`` anywhere in a file counts (lazy imports inside
functions and ``if TYPE_CHECKING:`` blocks included); relative imports are resolved, and
``from pkg import name`` points at ``pkg.name`` when that is a module, else at ``pkg``.
``importlib.import_module("a.b")`` with a literal name counts as an import of ``a.b``; with a
computed name it is a violation (the graph could not see it), except in :data:`DYNAMIC_OK`.

The rules (``tests/test_import_graph.py`` runs them):

- no cycle between modules (edges into an enclosing package's ``__init__`` ignored: Python
  runs a package's ``__init__`` before any of its modules anyway) and none between packages;
- layers, lowest first (:data:`LAYERS`): the base modules and ``_util`` < ``facts`` <
  ``language`` < ``config``, ``engine`` < ``analysis``, ``ledger`` < ``agent`` < ``console`` < ``serve``
  < ``cli``; a
  module imports only lower layers and its own (so ``language`` imports no ``engine``, nothing
  below the CLI imports it, ``analysis`` and ``ledger`` do not know each other);
- ``agent`` is a leaf below the CLI: it imports neither ``analysis`` nor ``ledger`` (the CLI
  passes a recording function in), and only the layers above it import it;
- no module imports an enclosing package's ``__init__`` (it re-exports for users);
- every module of :data:`COLD_PATH` (what the stop hook and ``stoprule eval`` load on a warm
  run) says so in its docstring: there, and only there, imports are kept lazy and heavy
  libraries out (``tests/test_cold_path.py`` checks the list against a fresh interpreter);
- no module of the cold path imports ``os`` (it costs a hook's start ~1.1 ms): it imports
  ``stoprule._util.oslite`` as ``os`` instead, except the modules of :data:`OS_OK`;
- an import inside a function (a local import) is for the cold path only (:data:`COLD_PATH`,
  and :data:`COLD_PATH_WHEN`: the hook's modules in other set-ups): any other module
  imports at its top, except the libraries of :data:`LAZY_OK` (optional extras, and heavy
  ones a command needs on one of its paths).
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable
from functools import cache
from pathlib import Path

__all__ = [
    "COLD_PATH",
    "COLD_PATH_WHEN",
    "LAYERS",
    "ancestor_edges",
    "cycles",
    "dynamic_imports",
    "layer",
    "layer_edges",
    "local_imports",
    "module_graph",
    "package_graph",
    "violations",
]

Graph = dict[str, set[str]]

SRC = Path(__file__).resolve().parent.parent / "src"
ROOT = "stoprule"

#: layer -> rank; a module may import its own layer and lower ranks only (equal ranks: neither way)
LAYERS: dict[str, int] = {
    "base": 0,  # codes, diagnostic, diagnostics, limits, project, version, _util
    "facts": 1,
    "language": 2,
    "config": 3,
    "engine": 3,
    "analysis": 4,
    "ledger": 4,
    "agent": 5,
    "console": 6,  # the web console: reads the ledger, the agent's blockers and the analysis; serve mounts it
    "serve": 7,
    "cli": 8,
    "top": 9,  # stoprule/__init__.py (the public API), __main__.py and launch.py (what init wires)
}
BASE = ("codes", "diagnostic", "diagnostics", "limits", "project", "version", "_util")
#: layers ``agent`` may import (a leaf below the CLI: no analysis, no ledger)
AGENT_IMPORTS = ("base", "facts", "language", "config", "engine", "agent")
#: the only module that may import a computed module name: the CLI's command table
DYNAMIC_OK = ("stoprule.cli.main",)
MARK = "cold path"  # what a cold-path module's docstring says
#: what a module off the cold path may still import inside a function: optional extras (absent
#: unless installed) and heavy libraries a command needs on one of its paths only
LAZY_OK: dict[str, str] = {
    "mcp": "the `mcp` extra (stoprule mcp)",
    "stoprule.agent.blockers.mcp": "the MCP server, which imports the `mcp` extra",
    "stoprule.serve.run": "the decision service, which imports the `serve` extra",
    "starlette": "the `serve` extra",
    "uvicorn": "the `serve` extra",
    "psycopg": "the `postgres` extra (a postgresql:// ledger)",
    "detect_secrets": "the `postgres` extra's optional plugin",
    "stoprule.engine._speedups": "the optional C accelerator (built where a compiler is)",
    "cvc5": "the solver: audit and diff on packs the exhaustive analysis cannot cover",
    "rich": "colour, tables and progress bars, on a terminal only",
    "ruamel": "stoprule fmt's comment-keeping YAML round trip",
    "resource": "the process limits, on Unix only",
    "jinja2": "the `serve` and `console` extras (the console's pages)",
    "stoprule.console.app": "the console's application, which imports starlette and jinja2",
    "stoprule.console.access": "the console's sign-in, which imports starlette",
}
#: packages whose local imports are not checked yet (others are reworking them)
LAZY_UNCHECKED: tuple[str, ...] = ()

#: Every stoprule module a warm ``stoprule hook HARNESS`` (each harness; a project as ``stoprule
#: init`` leaves it: the ledger on, every provider) and a warm ``stoprule eval`` import; nothing
#: else may join them there (tests/test_cold_path.py). Each says so in its docstring.
COLD_PATH: tuple[str, ...] = (
    "stoprule",
    "stoprule._util",
    "stoprule._util.cache",
    "stoprule._util.command",
    "stoprule._util.files",
    "stoprule._util.gcpause",
    "stoprule._util.jsonin",
    "stoprule._util.jsonout",
    "stoprule._util.native",
    "stoprule._util.oslite",
    "stoprule._util.pathlite",
    "stoprule._util.records",
    "stoprule._util.redact",
    "stoprule._util.redact_core",
    "stoprule._util.regex",
    "stoprule._util.regular",
    "stoprule._util.tagged",
    "stoprule._util.text",
    "stoprule.agent",
    "stoprule.agent.guard",
    "stoprule.agent.guard.journal",
    "stoprule.agent.hook",
    "stoprule.agent.hook.adapters",
    "stoprule.agent.hook.adapters._common",
    "stoprule.agent.hook.adapters.claude_code",
    "stoprule.agent.hook.adapters.codex",
    "stoprule.agent.hook.adapters.copilot",
    "stoprule.agent.hook.adapters.cursor",
    "stoprule.agent.hook.adapters.gemini",
    "stoprule.agent.hook.event",
    "stoprule.agent.hook.frozen",
    "stoprule.agent.hook.mode",
    "stoprule.agent.hook.pack_data",
    "stoprule.agent.hook.providers",
    "stoprule.agent.hook.providers._turn",
    "stoprule.agent.hook.providers.blockers_provider",
    "stoprule.agent.hook.providers.closure_provider",
    "stoprule.agent.hook.providers.context",
    "stoprule.agent.hook.providers.git_provider",
    "stoprule.agent.hook.providers.guard_provider",
    "stoprule.agent.hook.providers.hook_provider",
    "stoprule.agent.hook.providers.state_provider",
    "stoprule.agent.hook.providers.transcript_provider",
    "stoprule.agent.hook.questions",
    "stoprule.agent.hook.runner",
    "stoprule.agent.hook.state",
    "stoprule.agent.hook.transcripts",
    "stoprule.agent.hook.transcripts._common",
    "stoprule.agent.hook.transcripts.scan",
    "stoprule.cli",
    "stoprule.cli.common",
    "stoprule.cli.eval_cmd",
    "stoprule.cli.flags",
    "stoprule.cli.hook_cmd",
    "stoprule.cli.main",
    "stoprule.cli.output",
    "stoprule.cli.parsing",
    "stoprule.cli.resident",
    "stoprule.codes",
    "stoprule.config",
    "stoprule.config.defaults",
    "stoprule.config.fields",
    "stoprule.config.freeze",
    "stoprule.config.reader",
    "stoprule.config.source",
    "stoprule.diagnostics",
    "stoprule.engine",
    "stoprule.engine.batches",
    "stoprule.engine.compiled",
    "stoprule.engine.durable",
    "stoprule.engine.evaluator",
    "stoprule.engine.packs",
    "stoprule.engine.projection",
    "stoprule.engine.verdict",
    "stoprule.facts",
    "stoprule.facts.batch",
    "stoprule.facts.parse",
    "stoprule.facts.schema",
    "stoprule.language",
    "stoprule.language.files",
    "stoprule.language.templates",
    "stoprule.ledger",
    "stoprule.ledger.errors",
    "stoprule.ledger.journal",
    "stoprule.limits",
    "stoprule.project",
    "stoprule.version",
)


#: Modules the hook loads in other set-ups than the one COLD_PATH is measured in (and when): they
#: keep their imports lazy too, and say so in their docstrings.
COLD_PATH_WHEN: dict[str, str] = {
    "stoprule.agent.blockers.facts": "the agent has logged blockers",
    "stoprule.agent.blockers.procs": "a session starts (its MCP server is linked to it)",
    "stoprule.agent.blockers.store": "the agent has logged blockers",
    "stoprule.agent.hook.adapters.antigravity": "the hook runs for Antigravity CLI",
    "stoprule.agent.hook.freezing": "a session starts (without a session-start hook: its first stop)",
    "stoprule.agent.hook.lifecycle": "a session starts, a permission is requested",
    "stoprule.agent.hook.providers.git_baseline": "a session starts (the git provider's baseline)",
    "stoprule.agent.hook.question_patterns": "the pack's question patterns are not in the cache yet",
    "stoprule.agent.hook.remote": "the project asks a decision server",
    "stoprule.agent.hook.transcripts.antigravity": "the hook reads new records of an Antigravity transcript",
    "stoprule.agent.hook.transcripts.claude": "the hook reads new records of a Claude Code transcript",
    "stoprule.agent.hook.transcripts.codex": "the hook reads new records of a Codex rollout",
    "stoprule.agent.hook.transcripts.copilot": "the hook reads new records of a Copilot CLI transcript",
    "stoprule.agent.hook.transcripts.cursor": "the hook reads new records of a Cursor transcript",
    "stoprule.agent.hook.transcripts.gemini": "the hook reads new records of a Gemini CLI chat",
    "stoprule.launch": "a harness runs the command `stoprule init` wired (the launcher runs as the script)",
    "stoprule._util.launcher": "a harness runs the command `stoprule init` wired (the launcher's start)",
    "stoprule._util.redact_judge": "a text the hook writes holds a candidate secret (its pre-scan found one)",
    "stoprule.cli.resident_wire": "a resident process listens (the hook's client asks it), `hook.resident: true`",
    "stoprule.diagnostic": "a pack or config file the hook loads has a mistake (its diagnostics)",
    "stoprule.ledger.backend": "the hook records to a PostgreSQL ledger (ledger.url)",
    "stoprule.ledger.ddl": "the hook records to a PostgreSQL ledger (ledger.url)",
    "stoprule.ledger.events": "the hook records to a PostgreSQL ledger (ledger.url)",
    "stoprule.ledger.keys": "the hook records to a PostgreSQL ledger (ledger.url)",
    "stoprule.ledger.recorder": "the hook records to a PostgreSQL ledger (ledger.url)",
    "stoprule.ledger.sha": "the hook records to a PostgreSQL ledger (ledger.url)",
    "stoprule.ledger.store": "the hook records to a PostgreSQL ledger (ledger.url)",
    "stoprule.ledger.tokens": "the hook records to a PostgreSQL ledger (ledger.url)",
    # the guard: before every tool call (its own entry, benchmarks/bench_guard.py)
    "stoprule.agent.guard.calls": "the guard runs",
    "stoprule.agent.guard.rules": "the guard runs",
    "stoprule.agent.guard.run": "the guard runs",
    "stoprule.agent.guard.shell": "the guard runs",
}


#: Modules of the cold path that may import ``os``: the module standing in for it, those whose
#: other imports (an HTTP client, PostgreSQL's driver) import it anyway, and the launcher's script
#: (``posixpath`` for a start by a path that is not absolute and normal, as init writes it).
OS_OK: tuple[str, ...] = (
    "stoprule._util.oslite",
    "stoprule._util.pathlite",
    "stoprule.launch",
    "stoprule.agent.hook.remote",
    "stoprule.ledger.backend",
    "stoprule.ledger.ddl",
    "stoprule.ledger.events",
    "stoprule.ledger.keys",
    "stoprule.ledger.recorder",
    "stoprule.ledger.sha",
    "stoprule.ledger.store",
    "stoprule.ledger.tokens",
)


@cache
def _parse(path: Path, mtime_ns: int) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _tree(path: Path) -> ast.Module:
    """The file's syntax tree (parsed once per version of the file)."""
    return _parse(path, path.stat().st_mtime_ns)


def _modules(src: Path) -> dict[str, Path]:
    mods: dict[str, Path] = {}
    for path in sorted(src.rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        mods[".".join(parts)] = path
    return mods


def _import_calls(tree: ast.AST) -> Iterable[ast.Call]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            if name in ("import_module", "__import__"):
                yield node


def _literal(call: ast.Call) -> str | None:
    """The module a call imports, when its name is a literal absolute name."""
    if call.args and isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str):
        name = call.args[0].value
        return None if name.startswith(".") else name
    return None


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
    for call in _import_calls(tree):
        name = _literal(call)
        if name in known:
            out.add(name)
    out.discard(module)
    return out


def module_graph(src: Path = SRC) -> Graph:
    """Module name -> the modules of the same tree it imports (anywhere in the file)."""
    mods = _modules(src)
    graph: Graph = {}
    for name, path in mods.items():
        graph[name] = _targets(_tree(path), name, path.name == "__init__.py", mods)
    return graph


def dynamic_imports(src: Path = SRC) -> list[str]:
    """``module:line`` of each ``import_module``/``__import__`` whose name is computed (sorted)."""
    found = []
    for name, path in _modules(src).items():
        found += [f"{name}:{call.lineno}" for call in _import_calls(_tree(path)) if _literal(call) is None]
    return sorted(found)


def cold_path_docstrings(src: Path = SRC) -> list[str]:
    """Modules of :data:`COLD_PATH` whose docstring does not say they are on the cold path, or
    that do not exist (sorted)."""
    mods = _modules(src)
    bad = []
    for name in (*COLD_PATH, *COLD_PATH_WHEN):
        path = mods.get(name)
        doc = ast.get_docstring(_tree(path)) if path else None
        if not doc or MARK not in " ".join(doc.split()):
            bad.append(name)
    return bad


def cold_path_os(src: Path = SRC) -> list[str]:
    """``module:line`` of each import of ``os`` (or ``posixpath``) by a module of the cold path that
    :data:`OS_OK` does not allow: ``os`` costs a hook's start ~1.1 ms; the cold path imports
    ``stoprule._util.oslite`` as ``os`` instead (sorted)."""
    mods = _modules(src)
    found = []
    for name in (*COLD_PATH, *COLD_PATH_WHEN):
        path = mods.get(name)
        if path is None or name in OS_OK:
            continue
        for node in ast.walk(_tree(path)):
            if any(t.partition(".")[0] in ("os", "posixpath") for t in _absolute_imports(node)):
                found.append(f"{name}:{node.lineno}")
    return sorted(found)


def _absolute_imports(node: ast.AST) -> list[str]:
    """The modules an ``import``/``from ... import`` statement names (none for a relative one)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if isinstance(node, ast.ImportFrom) and not node.level:
        return [node.module or ""]
    return []


def local_imports(src: Path = SRC) -> list[str]:
    """``module:line: name`` of each import inside a function of a module off the cold path
    that :data:`LAZY_OK` does not allow (sorted)."""
    cold = set(COLD_PATH) | set(COLD_PATH_WHEN)
    found = []
    for name, path in _modules(src).items():
        if name in cold or name.startswith(LAZY_UNCHECKED):
            continue
        for fn in ast.walk(_tree(path)):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                for target in _absolute_imports(node):
                    if not any(target == ok or target.startswith(ok + ".") for ok in LAZY_OK):
                        found.append(f"{name}:{node.lineno}: {target}")
    return sorted(set(found))


def layer(module: str) -> str:
    """The layer of a module: ``base``, ``top``, or its subpackage's name."""
    parts = module.split(".")
    if len(parts) == 1 or parts[1] in ("__main__", "launch"):
        return "top"
    return "base" if parts[1] in BASE else parts[1]


def package_graph(graph: Graph) -> Graph:
    """Layer -> the other layers its modules import."""
    out: Graph = {layer(u): set() for u in graph}
    for u, vs in graph.items():
        out[layer(u)].update(layer(v) for v in vs if layer(v) != layer(u))
    return out


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
            work = [iter(sorted(graph.get(start, set()) & allowed))]
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
                    work.append(iter(sorted(graph.get(nxt, set()) & allowed)))
    return out


def layer_violations(graph: Graph) -> list[str]:
    """Arrows against the layers: upward or sideways, and ``agent`` importing above its leaf set."""
    bad = []
    for u, vs in sorted(graph.items()):
        lu = layer(u)
        for v in sorted(vs):
            lv = layer(v)
            if lu == lv:
                continue
            if lu not in LAYERS or lv not in LAYERS:
                bad.append(f"{u} -> {v}: {lu if lu not in LAYERS else lv} is not a known layer (add it to LAYERS)")
            elif LAYERS[lv] >= LAYERS[lu]:
                bad.append(f"{u} -> {v}: {lu} may not import {lv}")
            elif lu == "agent" and lv not in AGENT_IMPORTS:
                bad.append(f"{u} -> {v}: agent is a leaf below the CLI: it may not import {lv}")
    return bad


def violations(src: Path = SRC) -> list[str]:
    """Every rule broken, one line each (empty: all kept)."""
    graph = module_graph(src)
    out = [f"module cycle: {' -> '.join(c)}" for c in cycles(layer_edges(graph))]
    out += [f"package cycle: {' -> '.join(c)}" for c in cycles(package_graph(graph))]
    out += [f"layers: {v}" for v in layer_violations(graph)]
    out += [f"imports its enclosing package's __init__: {u} -> {v}" for u, v in ancestor_edges(graph)]
    out += [
        f"computed import (use a plain import): {d}"
        for d in dynamic_imports(src)
        if d.partition(":")[0] not in DYNAMIC_OK
    ]
    out += [f"cold path: {m}: its docstring must say it is on the {MARK}" for m in cold_path_docstrings(src)]
    out += [f"cold path: {m}: imports os (import stoprule._util.oslite as os)" for m in cold_path_os(src)]
    out += [f"local import off the cold path (import at the top): {m}" for m in local_imports(src)]
    return out


def main(argv: list[str]) -> int:
    src = Path(argv[0]) if argv else SRC
    graph = module_graph(src)
    arrows = sum(len(vs) for vs in graph.values())
    print(f"{src}: {len(graph)} modules, {arrows} arrows, {len(COLD_PATH)} on the cold path")
    packages = package_graph(graph)
    for name in sorted(packages, key=lambda p: (LAYERS.get(p, -1), p)):
        print(f"  {name} ({LAYERS.get(name, '?')}) -> {', '.join(sorted(packages[name])) or '-'}")
    found = violations(src)
    print(f"violations: {len(found)}")
    for line in found:
        print("  " + line)
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
