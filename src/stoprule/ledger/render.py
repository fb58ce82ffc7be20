"""Showing a run: its status line, its DAG as an indented tree, as JSON, or as a Mermaid flowchart.

The tree indents only where the DAG branches: a chain of decisions stays in one column
however long it is, and each extra child of a node opens a ``├─``/``└─`` branch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from stoprule.ledger.store import Node, RunStatus

__all__ = ["node_line", "run_json", "run_mermaid", "run_tree", "runs_table", "status_line"]


def _block(kind: str, retryable: bool) -> str:
    if kind != "blocked_attempt":
        return kind
    return f"{kind} ({'retryable' if retryable else 'terminal'})"


def status_line(st: RunStatus) -> str:
    """One run's status in one line."""
    mark = "ok" if st.ok else "NOT OK"
    return (
        f"run {st.run}: tip {st.tip} {_block(st.tip_kind, st.retryable)}, {mark}: {st.verdict} / {st.reason}; "
        f"{st.decisions} decisions, {st.blocked} blocked, attempt {st.attempt}; updated {st.updated}"
    )


def node_line(n: Node) -> str:
    """One node: id, kind, verdict, attempt and what it retried."""
    extra = f", attempt {n.attempt}" if n.attempt > 1 or n.kind == "blocked_attempt" else ""
    retry = f", retry of {n.retry_of}" if n.retry_of else ""
    return f"{n.node} {_block(n.kind, n.retryable)}: {n.verdict} / {n.reason}{extra}{retry}  [{n.body['at']}]"


def _children(nodes: Sequence[Node]) -> tuple[list[Node], dict[str, list[Node]]]:
    roots: list[Node] = []
    kids: dict[str, list[Node]] = {}
    for n in nodes:
        if n.parent is None:
            roots.append(n)
        else:
            kids.setdefault(n.parent, []).append(n)
    return roots, kids


def run_tree(st: RunStatus, nodes: Sequence[Node]) -> str:
    """The run's DAG as an indented tree (iterative: any depth)."""
    roots, kids = _children(nodes)
    lines = [status_line(st)]
    # stack of (node, prefix for its first line, prefix for the lines under it)
    stack: list[tuple[Node, str, str]] = [(n, "", "") for n in reversed(roots)]
    while stack:
        node, first, rest = stack.pop()
        lines.append(first + node_line(node))
        children = kids.get(node.node, [])
        if len(children) == 1:
            stack.append((children[0], rest, rest))
            continue
        for i in reversed(range(len(children))):
            last = i == len(children) - 1
            stack.append((children[i], rest + ("└─ " if last else "├─ "), rest + ("   " if last else "│  ")))
    return "\n".join(lines)


def run_json(st: RunStatus, nodes: Sequence[Node]) -> dict[str, Any]:
    """The run as data: status, nodes (append order) and edges."""
    return {
        "run": st.run,
        "status": st.to_dict(),
        "nodes": [n.to_dict() for n in nodes],
        "edges": [{"from": n.parent, "to": n.node, "kind": n.edge} for n in nodes if n.parent is not None],
    }


def _esc(text: str) -> str:
    """Text safe inside a quoted Mermaid label (entity codes for quotes and angle brackets)."""
    for ch, code in (("&", "#amp;"), ('"', "#quot;"), ("<", "#lt;"), (">", "#gt;"), ("\n", " ")):
        text = text.replace(ch, code)
    return text


_SHAPES = {"blocked_attempt": ("{{", "}}"), "checkpoint": ("[(", ")]"), "step": ("[", "]")}


def run_mermaid(st: RunStatus, nodes: Sequence[Node]) -> str:
    """The run as a Mermaid flowchart: blocked attempts as hexagons, checkpoints as cylinders, retries dotted."""
    lines = ["flowchart TD", f"  %% run {_esc(st.run)}"]
    for n in nodes:
        text = f"{_esc(n.node + ' ' + _block(n.kind, n.retryable))}<br/>{_esc(n.verdict + ' / ' + n.reason)}"
        left, right = _SHAPES.get(n.kind, ("[", "]"))
        lines.append(f'  {n.node}{left}"{text}"{right}')
    for n in nodes:
        if n.parent is not None:
            arrow = "-. retry .->" if n.edge == "retry" else "-->"
            lines.append(f"  {n.parent} {arrow} {n.node}")
    lines.append("  classDef blocked fill:#fde2e1,stroke:#c0392b")
    lines.append("  classDef terminal fill:#f5b7b1,stroke:#922b21,stroke-width:2px")
    blocked = [n.node for n in nodes if n.kind == "blocked_attempt" and n.retryable]
    terminal = [n.node for n in nodes if n.kind == "blocked_attempt" and not n.retryable]
    if blocked:
        lines.append(f"  class {','.join(blocked)} blocked")
    if terminal:
        lines.append(f"  class {','.join(terminal)} terminal")
    return "\n".join(lines)


def runs_table(rows: Sequence[RunStatus]) -> str:
    """Runs with their status, one per line, aligned."""
    if not rows:
        return "no runs recorded"
    head = ("RUN", "DECISIONS", "TIP", "KIND", "VERDICT", "UPDATED")
    body = [
        (r.run, str(r.decisions), r.tip, _block(r.tip_kind, r.retryable), f"{r.verdict} / {r.reason}", r.updated)
        for r in rows
    ]
    widths = [max(len(row[i]) for row in (head, *body)) for i in range(len(head))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in (head, *body))
