"""Witness strings: one per class of strings that the rules cannot tell apart.

Rules look at a string field through equality with literals (``eq``, ``in``,
``not_in``, sets) and glob patterns. Two strings behave alike when they equal the
same literal (or none) and match the same globs. :func:`string_classes` returns
each literal as a class of its own, and for every combination of glob matches that
some other string realises, up to ``k`` distinct witnesses (``k`` distinct values
are what ``k`` fields compared with each other for equality can need).

Globs are matched by a product automaton over an alphabet in which every
character class the patterns can distinguish has a representative; a breadth-
first search visits each product state at most ``k`` times, so the witnesses are
the shortest strings of each class, and a class gets fewer than ``k`` only when it
has fewer members.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from stoprule.diagnostics import AnalysisLimit
from stoprule.language.operators import glob_regex
from stoprule.language.patterns import glob_tokens

__all__ = ["AnalysisLimit", "fresh_names", "string_classes"]

MAX_STATES = 20000


def fresh_names(avoid: set[str], k: int, stem: str = "s") -> list[str]:
    """``k`` readable strings not in ``avoid``."""
    out: list[str] = []
    i = 1
    while len(out) < k:
        name = f"{stem}{i}"
        if name not in avoid:
            out.append(name)
        i += 1
    return out


def _char_tests(globs: list[str], literals: list[str]) -> list[str]:
    """Every character mentioned anywhere (literal characters, class bodies)."""
    chars: set[str] = set()
    for lit in literals:
        chars.update(lit)
    for g in globs:
        for kind, text in glob_tokens(g):
            if kind in ("lit", "class"):
                chars.update(text)
    return sorted(chars)


def _alphabet(globs: list[str], literals: list[str], k: int) -> list[str]:
    """Representative characters: every segment between breakpoints, up to ``k`` each."""
    mentioned = _char_tests(globs, literals)
    cand: set[int] = set()
    for ch in mentioned:
        o = ord(ch)
        cand.update(range(max(o - 1, 0), min(o + k + 1, 0x110000)))
    cand.update(ord(c) for c in "ab0-_")
    cand = {c for c in cand if not 0xD800 <= c <= 0xDFFF}
    return [chr(c) for c in sorted(cand)]


def _token_matchers(pattern: str) -> list[tuple[str, object]]:
    """Tokens with a per-character test built from the reference glob translation."""
    out: list[tuple[str, object]] = []
    for kind, text in glob_tokens(pattern):
        if kind == "star":
            out.append(("star", None))
        elif kind == "one":
            out.append(("char", None))
        elif kind == "class":
            out.append(("char", glob_regex("[" + text + "]")))
        else:
            out.append(("char", text))
    return out


class _Nfa:
    def __init__(self, pattern: str, literal: bool) -> None:
        self.tokens = [("char", c) for c in pattern] if literal else _token_matchers(pattern)
        self.start = self.close({0})

    def close(self, states: set[int]) -> frozenset[int]:
        out = set(states)
        stack = list(states)
        while stack:
            s = stack.pop()
            if s < len(self.tokens) and self.tokens[s][0] == "star" and s + 1 not in out:
                out.add(s + 1)
                stack.append(s + 1)
        return frozenset(out)

    def step(self, states: frozenset[int], ch: str) -> frozenset[int]:
        nxt: set[int] = set()
        for s in states:
            if s >= len(self.tokens):
                continue
            kind, test = self.tokens[s]
            if kind == "star":
                nxt.add(s)
            elif test is None or (test == ch if isinstance(test, str) else test.match(ch) is not None):  # type: ignore[attr-defined]
                nxt.add(s + 1)
        return self.close(nxt)

    def accepts(self, states: frozenset[int]) -> bool:
        return len(self.tokens) in states


def string_classes(literals: set[str], globs: set[str], k: int) -> list[tuple[bool, list[str]]]:
    """Classes as ``(is_literal, witnesses)``; literals first, in sorted order."""
    lits = sorted(literals)
    out: list[tuple[bool, list[str]]] = [(True, [lit]) for lit in lits]
    if not globs:
        out.append((False, fresh_names(literals, k)))
        return out
    pats = sorted(globs)
    nfas = [_Nfa(p, True) for p in lits] + [_Nfa(p, False) for p in pats]
    alphabet = _alphabet(pats, lits, k)
    start = tuple(n.start for n in nfas)
    visits: dict[tuple[Any, ...], int] = {start: 1}
    queue: deque[tuple[tuple[Any, ...], str]] = deque([(start, "")])
    found: dict[tuple[bool, ...], list[str]] = {}
    nlit = len(lits)
    while queue:
        state, text = queue.popleft()
        vec = tuple(n.accepts(s) for n, s in zip(nfas, state, strict=True))
        if not any(vec[:nlit]):
            bucket = found.setdefault(vec[nlit:], [])
            if len(bucket) < k:
                bucket.append(text)
        for ch in alphabet:
            nxt = tuple(n.step(s, ch) for n, s in zip(nfas, state, strict=True))
            seen = visits.get(nxt, 0)
            if seen >= k:
                continue
            visits[nxt] = seen + 1
            if len(visits) > MAX_STATES:
                raise AnalysisLimit(f"glob patterns {pats} need more than {MAX_STATES} automaton states")
            queue.append((nxt, text + ch))
    for vec in sorted(found, key=lambda v: (sum(v), v)):
        out.append((False, found[vec]))
    return out
