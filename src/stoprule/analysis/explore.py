"""Memoized Shannon expansion of rule lists over a :class:`~.domain.Space`.

Variables are assigned one at a time (in the space's order); after each
assignment every rule's formula is simplified to true, false or a residual. As
soon as each rule list's outcome is fixed (the rules matching at the highest
priority that matches, or none), the rest of the product is counted without being
enumerated, and the cheapest completion becomes the example. States are memoized
on (next variable, residual formulas, values later domains depend on), so
identical sub-problems are solved once. The result is exact over the abstract
domain: every cell is counted once, under the outcome its rules give it.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, Any

from stoprule.analysis.deadline import OutOfTime, set_deadline
from stoprule.analysis.deadline import tick as _tick
from stoprule.analysis.domain import Space
from stoprule.analysis.formula import FALSE, TRUE

__all__ = ["SAME", "Cell", "Decider", "Explorer", "OutOfTime", "Outcome", "Progress", "set_deadline", "widen_regions"]


Outcome = tuple[tuple[int, ...] | None, ...]  # per rule list: positions matching at the top priority
Chain = tuple[int, int, Any] | None  # (var, value, rest): an assignment as a linked list
SAME: Outcome = ()  # the outcome of a subtree cut off by ``same``: every rule list decides alike there


@dataclass
class Cell:
    """A region's size (abstract cells), and its cheapest example as an assignment."""

    count: int
    cost: int
    chain: Chain
    fixed: dict[int, int] | None = None  # from :meth:`Explorer.find`: the values it branched on

    def assignment(self) -> dict[int, int]:
        out: dict[int, int] = {}
        c = self.chain
        while c is not None:
            out[c[0]] = c[1]
            c = c[2]
        return out


@dataclass(frozen=True)
class Decider:
    """One rule list in declaration order: formula ids and priorities."""

    formulas: list[int]
    priorities: list[int]


class Progress:
    """A progress bar on a terminal, shown once a run has taken over a second."""

    def __init__(self, stream: IO[str] | None = None, label: str = "") -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.on = bool(getattr(self.stream, "isatty", lambda: False)())
        self.start = time.monotonic()
        self.done = 0.0
        self.label = label
        self.shown = False
        self._last = 0.0

    def phase(self, label: str) -> None:
        self.label = label
        self.done = 0.0

    def advance(self, frac: float) -> None:
        self.done += frac
        if not self.on:
            return
        now = time.monotonic()
        if now - self.start < 1.0 or now - self._last < 0.1:
            return
        self._last = now
        width = 30
        n = int(min(self.done, 1.0) * width)
        self.stream.write(
            f"\r{self.label:<24} [{'#' * n}{'.' * (width - n)}] {min(self.done, 1.0):4.0%} {now - self.start:5.1f}s"
        )
        self.stream.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown:
            self.stream.write("\r" + " " * 72 + "\r")
            self.stream.flush()


class Explorer:
    """Outcomes of several rule lists over a space, optionally restricted by constraint formulas."""

    def __init__(
        self,
        space: Space,
        deciders: list[Decider],
        constraints: list[int] | None = None,
        progress: Progress | None = None,
        same: Callable[[tuple[int, ...]], bool] | None = None,
    ) -> None:
        """``same(residuals)``: a subtree where it holds is counted as :data:`SAME`, not explored."""
        self.space = space
        self.same = same
        self.store = space.store
        self.n = len(space.vars)
        self.progress = progress
        self.formulas: list[int] = []
        self.levels: list[list[list[int]]] = []
        for d in deciders:
            base = len(self.formulas)
            self.formulas.extend(d.formulas)
            by_pri: dict[int, list[int]] = {}
            for k, p in enumerate(d.priorities):
                by_pri.setdefault(p, []).append(base + k)
            self.levels.append([by_pri[p] for p in sorted(by_pri, reverse=True)])
        self.bases = [sum(len(d.formulas) for d in deciders[:k]) for k in range(len(deciders))]
        self.cons = list(range(len(self.formulas), len(self.formulas) + len(constraints or [])))
        self.formulas.extend(constraints or [])
        self._plan()
        self.memo: dict[tuple[Any, ...], dict[Outcome, Cell]] = {}
        self._done: dict[tuple[Any, ...], tuple[int, int, Chain]] = {}
        self._doms: dict[tuple[Any, ...], tuple[int, ...]] = {}

    # ------------------------------------------------------------ contexts

    def _plan(self) -> None:
        """Which assigned values each step still needs (for domains of later variables)."""
        cached = self.space.plan
        if cached is not None:
            self.has_dependents, self.keep, self.add_self, self.dep_pos, self.live = cached
            return
        vars_ = self.space.vars
        n = self.n
        live: list[list[int]] = [[] for _ in range(n + 1)]
        for i in range(n + 1):
            live[i] = sorted({d for j in range(i, n) for d in vars_[j].deps if d < i})
        self.has_dependents = [any(i in vars_[j].deps for j in range(i + 1, n)) for i in range(n)]
        self.keep = [[live[i].index(d) for d in live[i + 1] if d != i] for i in range(n)]
        self.add_self = [i in live[i + 1] for i in range(n)]
        self.dep_pos = [[live[i].index(d) for d in vars_[i].deps] for i in range(n)]
        self.live = live
        self.space.plan = (self.has_dependents, self.keep, self.add_self, self.dep_pos, self.live)

    def _next(self, i: int, ctx: tuple[int, ...], v: int) -> tuple[int, ...]:
        out = tuple(ctx[k] for k in self.keep[i])
        return (*out, v) if self.add_self[i] else out

    def domain(self, i: int, ctx: tuple[int, ...]) -> tuple[int, ...]:
        key = (i, tuple(ctx[p] for p in self.dep_pos[i]))
        found = self._doms.get(key)
        if found is None:
            deps = self.space.vars[i].deps
            found = self.space.domain(i, dict(zip(deps, key[1], strict=True)))
            self._doms[key] = found
        return found

    # ------------------------------------------------------------ states

    def _normalize(self, res: list[int]) -> tuple[tuple[int, ...], Outcome, int, bool | None]:
        """Drop rules that can no longer matter; the outcome per list (None: open), the support of
        what is still open, and the constraints: True (dead), None (open) or False (all hold)."""
        support = self.store.support
        sup = 0
        outs: list[tuple[int, ...] | None] = []
        for base, levels in zip(self.bases, self.levels, strict=True):
            open_above = False
            out: tuple[int, ...] | None = None
            for li, level in enumerate(levels):
                hit = False
                for p in level:
                    r = res[p]
                    if r == TRUE:
                        hit = True
                    elif r != FALSE:
                        open_above = True
                        sup |= support[r]
                if hit:
                    if not open_above:
                        out = tuple(p - base for p in level if res[p] == TRUE)
                    for lower in levels[li + 1 :]:
                        for p in lower:
                            res[p] = FALSE
                    break
            else:
                out = None if open_above else ()
            outs.append(out)
        dead: bool | None = False
        for c in self.cons:
            r = res[c]
            if r == FALSE:
                return tuple(res), tuple(outs), 0, True
            if r != TRUE:
                sup |= support[r]
                dead = None
        return tuple(res), tuple(outs), sup, dead

    def root(self) -> tuple[Any, ...]:
        res, _, _, _ = self._normalize(list(self.formulas))
        return (0, res, ())

    def step(self, key: tuple[Any, ...]) -> tuple[Any, ...]:
        """``("dead",)``, ``("leaf", outcome)`` or ``("branch", skipped, var, children)``.

        ``skipped``: the variables passed over first (read by nothing still open, and no
        later domain depends on them) as ``(var, cheapest value, domain weight, its cost)``;
        ``children``: ``(value, child state)`` for each value of ``var`` inside the constraints.
        """
        _tick()
        i, res, ctx = key
        res_l = list(res)
        _, outs, sup, dead = self._normalize(res_l)
        if dead:
            return ("dead",)
        if dead is False and all(o is not None for o in outs):
            return ("leaf", outs)
        skipped: list[tuple[int, int, int, int]] = []  # (var, value, weight of the domain, cost)
        while not (sup >> i) & 1 and not self.has_dependents[i]:
            dom = self.domain(i, ctx)
            if not dom:
                return ("dead",)
            vals = self.space.vars[i].values
            best = min(dom, key=lambda j: vals[j].cost)
            skipped.append((i, best, sum(vals[j].weight for j in dom), vals[best].cost))
            ctx = self._next(i, ctx, best)
            i += 1
        subst = self.store.subst
        cons = self.cons
        children = []
        for v in self.domain(i, ctx):
            if any(subst(res[c], i, v) == FALSE for c in cons):
                continue  # outside the constraints: no cells
            child = [subst(r, i, v) for r in res]
            cres, _, _, _ = self._normalize(child)
            children.append((v, (i + 1, cres, self._next(i, ctx, v))))
        return ("branch", skipped, i, children)

    # ------------------------------------------------------------ completion

    def complete(self, i: int, ctx: tuple[int, ...]) -> tuple[int, int, Chain]:
        """Cells of the remaining product, and its cheapest assignment."""
        if i == self.n:
            return (1, 0, None)
        key = (i, ctx)
        found = self._done.get(key)
        if found is not None:
            return found
        vals = self.space.vars[i].values
        dom = self.domain(i, ctx)
        if not dom:
            return (0, 0, None)
        total = 0
        best: tuple[int, Chain] | None = None
        if not self.has_dependents[i] and not self.add_self[i]:
            cnt, cost, chain = self.complete(i + 1, self._next(i, ctx, dom[0]))
            j = min(dom, key=lambda j: vals[j].cost)
            out: tuple[int, int, Chain] = (sum(vals[j].weight for j in dom) * cnt, cost + vals[j].cost, (i, j, chain))
        else:
            for j in dom:
                cnt, cost, chain = self.complete(i + 1, self._next(i, ctx, j))
                total += vals[j].weight * cnt
                if best is None or cost + vals[j].cost < best[0]:
                    best = (cost + vals[j].cost, (i, j, chain))
            assert best is not None
            out = (total, best[0], best[1])
        self._done[key] = out
        return out

    # ------------------------------------------------------------ exploration

    def run(self) -> dict[Outcome, Cell]:
        """Every outcome combination that occurs, with its cell count and cheapest example."""
        return self._explore(self.root(), 0, 1.0)

    def _explore(self, key: tuple[Any, ...], depth: int, frac: float) -> dict[Outcome, Cell]:
        found = self.memo.get(key)
        if found is not None:
            if self.progress is not None and depth <= 3:
                self.progress.advance(frac)
            return found
        st = ("same",) if self.same is not None and self.same(key[1]) else self.step(key)
        out: dict[Outcome, Cell] = {}
        if st[0] == "same":
            out[SAME] = Cell(*self.complete(key[0], key[2]))
        elif st[0] == "leaf":
            cnt, cost, chain = self.complete(key[0], key[2])
            out[st[1]] = Cell(cnt, cost, chain)
        elif st[0] == "branch":
            _, skipped, var, children = st
            vals = self.space.vars[var].values
            share = frac / max(len(children), 1)
            for v, ckey in children:
                sub = self._explore(ckey, depth + 1, share)
                w, c = vals[v].weight, vals[v].cost
                for o, cell in sub.items():
                    prev = out.get(o)
                    if prev is None:
                        out[o] = Cell(cell.count * w, cell.cost + c, (var, v, cell.chain))
                    else:
                        prev.count += cell.count * w
                        if cell.cost + c < prev.cost:
                            prev.cost, prev.chain = cell.cost + c, (var, v, cell.chain)
            for sv, sj, sw, sc in reversed(skipped):
                for cell in out.values():
                    cell.count *= sw
                    cell.cost += sc
                    cell.chain = (sv, sj, cell.chain)
        if self.progress is not None and (depth == 3 or (depth < 3 and st[0] != "branch")):
            self.progress.advance(frac)
        self.memo[key] = out
        return out

    def find(
        self,
        pred: Callable[[Outcome], bool],
        prune: Callable[[tuple[int, ...]], bool] | None = None,
        failed: set[tuple[Any, ...]] | None = None,
        hit: Callable[[tuple[int, ...]], bool] | None = None,
    ) -> Cell | None:
        """The first cell (in exploration order) whose outcome satisfies ``pred``; None if there is none.

        ``failed`` collects states known to hold no such cell; callers asking about the same
        ``pred`` and rule lists may share it (a state's residuals include the constraints).
        ``prune(residuals)``: no such cell below; ``hit(residuals)``: every cell below is one.
        """
        failed = failed if failed is not None else set()
        path: list[tuple[int, int]] = []

        def dfs(key: tuple[Any, ...]) -> Chain | bool:
            if key in failed or (prune is not None and prune(key[1])):
                return False
            st = self.step(key)
            if st[0] == "dead":
                failed.add(key)
                return False
            settled = all(key[1][c] == TRUE for c in self.cons)  # every cell below is inside
            if (st[0] == "leaf" and pred(st[1])) or (hit is not None and settled and hit(key[1])):
                return self.complete(key[0], key[2])[2] or True
            if st[0] == "branch":
                _, skipped, var, children = st
                for v, ckey in children:
                    sub = dfs(ckey)
                    if sub is not False:
                        path.append((var, v))
                        chain: Chain = (var, v, None if sub is True else sub)
                        for sv, sj, _, _ in reversed(skipped):
                            chain = (sv, sj, chain)
                        return chain
            failed.add(key)
            return False

        got = dfs(self.root())
        if got is False:
            return None
        return Cell(0, 0, None if got is True else got, dict(path))


def widen_regions(
    space: Space,
    deciders: list[Decider],
    pred: Callable[[Outcome], bool],
    limit: int,
    same: Callable[[tuple[int, ...]], bool] | None = None,
) -> tuple[list[tuple[list[str], Cell]], bool]:
    """Up to ``limit`` regions where ``pred`` holds, and whether there are more.

    Each region starts from a cell outside the regions found so far and is widened as far
    as it stays wholly inside ``pred``: each variable is dropped when the region without it
    stays inside, else grows to the largest set of values that keeps it so (values that
    occur there). A description therefore names only what matters. Regions may overlap;
    the example and count are those of the region's part outside the earlier ones.
    ``same`` (as for :class:`Explorer`) marks subtrees where ``pred`` cannot hold.
    """
    store = space.store
    out: list[tuple[list[str], Cell]] = []
    outside: list[int] = []
    failed: set[tuple[Any, ...]] = set()

    def explorer(cons: list[int]) -> Explorer:
        return Explorer(space, deciders, constraints=cons)

    def leaves(masks: dict[int, int]) -> list[int]:
        return [store.leaf(v, m) for v, m in masks.items()]

    def inside(masks: dict[int, int]) -> bool:
        return explorer(leaves(masks)).find(lambda o: not pred(o), failed=failed, hit=same) is None

    while True:
        seed = explorer(outside).find(pred, prune=same)
        if seed is None or len(out) >= limit:
            return out, seed is not None
        masks = {v: 1 << j for v, j in (seed.fixed or {}).items()}
        for var in sorted(masks, reverse=True):
            if inside({v: m for v, m in masks.items() if v != var}):
                del masks[var]
                continue
            for j in range(len(space.vars[var].values)):
                if (masks[var] >> j) & 1:
                    continue
                trial = {**masks, var: masks[var] | (1 << j)}
                if inside(trial) and explorer(leaves({**masks, var: 1 << j})).find(lambda o: True) is not None:
                    masks[var] = trial[var]
        part = Explorer(space, deciders, constraints=leaves(masks) + outside, same=same).run()
        cells = [c for o, c in part.items() if o != SAME and pred(o)]
        best = min(cells, key=lambda c: c.cost)
        out.append((space.describe_sets(masks), Cell(sum(c.count for c in cells), best.cost, best.chain)))
        outside.append(store.disj([store.leaf(v, ~m) for v, m in masks.items()]))
