"""Regions of numeric fields that the rules cannot tell apart, each with a witness.

Rules compare numbers with literals (``turn >= 3``) and with each other plus an
offset (``turn >= max_turns - 2``). Each such comparison reads one *difference*
``u - v`` against a constant ``c`` (``v`` is the constant zero for literals), and
its truth depends only on whether ``u - v`` is below, equal to or above ``c``. A
region fixes that three-way outcome for every difference; :func:`regions`
enumerates exactly the consistent ones (a depth-first search that checks each
partial choice with Floyd-Warshall over difference constraints) and solves each
for a witness. Integer-only groups are solved over the integers, others over the
rationals with strict bounds handled by an infinitesimal.
"""

from __future__ import annotations

import math
from fractions import Fraction

from stoprule.limits import SAFE_INT

__all__ = ["Prim", "regions"]

Prim = tuple[int, int, Fraction]  # u - v compared with c; index 0 is the constant zero
INF = None


def _closure(n: int, edges: list[tuple[int, int, Fraction, int]]) -> list[list] | None:
    """All-pairs shortest paths over weights ``(c, d)`` = ``c + d*eps``; None on a negative cycle."""
    dist: list[list] = [[None] * n for _ in range(n)]
    for i in range(n):
        dist[i][i] = (Fraction(0), 0)
    for v, u, c, d in edges:  # u - v <= c + d*eps: edge v -> u
        w = (c, d)
        if dist[v][u] is None or w < dist[v][u]:
            dist[v][u] = w
    for k in range(n):
        dk = dist[k]
        for i in range(n):
            dik = dist[i][k]
            if dik is None:
                continue
            di = dist[i]
            for j in range(n):
                dkj = dk[j]
                if dkj is None:
                    continue
                w = (dik[0] + dkj[0], dik[1] + dkj[1])
                if di[j] is None or w < di[j]:
                    di[j] = w
    for i in range(n):
        if dist[i][i] < (Fraction(0), 0):
            return None
    return dist


def _edges(prim: Prim, rel: int, integer: bool) -> list[tuple[int, int, Fraction, int]] | None:
    """Constraints for ``u - v`` being below (-1), equal to (0) or above (1) ``c``."""
    u, v, c = prim
    if integer:
        if rel == 0:
            if c.denominator != 1:
                return None
            return [(v, u, c, 0), (u, v, -c, 0)]
        if rel < 0:  # u - v <= ceil(c) - 1
            return [(v, u, Fraction(math.ceil(c) - 1), 0)]
        return [(u, v, Fraction(-math.floor(c) - 1), 0)]  # v - u <= -floor(c) - 1
    if rel == 0:
        return [(v, u, c, 0), (u, v, -c, 0)]
    if rel < 0:
        return [(v, u, c, -1)]
    return [(u, v, -c, -1)]


def _witness(n: int, dist: list[list], edges: list, integer: bool, anchored: bool) -> list[Fraction]:
    """A solution: shortest distances from a virtual source, with eps made concrete."""
    best: list[tuple[Fraction, int]] = []
    for j in range(n):
        cands = [dist[i][j] for i in range(n) if dist[i][j] is not None]
        best.append(min([(Fraction(0), 0), *cands]))
    if integer:
        vals = [b[0] for b in best]
    else:
        eps = Fraction(1, 2)
        bound = 2 * len(edges) + 2
        for v, u, c, _ in edges:
            gap = best[v][0] + c - best[u][0]
            while gap > 0 and eps * bound >= gap:
                eps /= 2
        vals = [b[0] + b[1] * eps for b in best]
    base = vals[0] if anchored else min(vals[1:], default=Fraction(0))
    return [x - base for x in vals]


FAR = 1 << 30  # constants this large may push witnesses out of the range facts allow


def _int_projection(dist: list[list], ints: list[int]) -> list[tuple[int, int, Fraction, int]]:
    """The constraints the closure implies between zero and the integer variables, over the integers.

    Projecting difference constraints onto some variables gives the shortest paths between
    them; an integer solution of the projection extends to a solution of the whole system.
    """
    nodes = [0, *ints]
    edges = []
    for v in nodes:
        for u in nodes:
            w = dist[v][u]
            if u == v or w is None:
                continue
            c = Fraction(math.floor(w[0])) if w[1] == 0 else Fraction(math.ceil(w[0]) - 1)
            edges.append((v, u, c, 0))
    return edges


def regions(
    n: int, prims: list[Prim], int_vars: set[int] | None = None
) -> list[tuple[tuple[int, ...], list[Fraction]]]:
    """Consistent three-way outcomes of ``prims`` over variables ``1..n-1`` (0 is zero), with witnesses.

    ``int_vars`` take integer values (the rest are rationals); they are also kept within
    the range facts allow (±``SAFE_INT``) when a constant is large enough to matter.
    """
    ints = sorted(int_vars or ())
    integer = len(ints) == n - 1
    base: list[tuple[int, int, Fraction, int]] = []
    if ints and any(abs(p[2]) >= FAR for p in prims):
        for u in ints:
            base += [(0, u, Fraction(SAFE_INT), 0), (u, 0, Fraction(SAFE_INT), 0)]
    anchored = bool(base) or any(p[1] == 0 or p[0] == 0 for p in prims)
    out: list[tuple[tuple[int, ...], list[Fraction]]] = []

    def feasible(edges: list) -> list[list] | None:
        dist = _closure(n, edges)
        if dist is None or integer or not ints:
            return dist
        return dist if _closure(n, _int_projection(dist, ints)) is not None else None

    def solve(edges: list) -> list[Fraction]:
        if integer or not ints:
            dist = _closure(n, edges)
            assert dist is not None
            return _witness(n, dist, edges, integer, anchored)
        dist = _closure(n, edges)
        assert dist is not None
        proj = _int_projection(dist, ints)
        pdist = _closure(n, proj)
        assert pdist is not None
        fixed = _witness(n, pdist, proj, True, True)  # integers, relative to zero
        pins = [e for u in ints for e in ((0, u, fixed[u], 0), (u, 0, -fixed[u], 0))]
        dist = _closure(n, edges + pins)
        assert dist is not None
        return _witness(n, dist, edges + pins, False, True)

    def dfs(i: int, chosen: tuple[int, ...], edges: list) -> None:
        if i == len(prims):
            out.append((chosen, solve(edges)))
            return
        for rel in (-1, 0, 1):
            extra = _edges(prims[i], rel, integer)
            if extra is None:
                continue
            new = edges + extra
            if feasible(new) is not None:
                dfs(i + 1, (*chosen, rel), new)

    dfs(0, (), base)
    if not anchored and ints and out:  # shift by whole numbers so integers stay integers
        out = [(rel, [x - math.floor(min(w[1:])) for x in w]) for rel, w in out]
    return out
