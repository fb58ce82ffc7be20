"""Hash-consed boolean formulas over finite-domain variables.

A formula is an ``int`` id into a :class:`Store`. Leaves test one variable against
a bitmask of its values (``var in mask``), or two variables against a table (for
each value of the first, the mask of values of the second that satisfy it). Nodes
are kept in negation normal form; ``and``/``or`` nodes are flattened, deduplicated
and sorted, and leaves over one variable merge into a single mask, so equal
residual formulas get equal ids and substitution results are cached.
"""

from __future__ import annotations

from typing import Any

__all__ = ["FALSE", "TRUE", "Store"]

FALSE = 0
TRUE = 1

_LEAF, _REL, _AND, _OR = "L", "R", "A", "O"


class Store:
    """Formulas over variables ``0..n-1``; ``sizes[v]`` values each."""

    def __init__(self, sizes: list[int]) -> None:
        self.full = [(1 << n) - 1 for n in sizes]
        self.nodes: list[tuple[Any, ...]] = [("F",), ("T",)]
        self.support: list[int] = [0, 0]
        self._index: dict[tuple[Any, ...], int] = {}
        self._rows: list[tuple[int, ...]] = []
        self._row_index: dict[tuple[int, ...], int] = {}
        self._subst: dict[tuple[int, int, int], int] = {}
        self._neg: dict[int, int] = {FALSE: TRUE, TRUE: FALSE}

    # ------------------------------------------------------------ construction

    def _make(self, node: tuple[Any, ...], support: int) -> int:
        found = self._index.get(node)
        if found is not None:
            return found
        self.nodes.append(node)
        self.support.append(support)
        self._index[node] = len(self.nodes) - 1
        return len(self.nodes) - 1

    def leaf(self, var: int, mask: int) -> int:
        """``var`` takes one of the values whose bit is set in ``mask``."""
        mask &= self.full[var]
        if mask == 0:
            return FALSE
        if mask == self.full[var]:
            return TRUE
        return self._make((_LEAF, var, mask), 1 << var)

    def relation(self, a: int, b: int, rows: list[int]) -> int:
        """``b`` is in ``rows[value of a]``: a two-variable test."""
        rows_t = tuple(r & self.full[b] for r in rows)
        if all(r == 0 for r in rows_t):
            return FALSE
        if all(r == self.full[b] for r in rows_t):
            return TRUE
        if len(set(rows_t)) == 1:
            return self.leaf(b, rows_t[0])
        if all(r in (0, self.full[b]) for r in rows_t):
            return self.leaf(a, sum(1 << i for i, r in enumerate(rows_t) if r))
        rid = self._row_index.get(rows_t)
        if rid is None:
            self._rows.append(rows_t)
            rid = self._row_index[rows_t] = len(self._rows) - 1
        return self._make((_REL, a, b, rid), (1 << a) | (1 << b))

    def conj(self, ids: list[int]) -> int:
        return self._combine(ids, _AND)

    def disj(self, ids: list[int]) -> int:
        return self._combine(ids, _OR)

    def _combine(self, ids: list[int], kind: str) -> int:
        absorbing, unit = (FALSE, TRUE) if kind == _AND else (TRUE, FALSE)
        masks: dict[int, int] = {}
        rest: set[int] = set()
        stack = list(ids)
        while stack:
            i = stack.pop()
            if i == absorbing:
                return absorbing
            if i == unit:
                continue
            node = self.nodes[i]
            if node[0] == kind:
                stack.extend(node[1])
            elif node[0] == _LEAF:
                var, mask = node[1], node[2]
                if var in masks:
                    masks[var] = (masks[var] & mask) if kind == _AND else (masks[var] | mask)
                else:
                    masks[var] = mask
            else:
                rest.add(i)
        for var, mask in masks.items():
            leaf = self.leaf(var, mask)
            if leaf == absorbing:
                return absorbing
            if leaf != unit:
                rest.add(leaf)
        if not rest:
            return unit
        if len(rest) == 1:
            return next(iter(rest))
        items = tuple(sorted(rest))
        support = 0
        for i in items:
            support |= self.support[i]
        return self._make((kind, items), support)

    def negate(self, f: int) -> int:
        found = self._neg.get(f)
        if found is not None:
            return found
        node = self.nodes[f]
        if node[0] == _LEAF:
            out = self.leaf(node[1], ~node[2])
        elif node[0] == _REL:
            _, a, b, rid = node
            out = self.relation(a, b, [~r for r in self._rows[rid]])
        elif node[0] == _AND:
            out = self.disj([self.negate(c) for c in node[1]])
        else:
            out = self.conj([self.negate(c) for c in node[1]])
        self._neg[f] = out
        self._neg[out] = f
        return out

    # ------------------------------------------------------------ evaluation

    def subst(self, f: int, var: int, value: int) -> int:
        """``f`` with ``var`` fixed to its ``value``-th value."""
        if not (self.support[f] >> var) & 1:
            return f
        key = (f, var, value)
        found = self._subst.get(key)
        if found is not None:
            return found
        node = self.nodes[f]
        kind = node[0]
        if kind == _LEAF:
            out = TRUE if (node[2] >> value) & 1 else FALSE
        elif kind == _REL:
            _, a, b, rid = node
            rows = self._rows[rid]
            if var == a:
                out = self.leaf(b, rows[value])
            else:
                out = self.leaf(a, sum(1 << i for i, r in enumerate(rows) if (r >> value) & 1))
        elif kind == _AND:
            out = self.conj([self.subst(c, var, value) for c in node[1]])
        else:
            out = self.disj([self.subst(c, var, value) for c in node[1]])
        self._subst[key] = out
        return out

    def value(self, f: int, assignment: dict[int, int]) -> bool:
        """Truth of ``f`` under a complete assignment of its variables."""
        node = self.nodes[f]
        kind = node[0]
        if kind == "T":
            return True
        if kind == "F":
            return False
        if kind == _LEAF:
            return bool((node[2] >> assignment[node[1]]) & 1)
        if kind == _REL:
            _, a, b, rid = node
            return bool((self._rows[rid][assignment[a]] >> assignment[b]) & 1)
        if kind == _AND:
            return all(self.value(c, assignment) for c in node[1])
        return any(self.value(c, assignment) for c in node[1])
