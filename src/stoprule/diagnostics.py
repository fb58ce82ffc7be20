"""Errors as values: one diagnostic type for policies, one error tree, the exit codes.

Every error stoprule raises on purpose is a :class:`StopruleError`; each package raises its own
branch. The class carries the command's exit code (``exit_code``) and what the command line
prints for it (:meth:`StopruleError.report`): one handler, in ``cli/main.run``, turns any of them
into that text on standard error and that code::

    StopruleError              exit 2 unless said otherwise
     ├── PolicyError           language: a pack that does not load or compile (carries Diagnostics:
     │                         stoprule.diagnostic, built only when something is wrong)
     │    └── ConfigError      config: a config file that does not validate
     ├── CheckError            language: one condition argument refused (becomes a Diagnostic)
     ├── EvaluationError       facts, engine: one fact could not be decided (code, message, field, line)
     │    ├── FactError        the fact does not validate against the pack's schema
     │    └── NoRuleMatched    a valid fact no rule decides (a gap in the pack: policy.no_rule)
     ├── QuantifierError       engine: an ``every`` the engine cannot evaluate (lowering, a Diagnostic)
     ├── AnalysisError         analysis
     │    ├── AnalysisLimit    a pack beyond what audit/diff can represent exactly
     │    ├── OutOfTime        (analysis.deadline) the analysis ran past its time limit
     │    └── SolverUnknown    (analysis.solver) the solver could not decide a query
     ├── LedgerError           (ledger.errors) a ledger or retry token problem
     │    └── TokenError
     ├── AgentError            agent: a hook payload, session state, the decision server, the blockers record
     ├── ServeError            serve: a request refused with an HTTP status and an error code
     ├── CommandTimeout        (_util.command) a command still running at its deadline
     └── CommandError          cli: a command that cannot do what it was asked (exit 2, or 1: nothing found)

A file that cannot be read stays an ``OSError`` (``_util.files``' ``NotRegular`` and
``FileTooLarge`` too), so one ``except OSError`` covers every cause. A module may signal
inside itself with a private exception (``_Bail``) that never leaves it. The did-you-mean hints
of the messages are :mod:`stoprule._util.hints`.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

from stoprule import codes

TYPE_CHECKING = False
if TYPE_CHECKING:
    from stoprule.diagnostic import Diagnostic

__all__ = [
    "EXIT_INVALID",
    "EXIT_NOT_OK",
    "EXIT_OK",
    "MAX_DIAGNOSTICS",
    "AgentError",
    "AnalysisError",
    "AnalysisLimit",
    "CheckError",
    "CommandError",
    "ConfigError",
    "EvaluationError",
    "FactError",
    "NoRuleMatched",
    "PolicyError",
    "QuantifierError",
    "ServeError",
    "StopruleError",
]

# The command line's exit codes (docs/cli.md): every verdict ok (or the command did what it was
# asked); at least one verdict not ok (or what was asked for is not there); invalid input,
# policy, config or usage (the message on standard error).
EXIT_OK = 0
EXIT_NOT_OK = 1
EXIT_INVALID = 2

MAX_DIAGNOSTICS = 50


class StopruleError(Exception):
    """Base of every error stoprule raises on purpose."""

    exit_code: int = EXIT_INVALID

    def report(self) -> str:
        """What the command line prints on standard error for this error (no final newline)."""
        return f"stoprule: {self}"


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

    def report(self) -> str:
        return self.render()


class ConfigError(PolicyError):
    """A config file (``.stoprule/config.yaml``, the serve file) that does not validate (file, line, key)."""


class CheckError(StopruleError, ValueError):
    """An operator argument that does not fit the field (message for the user); ``code``
    is the diagnostic code (``condition.type``, or ``limit.*`` for a literal beyond a limit)."""

    def __init__(self, message: str, code: str = codes.CONDITION_TYPE) -> None:
        super().__init__(message)
        self.code = code


class QuantifierError(StopruleError, ValueError):
    """An ``every`` body the engine cannot evaluate correctly."""


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
        message = "no rule matched this fact and the pack has no catch-all rule"
        super().__init__(codes.POLICY_NO_RULE, message, line=line)


class AnalysisError(StopruleError):
    """An analysis (audit, diff, coverage) that cannot answer exactly."""


class AnalysisLimit(AnalysisError):
    """The pack is beyond what the analysis can represent exactly (message for the user)."""


class AgentError(StopruleError):
    """Something of the agent surface failed: a hook payload, session state, the decision server,
    the blockers record (the message names what)."""


class ServeError(StopruleError):
    """A request the decision service refuses: its HTTP ``status``, an error ``code``, the message."""

    def __init__(self, status: int, code: str, message: str, **extra: object) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.extra = status, code, message, extra


class CommandError(StopruleError):
    """A command that cannot do what it was asked: the message for the user, and its exit code
    (:data:`EXIT_INVALID` for bad usage or input, :data:`EXIT_NOT_OK` when what was asked for is
    not there)."""

    def __init__(self, message: str, exit_code: int = EXIT_INVALID) -> None:
        super().__init__(message)
        self.exit_code = exit_code
