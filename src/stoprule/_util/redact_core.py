"""What redaction (:mod:`stoprule._util.redact`) and its judgements
(:mod:`stoprule._util.redact_judge`) share: the mark, patterns compiled on first use, the
judgement budget and the cut past it, and the two key tests both make.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

import sys

from stoprule._util.regex import compiled

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re
    from typing import Any

__all__ = ["JUDGEMENT_BUDGET", "REDACTED"]

REDACTED = "[REDACTED]"
_MARK = "[REDACTED"


def _compatible(pattern: str) -> str:
    """``pattern`` for this Python: before 3.11 ``re`` has no possessive quantifiers
    (``x*+``, ``x{m,n}+``) nor atomic groups (``(?>...)``), so their ``+`` is dropped there
    and the groups are plain ones (no match depends on them: they only spare the engine
    retries that cannot succeed; the bounded repeats keep the cost linear enough; 3.11 and
    later run them possessive)."""
    if sys.version_info >= (3, 11):
        return pattern
    out: list[str] = []
    i, n, quantified = 0, len(pattern), False
    while i < n:
        c = pattern[i]
        if c == "\\":
            out.append(pattern[i : i + 2])
            i, quantified = i + 2, False
            continue
        if c == "[":  # a class: copied whole (a ']' first in it is a literal)
            j = i + 1
            j += pattern[j : j + 1] == "^"
            j += pattern[j : j + 1] == "]"
            while j < n and pattern[j] != "]":
                j += 2 if pattern[j] == "\\" else 1
            out.append(pattern[i : j + 1])
            i, quantified = j + 1, False
            continue
        if pattern.startswith("(?>", i):
            out.append("(?:")
            i, quantified = i + 3, False
            continue
        if c == "+" and quantified:  # the possessive mark after a quantifier
            i, quantified = i + 1, False
            continue
        if c in "*+?" and not (c == "?" and out and out[-1].endswith("(")):
            out.append(c)
            i, quantified = i + 1, True
            continue
        if c == "{":
            j = pattern.find("}", i)
            if j > 0 and _re().fullmatch(r"\d*(?:,\d*)?", pattern[i + 1 : j]):
                out.append(pattern[i : j + 1])
                i, quantified = j + 1, True
                continue
        out.append(c)
        i, quantified = i + 1, False
    return "".join(out)


def _re() -> Any:
    """The ``re`` module, imported on first use: a text with nothing to redact never needs it."""
    import re

    return re


def _compile(pattern: str, flags: int = 0) -> re.Pattern[str]:
    """``pattern`` as a regex compiled on first use (see :class:`_Lazy`)."""
    lazy: re.Pattern[str] = _Lazy(pattern, flags)  # type: ignore[assignment]
    return lazy  # a regex to its users: each method is the compiled regex's own once looked up


class _Lazy:
    """A pattern compiled on first use: a short-lived process (the hook) compiles only the few
    its texts need (compiling all of them costs about 10 ms). A method looked up (``search``,
    ``sub``, ``split``, ...) is the compiled regex's own, kept on the instance: later lookups
    find it directly."""

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.pattern, self.flags = pattern, flags
        self._re: re.Pattern[str] | None = None

    def compiled(self) -> re.Pattern[str]:
        if self._re is None:
            self._re = compiled(_compatible(self.pattern), self.flags)
        return self._re

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # copy, pickle and the like: not a regex method
            raise AttributeError(name)
        method = getattr(self.compiled(), name)
        setattr(self, name, method)
        return method


# The judgement budget: a text gets at most this many Python judgements (is this value code,
# prose, a placeholder, random?) per kind of candidate. From the next candidate of that kind
# on, the rest of the text goes through one C-level substitution that redacts every candidate
# unjudged: more redaction, never less, and the cost of a text packed with candidates stays
# linear with a small constant. Ordinary text stays far below it: all 16,540 lines of the
# false-positive corpus in one text hold under 250 candidates of any kind.
JUDGEMENT_BUDGET = 2048


def _cut(rx: re.Pattern[str], text: str, secret: int = 2) -> str:
    """``text`` with group ``secret`` of every match of ``rx`` redacted, by one ``split`` (a C
    call: every group is a part, no Python call per match, unlike a ``\\1`` template)."""
    parts = rx.split(text)
    if len(parts) == 1:
        return text
    stride = rx.groups + 1
    parts[secret::stride] = [REDACTED] * (len(parts) // stride)
    return "".join(parts)


# Every alternative starts with a case-sensitive class (the ASCII letter in both cases, and
# U+017F and U+212A that fold to s and k), so the regex engine skips one whose first letter
# differs in a step.
_SECRET_KEY = _compile(
    r"(?i)(?-i:[pP])(?:(?-i:[aA])ss(?:w(?:or)?d|phrase)|(?-i:[rR])ivate[_-]?key)"
    r"|(?-i:[sS\u017f])(?:(?-i:[eE])(?:cret|ssion[_-]?(?:id|key))|(?-i:[aA])s)|(?-i:[tT])oken|(?-i:[cC])redential"
    r"|(?-i:[aA])(?:(?-i:[pP])i[_-]?key|(?-i:[cC])c(?:ess[_-]?key|ount[_-]?key)|(?-i:[uU])th)"
    r"|(?:(?-i:[_.-])|^)(?:(?-i:[pP])(?:wd|ass)|(?-i:[sS\u017f])ig(?:nature)?|(?-i:[kK\u212a])ey)$"
    r"|(?-i:P(?<=[a-z]P)(?:wd|ass)|K(?<=[a-z]K)ey)$"
)
_CONCAT = _compile(r"[ \t]*(?:[+%]|\.format\b|\.join\b)")
