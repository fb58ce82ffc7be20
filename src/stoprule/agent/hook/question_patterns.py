"""The pack's question patterns read for what every match of one holds: the words it requires,
a character beyond ASCII. The question detector (:mod:`stoprule.agent.hook.questions`) skips a
pattern a sentence cannot match without compiling it; it reads each pattern set here once and
keeps the readings in the cache, so a stop imports this module only when that entry misses.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

from stoprule._util.regex import FOLDS_TO_ASCII, compiled

__all__ = ["beyond_ascii", "read_pattern", "required"]

_META = frozenset(".^$*+?{}[]()|\\")


def required(pattern: str) -> tuple[tuple[str, ...], ...]:
    """What every match of ``pattern`` holds, read conservatively from its top level: a tuple of
    requirements, each a tuple of words (lower case, for a case-insensitive search) one of which
    is in the match: a run of literal characters outside groups, classes and optional atoms, or
    a group's alternatives (each read up to its first optional or special part). ``()`` where
    this reading does not cover the pattern (a top-level ``|``, a quantifier in braces, verbose
    mode, escapes that stand for more than a character): it is then always compiled and searched."""
    return read_pattern(pattern)[0]


def beyond_ascii(pattern: str) -> bool:
    """Whether every match of ``pattern`` holds a character outside ASCII (an ASCII text cannot match)."""
    return read_pattern(pattern)[1]


def _literal(ch: str) -> str | None:
    """``ch`` as a case-insensitive search compares it (lower case ASCII, a character without
    case as it is), or None for a cased letter outside ASCII (its folding is not str.lower's)."""
    if ch.isascii():
        return ch.lower()
    return ch if ch.lower() == ch == ch.upper() else None


def _foreign(ch: str) -> bool:
    """A character outside ASCII that no ASCII character matches case-insensitively."""
    return not ch.isascii() and ch not in FOLDS_TO_ASCII


def _class_end(p: str, j: int) -> int:
    """The index after the class that starts at ``p[j] == "["``."""
    j += 1
    j += p[j : j + 1] == "^"
    j += p[j : j + 1] == "]"
    while j < len(p) and p[j] != "]":
        j += 2 if p[j] == "\\" else 1
    return j + 1


def _class_chars(body: str) -> tuple[str, ...] | None:
    """The characters a class of plain characters (``[?？؟]``) matches, as :func:`_literal`
    compares them; None for any other class (negated, with a range or an escape)."""
    if not body or body[0] == "^" or "-" in body or "\\" in body or "[" in body:
        return None
    out = []
    for ch in body:
        lit = _literal(ch)
        if lit is None:
            return None
        out.append(lit)
    return tuple(dict.fromkeys(out))


def _group_end(p: str, i: int) -> int:
    """The index of the ``)`` closing the group that opens at ``p[i] == "("`` (or ``len(p)``)."""
    depth, j = 0, i
    while j < len(p):
        if p[j] == "\\":
            j += 2
            continue
        if p[j] == "[":
            j = _class_end(p, j)
            continue
        if p[j] == "(":
            depth += 1
        elif p[j] == ")":
            depth -= 1
            if depth == 0:
                return j
        j += 1
    return j


def _split(body: str) -> list[str]:
    """A group's alternatives (its top-level ``|``)."""
    out, depth, start, k = [], 0, 0, 0
    while k < len(body):
        c = body[k]
        if c == "\\":
            k += 2
            continue
        if c == "[":
            k = _class_end(body, k)
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "|" and depth == 0:
            out.append(body[start:k])
            start = k + 1
        k += 1
    out.append(body[start:])
    return out


def _prefix(alt: str) -> tuple[str, bool]:
    """The literal text every match of ``alt`` starts with (lower case; up to its first optional,
    special or cased non-ASCII part), and whether every match of it holds a foreign character."""
    text: list[str] = []
    foreign = False
    k = 0
    while k < len(alt):
        c = alt[k]
        if c == "\\":
            nxt = alt[k + 1 : k + 2]
            if not nxt or nxt.isalnum():
                break
            c, k = nxt, k + 2
        elif c in _META:
            break
        else:
            k += 1
        after = alt[k : k + 1]
        if after in ("?", "*", "{"):
            break
        foreign = foreign or _foreign(c)
        lit = _literal(c)
        if lit is None:
            break
        text.append(lit)
        if after == "+":
            break
    return "".join(text), foreign


def _alternatives(body: str) -> tuple[tuple[str, ...] | None, bool]:
    """A group's requirement (the literal start of each alternative; None when one has none) and
    whether each of its alternatives needs a foreign character."""
    if body.startswith("?:"):
        body = body[2:]
    elif body.startswith("?"):  # a look-around, a named group, flags: no requirement
        return None, False
    starts = [_prefix(alt) for alt in _split(body)]
    words = tuple(w for w, _ in starts)
    return (words if all(words) else None), all(f for _, f in starts)


def read_pattern(p: str) -> tuple[tuple[tuple[str, ...], ...], bool]:
    """:func:`required` and :func:`beyond_ascii` of ``p``, read in one pass."""
    if compiled(r"\(\?[a-zA-Z]*x").match(p):  # verbose mode: spaces and # mean something else
        return (), False
    needs: list[tuple[str, ...]] = []
    cur: list[str] = []
    foreign = False

    def flush() -> None:
        if len(cur) >= 2:
            needs.append(("".join(cur),))
        cur.clear()

    i, n = 0, len(p)
    while i < n:
        c = p[i]
        if c == "\\":
            nxt = p[i + 1 : i + 2]
            if not nxt or nxt.isalnum():  # \b \w \d \s \A \Z, back references, \x41 ...: no literal
                if nxt in ("x", "u", "U", "N") or nxt.isdigit() or not nxt:
                    return (), False
                flush()
                i += 2
                continue
            ch, i = nxt, i + 2
        elif c == "[":
            flush()
            end = _class_end(p, i)
            chars = _class_chars(p[i + 1 : end - 1])
            if chars and p[end : end + 1] not in ("?", "*", "{"):  # one of its characters is there
                needs.append(chars)
            i = end
            continue
        elif c == "(":
            flush()
            end = _group_end(p, i)
            after = p[end + 1 : end + 2]
            if after == "{" or end >= n:
                return (), False
            if after not in ("?", "*"):
                words, all_foreign = _alternatives(p[i + 1 : end])
                if words is not None:
                    needs.append(words)
                foreign = foreign or all_foreign
            i = end + 1
            continue
        elif c in "|{)":
            return (), False
        elif c in _META:  # . ^ $, or a quantifier after a group or a class
            flush()
            i += 1
            continue
        else:
            ch, i = c, i + 1
        after = p[i : i + 1]
        if after == "{":
            return (), False
        if after in ("*", "?"):  # the character may be absent
            flush()
            continue
        foreign = foreign or _foreign(ch)
        lit = _literal(ch)
        if lit is None:  # a cased letter outside ASCII: compared otherwise
            flush()
            continue
        cur.append(lit)
        if after == "+":  # one or more: the run stops after its first
            flush()
    flush()
    return tuple(needs), foreign
