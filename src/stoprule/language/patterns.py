"""Glob patterns of the policy language, and the tests decided while a fact is projected.

Light on purpose: the evaluator imports this module on the CLI's cold-start path (the
pattern operators ``glob``, ``starts_with`` and ``ends_with`` are decided in Python while
a fact is projected, and the engine reads the outcome). Their operator entries, with
everything else about them, are in :mod:`stoprule.language.operators`.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

from stoprule.diagnostics import CheckError

__all__ = [
    "ends_with_test",
    "glob_class",
    "glob_escape",
    "glob_matcher",
    "glob_test",
    "glob_tokens",
    "starts_with_test",
]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    _Step = Callable[[str], bool] | None  # None: ``*``


def glob_tokens(pattern: str) -> list[tuple[str, str]]:
    """Split a glob into ``("star"|"one"|"lit", ch)`` and ``("class", body)`` tokens.

    Syntax: ``*`` any run, ``?`` one character, ``[abc]`` / ``[a-z]`` / ``[!abc]`` a class,
    ``\\x`` a literal ``x``; everything else is literal. Matching is whole-string.
    In a class, a ``]`` right after ``[`` or ``[!`` is literal, ``-`` first or last is
    literal, and every other character (``\\``, ``^``, ``[`` ...) stands for itself.
    """
    out: list[tuple[str, str]] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "*":
            out.append(("star", c))
        elif c == "?":
            out.append(("one", c))
        elif c == "[":
            j = i + 1
            if pattern[j : j + 1] == "!":
                j += 1
            if pattern[j : j + 1] == "]":
                j += 1
            end = pattern.find("]", j)
            if end == -1:
                raise CheckError(f"unclosed '[' in glob {_short(pattern)}")
            body = pattern[i + 1 : end]
            glob_class(body)  # a reversed range is an error
            out.append(("class", body))
            i = end
        elif c == "\\" and i + 1 < len(pattern):
            i += 1
            out.append(("lit", pattern[i]))
        else:
            out.append(("lit", c))
        i += 1
    return out


def _short(text: str) -> str:
    return repr(text) if len(text) <= 60 else repr(text[:57]) + "..."


def glob_class(body: str) -> tuple[bool, list[tuple[str, str]]]:
    """A class body (between the brackets) as ``(negated, [(low, high), ...])``."""
    neg = body.startswith("!")
    rest = body[1:] if neg else body
    ranges: list[tuple[str, str]] = []
    k = 0
    while k < len(rest):
        if k + 2 < len(rest) and rest[k + 1] == "-":
            lo, hi = rest[k], rest[k + 2]
            if lo > hi:
                raise CheckError(f"empty range {lo}-{hi} in glob class [{body}]")
            ranges.append((lo, hi))
            k += 3
        else:
            ranges.append((rest[k], rest[k]))
            k += 1
    return neg, ranges


def glob_escape(text: str) -> str:
    """``text`` as a glob that matches exactly it."""
    return "".join("\\" + ch if ch in "*?[\\" else ch for ch in text)


def _in_class(ranges: tuple[tuple[str, str], ...], negated: bool) -> Callable[[str], bool]:
    return lambda ch: any(lo <= ch <= hi for lo, hi in ranges) != negated


def _steps(pattern: str) -> list[_Step]:
    out: list[_Step] = []
    for kind, text in glob_tokens(pattern):
        if kind == "star":
            if not out or out[-1] is not None:  # ** is *
                out.append(None)
        elif kind == "one":
            out.append(lambda ch: True)
        elif kind == "class":
            neg, ranges = glob_class(text)
            out.append(_in_class(tuple(ranges), neg))
        else:
            out.append(text.__eq__)
    return out


_MATCHERS: dict[str, Callable[[str], bool]] = {}


def glob_matcher(pattern: str) -> Callable[[str], bool]:
    """A whole-string matcher for ``pattern`` in O(len(pattern) * len(value)) time, whatever
    the pattern (no backtracking blow-up); it agrees with :func:`glob_regex`."""
    fn = _MATCHERS.get(pattern)
    if fn is not None:
        return fn
    steps = _steps(pattern)
    n = len(steps)

    def match(value: str) -> bool:
        # the classic wildcard walk: on a mismatch, let the last '*' take one more character
        i = j = 0
        star_i = star_j = -1
        m = len(value)
        while j < m:
            if i < n and steps[i] is not None and steps[i](value[j]):  # type: ignore[misc]
                i += 1
                j += 1
            elif i < n and steps[i] is None:
                star_i, star_j = i, j
                i += 1
            elif star_i >= 0:
                star_j += 1
                i, j = star_i + 1, star_j
            else:
                return False
        while i < n and steps[i] is None:
            i += 1
        return i == n

    if len(_MATCHERS) < 4096:
        _MATCHERS[pattern] = match
    return match


def glob_test(value: str, pattern: str) -> bool:
    """``value`` matches the glob ``pattern`` (whole string)."""
    return glob_matcher(pattern)(value)


def starts_with_test(value: str, prefix: str) -> bool:
    return value.startswith(prefix)


def ends_with_test(value: str, suffix: str) -> bool:
    return value.endswith(suffix)
