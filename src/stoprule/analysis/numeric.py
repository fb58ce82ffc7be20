"""Regions of numeric fields that the rules cannot tell apart, each with a witness.

Rules compare numbers with literals (``turn >= 3``) and with each other plus an
offset (``turn >= max_turns - 2``). Each such comparison reads one *difference*
``u - v`` against a constant ``c`` (``v`` is the constant zero for literals), and
its truth depends only on whether ``u - v`` is below, equal to or above ``c``. A
region fixes that three-way outcome for every difference; :func:`regions`
enumerates exactly the consistent ones (a depth-first search that checks each
partial choice with Floyd-Warshall over difference constraints) and solves each
for a witness:

- ``int`` fields compared with literals and with each other plus integer offsets:
  over the integers within the range facts allow (±``SAFE_INT``);
- ``number`` fields compared with literals and with each other without an offset:
  over the finite doubles, exactly. Doubles are order-isomorphic to a range of the
  integers (:func:`ordinal`), so ``x > c`` is ``ord(x) >= ord(c) + 1`` and
  ``x < y`` is ``ord(x) <= ord(y) - 1``: the same integer search, in ordinal space
  (so no region is claimed between two adjacent doubles, and none beyond the
  largest double); witnesses are then the plainest doubles each region allows;
- anything else (a ``number`` field with a non-zero offset, where the interpreter
  adds in doubles and rounds; an ``int`` field compared with a ``number`` field):
  over the rationals with strict bounds handled by an infinitesimal, and integer
  variables solved over the integers first. :func:`is_exact` tells these apart.
"""

from __future__ import annotations

import math
import struct
import sys
from fractions import Fraction
from typing import Any

from stoprule.analysis.deadline import tick
from stoprule.limits import SAFE_INT

__all__ = ["Prim", "from_ordinal", "is_exact", "ordinal", "plainest", "regions"]

Prim = tuple[int, int, Fraction]  # u - v compared with c; index 0 is the constant zero
INF = None


def _closure(n: int, edges: list[tuple[int, int, Fraction, int]]) -> list[list[Any]] | None:
    """All-pairs shortest paths over weights ``(c, d)`` = ``c + d*eps``; None on a negative cycle."""
    dist: list[list[Any]] = [[None] * n for _ in range(n)]
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


def _witness(
    n: int, dist: list[list[Any]], edges: list[tuple[int, int, Fraction, int]], integer: bool, anchored: bool
) -> list[Fraction]:
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


def _int_projection(dist: list[list[Any]], ints: list[int]) -> list[tuple[int, int, Fraction, int]]:
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


def ordinal(x: float) -> int:
    """The rank of a finite double among the doubles: ``x < y`` exactly when ``ordinal(x) <
    ordinal(y)``; ``0.0`` and ``-0.0`` (equal values) are both 0, ``5e-324`` is 1."""
    if x == 0:
        return 0
    bits: int = struct.unpack("<q", struct.pack("<d", abs(x)))[0]
    return bits if x > 0 else -bits


def from_ordinal(k: int) -> float:
    """The double of rank ``k`` (the inverse of :func:`ordinal`; 0 gives ``0.0``)."""
    x: float = struct.unpack("<d", struct.pack("<q", abs(k)))[0]
    return x if k >= 0 else -x


MAX_ORDINAL = ordinal(sys.float_info.max)


def plainest(lo: float, hi: float) -> float:
    """The plainest double in ``[lo, hi]``: 0, else the integer nearest zero, else the one with
    the fewest binary fraction digits, nearest zero."""
    if lo <= 0 <= hi:
        return 0.0
    if hi < 0:
        return -plainest(-hi, -lo)
    flo = Fraction(lo)
    for e in range(1100):  # a double is a multiple of 2^-1074: found by e = 1074
        x = Fraction(math.ceil(flo * (1 << e)), 1 << e)
        if x <= hi and float(x) == x:
            return float(x)
    return lo  # pragma: no cover - the loop always finds lo itself


def is_exact(prims: list[Prim], int_vars: set[int], n: int) -> bool:
    """Whether :func:`regions` decides ``prims`` exactly (see the module docstring)."""
    linked = [c for _, v, c in prims if v != 0]
    if len(int_vars) == n - 1:
        return all(c.denominator == 1 for c in linked)
    return not int_vars and all(c == 0 for c in linked)


def _search(
    n: int, prims: list[Prim], base: list[Any], integer: bool, ints: list[int]
) -> list[tuple[tuple[int, ...], list[Any]]]:
    """Every consistent three-way outcome of ``prims`` on top of ``base``, with its constraints."""
    out: list[tuple[tuple[int, ...], list[Any]]] = []

    def feasible(edges: list[Any]) -> bool:
        tick()
        dist = _closure(n, edges)
        if dist is None or integer or not ints:
            return dist is not None
        return _closure(n, _int_projection(dist, ints)) is not None

    def dfs(i: int, chosen: tuple[int, ...], edges: list[Any]) -> None:
        if i == len(prims):
            out.append((chosen, edges))
            return
        for rel in (-1, 0, 1):
            extra = _edges(prims[i], rel, integer)
            if extra is None:
                continue
            new = edges + extra
            if feasible(new):
                dfs(i + 1, (*chosen, rel), new)

    dfs(0, (), base)
    return out


def _doubles(n: int, prims: list[Prim]) -> list[tuple[tuple[int, ...], list[Fraction]]]:
    """Number fields compared with literals and each other (no offset): exact, in ordinal space."""
    oprims = [(u, v, Fraction(ordinal(float(c))) if v == 0 else Fraction(0)) for u, v, c in prims]
    base = [e for u in range(1, n) for e in ((0, u, Fraction(MAX_ORDINAL), 0), (u, 0, Fraction(MAX_ORDINAL), 0))]
    out = []
    for rel, edges in _search(n, oprims, base, True, []):
        pins: list[tuple[int, int, Fraction, int]] = []
        wit = [Fraction(0)] * n
        for u in range(1, n):  # one at a time: any value within the closure's bounds extends
            dist = _closure(n, edges + pins)
            assert dist is not None
            lo, hi = -dist[u][0][0], dist[0][u][0]
            x = plainest(from_ordinal(int(lo)), from_ordinal(int(hi)))
            k = Fraction(ordinal(x))
            pins += [(0, u, k, 0), (u, 0, -k, 0)]
            wit[u] = Fraction(x)
        out.append((rel, wit))
    return out


def regions(
    n: int, prims: list[Prim], int_vars: set[int] | None = None
) -> list[tuple[tuple[int, ...], list[Fraction]]]:
    """Consistent three-way outcomes of ``prims`` over variables ``1..n-1`` (0 is zero), with witnesses.

    ``int_vars`` take integer values (the rest are doubles); they are also kept within
    the range facts allow (±``SAFE_INT``) when a constant is large enough to matter.
    """
    ints = sorted(int_vars or ())
    if not ints and n > 1 and all(v == 0 or c == 0 for _, v, c in prims):
        return _doubles(n, prims)
    integer = len(ints) == n - 1
    base: list[tuple[int, int, Fraction, int]] = []
    if ints and any(abs(p[2]) >= FAR for p in prims):
        for u in ints:
            base += [(0, u, Fraction(SAFE_INT), 0), (u, 0, Fraction(SAFE_INT), 0)]
    anchored = bool(base) or any(p[1] == 0 or p[0] == 0 for p in prims)

    def solve(edges: list[Any]) -> list[Fraction]:
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

    out = [(rel, solve(edges)) for rel, edges in _search(n, prims, base, integer, ints)]
    if not anchored and ints and out:  # shift by whole numbers so integers stay integers
        out = [(rel, [x - math.floor(min(w[1:])) for x in w]) for rel, w in out]
    return out
