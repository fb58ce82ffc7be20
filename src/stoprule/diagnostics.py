"""Errors as values: one diagnostic type for policies, one error type per kind of mistake.

StopruleError
 ├── PolicyError          a pack that does not load or compile (carries Diagnostics)
 │    └── ConfigError     a project's .stoprule/config.yaml that does not validate
 ├── EvaluationError      one fact could not be decided (code, message, field, line)
 │    ├── FactError       the fact does not validate against the pack's schema
 │    └── NoRuleMatched   a valid fact no rule decides (a gap in the pack: policy.no_rule)
 ├── AnalysisLimit        a pack beyond what audit/diff can represent exactly
 └── LedgerError          (stoprule.ledger) a ledger or retry token problem

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

from stoprule._util.records import record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = [
    "MAX_DIAGNOSTICS",
    "AnalysisLimit",
    "ConfigError",
    "Diagnostic",
    "EvaluationError",
    "FactError",
    "NoRuleMatched",
    "PolicyError",
    "StopruleError",
    "closest",
    "unknown_hint",
]

MAX_DIAGNOSTICS = 50

_BREAKS = {c: f"\\x{c:02x}" for c in (*range(0x20), 0x7F, 0x85)} | {0x2028: "\\u2028", 0x2029: "\\u2029"}


def one_line(text: str) -> str:
    """``text`` printable on one line in any encoding: control and line-separator characters
    escaped, lone surrogates (undecodable file names) shown as ``\\udcxx``."""
    text = text.translate(_BREAKS)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def closest(name: str, known: Iterable[str], cutoff: float = 0.6) -> str | None:
    """The known name ``name`` most likely misspells (case-insensitive), or None."""
    import difflib

    names = {k.lower(): k for k in known if isinstance(k, str)}
    best = difflib.get_close_matches(str(name).lower(), list(names), n=1, cutoff=cutoff)
    return names[best[0]] if best else None


def unknown_hint(name: str, known: Iterable[str], *, listed: int = 16) -> str:
    """What follows ``unknown X 'name'``: `` (did you mean 'y'?)`` when one known name is close,
    else the known names (the first ``listed`` of them), or `` (none declared)``."""
    names = sorted(known)
    best = closest(name, names)
    if best is not None:
        return f" (did you mean {best!r}?)"
    if not names:
        return " (none declared)"
    more = f", and {len(names) - listed} more" if len(names) > listed else ""
    return f" (known: {', '.join(names[:listed])}{more})"


@record
class Diagnostic:
    """One thing wrong with a policy pack, at a source location (sorts by location)."""

    file: str
    line: int
    column: int
    code: str
    message: str
    path: str = ""

    def format(self) -> str:
        """``file:line:column: code: message (at path)``, always exactly one line."""
        where = f" (at {one_line(self.path)})" if self.path else ""
        return f"{one_line(self.file)}:{self.line}:{self.column}: {self.code}: {one_line(self.message)}{where}"

    def to_dict(self) -> dict[str, object]:
        return {
            "file": one_line(self.file),
            "line": self.line,
            "column": self.column,
            "code": self.code,
            "message": one_line(self.message),
            "path": one_line(self.path),
        }


class StopruleError(Exception):
    """Base of every error stoprule raises on purpose."""


class PolicyError(StopruleError):
    """A pack failed to load or compile; ``diagnostics`` is sorted and capped."""

    def __init__(self, diagnostics: list[Diagnostic], *, total: int | None = None) -> None:
        ordered = sorted(set(diagnostics))  # a named condition used twice reports its mistake once
        self.total = total if total is not None else len(ordered)
        self.diagnostics = ordered[:MAX_DIAGNOSTICS]
        super().__init__(self.render())

    def render(self) -> str:
        lines = [d.format() for d in self.diagnostics]
        if self.total > len(self.diagnostics):
            lines.append(f"... and {self.total - len(self.diagnostics)} more")
        return "\n".join(lines)


class ConfigError(PolicyError):
    """A project's ``.stoprule/config.yaml`` that does not validate (file, line, key)."""


class EvaluationError(StopruleError):
    """A fact that cannot be decided: what is wrong, which field, which input line."""

    def __init__(
        self,
        code: str,
        message: str,
        field: str = "",
        line: int | None = None,
        extra: dict[str, object] | None = None,
    ) -> None:
        super().__init__(code, message)
        self.code = code
        self.message = message
        self.field = field
        self.line = line
        self.extra: dict[str, object] = extra if extra is not None else {}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.code!r}, {self.message!r}, field={self.field!r}, line={self.line!r})"

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and (self.code, self.message, self.field, self.line) == (
            other.code,
            other.message,
            other.field,
            other.line,
        )

    __hash__ = Exception.__hash__

    def __str__(self) -> str:
        where = f"line {self.line}: " if self.line is not None else ""
        at = f"{self.field}: " if self.field else ""
        return f"{where}{self.code}: {at}{self.message}"

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"code": self.code, "message": self.message}
        if self.field:
            out["field"] = self.field
        if self.line is not None:
            out["line"] = self.line
        return out


class FactError(EvaluationError):
    """A fact that does not validate against the pack's fact schema."""


class NoRuleMatched(EvaluationError):
    """A valid fact that no rule of the pack decides (the pack has a gap and no catch-all)."""

    def __init__(self, line: int | None = None) -> None:
        super().__init__("policy.no_rule", "no rule matched this fact and the pack has no catch-all rule", line=line)


class AnalysisLimit(StopruleError):
    """The pack is beyond what the analysis can represent exactly (message for the user)."""
