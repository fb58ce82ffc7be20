"""Table-driven test cases for a policy pack: load YAML case files, check them against an Evaluator.

``stoprule test`` runs them from the command line (docs/testing.md); tests/test_cases.py
runs the default pack's under pytest.

A case file is one YAML mapping::

    base: {...}            # optional: the fact every case starts from
    cases:
      - name: core task-boundary stop fails      # required, unique within the file
        fact: {...}        # merged over base (shallow: top-level keys replaced)
        # or: facts: [{...}, ...]   several facts that share one expectation
        without: [field]   # optional: top-level keys removed from the merged fact
        expect:            # any subset of the keys below
          verdict: continuity_failure
      - name: bad enum is rejected
        fact: {status: weird}
        expect_error: {code: fact.enum, field: status}

Each case has exactly one of ``fact`` / ``facts`` and exactly one of ``expect`` /
``expect_error``.

``expect`` keys (all optional, at least one):

- ``verdict``, ``reason``, ``rule``, ``stop``, ``message``: strings compared for
  equality with the verdict envelope;
- ``review_reason``, ``high_risk_stop``: a string, or ``null`` for none;
- ``ok``, ``requires_user_review``: booleans;
- ``matched``: rule ids that must all be among the matched rules;
- ``not_matched``: rule ids none of which may be among the matched rules;
- ``message_contains``, ``review_reason_contains``: a string, or a list of strings,
  each of which must occur in the message / review reason.

``expect_error`` keys: ``code`` (required), ``field`` and ``message_contains``
(optional): the fact must be rejected with a :class:`~stoprule.FactError` of that
code (and field, and containing that text).

Any other key in a case, in ``expect`` or in ``expect_error`` is an error when the
file is loaded: a malformed case file raises :class:`~stoprule.PolicyError` whose
diagnostics name the file, line and column.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from time import perf_counter
from typing import Any

from stoprule import codes
from stoprule._util.hints import closest
from stoprule.diagnostic import Diagnostic
from stoprule.diagnostics import EvaluationError, PolicyError
from stoprule.engine.compiled import CompiledPolicy
from stoprule.engine.evaluator import Evaluator, Verdict
from stoprule.language.source import SourceFile, parse_yaml

__all__ = [
    "Case",
    "CaseResult",
    "FactRun",
    "Mismatch",
    "check_case",
    "diff_line",
    "format_mismatches",
    "load_cases",
    "run_case",
]

PathKey = tuple[str | int, ...]

_FILE_KEYS = frozenset({"base", "cases"})
_CASE_KEYS = frozenset({"name", "fact", "facts", "without", "expect", "expect_error"})
_STR_EXPECT = ("verdict", "reason", "rule", "stop", "message")
_NULLABLE_EXPECT = ("review_reason", "high_risk_stop")
_BOOL_EXPECT = ("ok", "requires_user_review")
_LIST_EXPECT = ("matched", "not_matched")
_CONTAINS_EXPECT = {"message_contains": "message", "review_reason_contains": "review_reason"}
_EXPECT_KEYS = frozenset({*_STR_EXPECT, *_NULLABLE_EXPECT, *_BOOL_EXPECT, *_LIST_EXPECT, *_CONTAINS_EXPECT})
_ERROR_KEYS = frozenset({"code", "field", "message_contains"})


@dataclass(frozen=True)
class Case:
    """One named case: the facts to evaluate and what must come out of each."""

    name: str
    file: str
    line: int
    facts: list[dict[str, Any]]
    expect: dict[str, Any] | None
    expect_error: dict[str, Any] | None

    @property
    def id(self) -> str:
        """``file::name``, e.g. for pytest ids."""
        return f"{Path(self.file).name}::{self.name}"


@dataclass(frozen=True)
class Mismatch:
    """One expectation that did not hold for ``facts[fact_index]``."""

    fact_index: int
    key: str
    expected: Any
    actual: Any

    def __str__(self) -> str:
        return f"fact[{self.fact_index}] {self.key}: expected {self.expected!r}, got {self.actual!r}"


@dataclass(frozen=True)
class FactRun:
    """One fact of a case as evaluated: the fact as validated and its verdict, or why it was rejected."""

    index: int
    data: dict[str, Any] | None
    verdict: Verdict | None
    error: EvaluationError | None


@dataclass(frozen=True)
class CaseResult:
    """A case after running it: what differed from its expectations, and each fact's outcome."""

    case: Case
    mismatches: list[Mismatch]
    runs: list[FactRun]
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return not self.mismatches


def format_mismatches(case: Case, mismatches: list[Mismatch]) -> str:
    """A readable report of a failed case: where it is and what differed."""
    lines = [f"{case.file}:{case.line}: case {case.name!r} failed:"]
    lines += [f"  {m}" for m in mismatches]
    return "\n".join(lines)


def diff_line(case: Case, mismatches: list[Mismatch]) -> str:
    """One line for a failed case: ``file:line: FAIL name: key: expected X, got Y; ...``.

    The ``fact[i]`` prefix is kept only when the case has several facts.
    """
    several = len(case.facts) > 1
    parts = [str(m) if several else f"{m.key}: expected {m.expected!r}, got {m.actual!r}" for m in mismatches]
    return f"{case.file}:{case.line}: FAIL {case.name}: " + "; ".join(parts)


# --- loading -----------------------------------------------------------------


def _case_files(paths: Iterable[Path], diags: list[Diagnostic]) -> list[Path]:
    out: list[Path] = []
    for p in paths:
        p = Path(p)
        if p.is_dir():
            out.extend(sorted(x for x in p.glob("*.yaml") if x.is_file()))
        elif p.is_file():
            out.append(p)
        else:
            diags.append(Diagnostic(str(p), 1, 1, codes.CASES_NOT_FOUND, "no such case file or directory"))
    return out


def _is_str_list(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


class _Reader:
    """Checks one parsed case file, collecting diagnostics instead of raising."""

    def __init__(self, src: SourceFile, diags: list[Diagnostic], pack: CompiledPolicy | None = None) -> None:
        self.src = src
        self.diags = diags
        self.pack = pack

    def err(self, path: PathKey, code: str, message: str) -> None:
        self.diags.append(self.src.diag(path, code, message))

    def keys(self, data: dict[str, Any], allowed: frozenset[str], path: PathKey, what: str) -> None:
        for k in data:
            if k not in allowed:
                best = closest(str(k), allowed)
                hint = f"did you mean {best!r}?" if best else "allowed: " + ", ".join(sorted(allowed))
                self.err((*path, k), codes.CASES_UNKNOWN_KEY, f"unknown key {k!r} in {what} ({hint})")

    def read(self) -> list[Case]:
        data = self.src.data
        if not isinstance(data, dict):
            self.err((), codes.CASES_TYPE, "a case file must be a mapping with a 'cases' list")
            return []
        self.keys(data, _FILE_KEYS, (), "a case file")
        base = data.get("base", {})
        if base is None:
            base = {}
        if not isinstance(base, dict):
            self.err(("base",), codes.CASES_TYPE, "'base' must be a mapping (a fact)")
            base = {}
        entries = data.get("cases")
        if not isinstance(entries, list) or not entries:
            self.err(("cases",), codes.CASES_MISSING, "'cases' must be a non-empty list")
            return []
        out: list[Case] = []
        seen: dict[str, int] = {}
        for i, entry in enumerate(entries):
            case = self.case(entry, ("cases", i), base)
            if case is None:
                continue
            if case.name in seen:
                msg = f"case name {case.name!r} already used at line {seen[case.name]}"
                self.err(("cases", i, "name"), codes.CASES_DUPLICATE_NAME, msg)
                continue
            seen[case.name] = case.line
            out.append(case)
        return out

    def case(self, entry: Any, path: PathKey, base: dict[str, Any]) -> Case | None:
        if not isinstance(entry, dict):
            self.err(path, codes.CASES_TYPE, "a case must be a mapping")
            return None
        n = len(self.diags)
        self.keys(entry, _CASE_KEYS, path, "a case")
        name = entry.get("name")
        if not isinstance(name, str) or not name.strip():
            self.err((*path, "name"), codes.CASES_MISSING, "a case needs a non-empty string 'name'")
        facts = self.facts(entry, path, base)
        expect = expect_error = None
        if "expect" in entry:
            expect = self.expect(entry["expect"], (*path, "expect"))
        if "expect_error" in entry:
            expect_error = self.expect_error(entry["expect_error"], (*path, "expect_error"))
        if ("expect" in entry) == ("expect_error" in entry):
            self.err(path, codes.CASES_CONFLICT, "a case needs exactly one of 'expect' and 'expect_error'")
        if len(self.diags) > n:
            return None
        assert isinstance(name, str)
        return Case(name, self.src.name, self.src.where(path)[0], facts, expect, expect_error)

    def facts(self, entry: dict[str, Any], path: PathKey, base: dict[str, Any]) -> list[dict[str, Any]]:
        if ("fact" in entry) == ("facts" in entry):
            self.err(path, codes.CASES_CONFLICT, "a case needs exactly one of 'fact' and 'facts'")
            return []
        if "fact" in entry:
            raw = [entry["fact"]]
            paths: list[PathKey] = [(*path, "fact")]
        else:
            raw = entry["facts"]
            if not isinstance(raw, list) or not raw:
                self.err((*path, "facts"), codes.CASES_TYPE, "'facts' must be a non-empty list of mappings")
                return []
            paths = [(*path, "facts", j) for j in range(len(raw))]
        without = entry.get("without", [])
        if not _is_str_list(without):
            self.err((*path, "without"), codes.CASES_TYPE, "'without' must be a list of field names")
            without = []
        error = entry.get("expect_error")
        unknown_expected = isinstance(error, dict) and error.get("code") == codes.FACT_UNKNOWN_FIELD
        out = []
        for fact, fpath in zip(raw, paths, strict=True):
            if fact is None:
                fact = {}
            if not isinstance(fact, dict):
                self.err(fpath, codes.CASES_TYPE, "a fact must be a mapping")
                continue
            merged = {**base, **fact}
            for key in without:
                merged.pop(key, None)
            if self.pack is not None and not unknown_expected:
                self.known_fields(merged, fact, fpath)
            out.append(merged)
        if self.pack is not None:
            for j, key in enumerate(without):
                if self.pack.schema.root.lookup.get(key) is None:
                    hint = _hint(key, self.pack.schema.root.lookup)
                    msg = f"{key!r} is not a field of the schema{hint}"
                    self.err((*path, "without", j), codes.CASES_UNKNOWN_FIELD, msg)
        return out

    def known_fields(self, merged: dict[str, Any], fact: dict[str, Any], fpath: PathKey) -> None:
        """An unknown field in a case's fact is an error: a typo would make the case test nothing."""
        assert self.pack is not None
        try:
            warnings = self.pack.schema.warnings(merged)
        except Exception:  # noqa: BLE001 - a fact the schema refuses: running the case names the error
            return
        for w in warnings:
            if w["code"] != codes.FACT_UNKNOWN_FIELD:
                continue
            top = w["field"].split(".")[0].split("[")[0]
            where: PathKey = (*fpath, top) if top in fact else ("base", top)
            self.err(where, codes.CASES_UNKNOWN_FIELD, f"fact field {w['field']}: {w['message']}")

    def expect(self, exp: Any, path: PathKey) -> dict[str, Any] | None:
        if not isinstance(exp, dict) or not exp:
            self.err(path, codes.CASES_TYPE, "'expect' must be a non-empty mapping")
            return None
        self.keys(exp, _EXPECT_KEYS, path, "'expect'")
        for key, v in exp.items():
            kpath = (*path, key)
            if key in _STR_EXPECT and not isinstance(v, str):
                self.err(kpath, codes.CASES_TYPE, f"'{key}' must be a string")
            elif key in _BOOL_EXPECT and not isinstance(v, bool):
                self.err(kpath, codes.CASES_TYPE, f"'{key}' must be true or false")
            elif key in _LIST_EXPECT and not _is_str_list(v):
                self.err(kpath, codes.CASES_TYPE, f"'{key}' must be a list of rule ids")
            elif key in _CONTAINS_EXPECT and not (isinstance(v, str) or (_is_str_list(v) and v)):
                self.err(kpath, codes.CASES_TYPE, f"'{key}' must be a string or a list of strings")
            elif key in _NULLABLE_EXPECT and not (v is None or isinstance(v, str)):
                self.err(kpath, codes.CASES_TYPE, f"'{key}' must be a string or null")
            elif self.pack is not None:
                self.known_names(key, v, kpath)
        return dict(exp)

    def known_names(self, key: str, value: Any, path: PathKey) -> None:
        """Verdict kinds, rule ids and stops the pack does not declare are errors, with a did-you-mean."""
        assert self.pack is not None
        rules = [r.id for r in self.pack.rules]
        known = {
            "verdict": ("verdict kind", list(self.pack.verdicts)),
            "rule": ("rule", rules),
            "matched": ("rule", rules),
            "not_matched": ("rule", rules),
            "stop": ("stop", ["allow", "block"]),
            "high_risk_stop": ("high-risk stop", [s.id for s in self.pack.stops]),
        }.get(key)
        if known is None or value is None:
            return
        what, names = known
        values = value if isinstance(value, list) else [value]
        for j, name in enumerate(values):
            if name not in names:
                where = (*path, j) if isinstance(value, list) else path
                self.err(where, codes.CASES_UNKNOWN_NAME, f"{what} {name!r} is not in the pack{_hint(name, names)}")

    def expect_error(self, exp: Any, path: PathKey) -> dict[str, Any] | None:
        if not isinstance(exp, dict):
            self.err(path, codes.CASES_TYPE, "'expect_error' must be a mapping with at least 'code'")
            return None
        self.keys(exp, _ERROR_KEYS, path, "'expect_error'")
        if not isinstance(exp.get("code"), str):
            self.err((*path, "code"), codes.CASES_MISSING, "'expect_error' needs a string 'code'")
        for key in ("field", "message_contains"):
            if key in exp and not isinstance(exp[key], str):
                self.err((*path, key), codes.CASES_TYPE, f"'{key}' must be a string")
        return dict(exp)


def _hint(name: str, known: Iterable[str]) -> str:
    best = closest(str(name), known)
    return f" (did you mean {best!r}?)" if best else ""


def load_cases(paths: Iterable[Path], pack: CompiledPolicy | None = None) -> list[Case]:
    """Load every case of the given files (a directory means its ``*.yaml``, sorted).

    With ``pack``, the cases are also checked against it: a fact field its schema does not
    know (unless the case expects ``fact.unknown_field``), and a verdict kind, rule id or
    stop it does not declare, are errors (``cases.unknown_field``, ``cases.unknown_name``).
    Raises :class:`PolicyError` listing every problem if any file is malformed.
    """
    diags: list[Diagnostic] = []
    cases: list[Case] = []
    for path in _case_files(paths, diags):
        name = str(path)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            diags.append(Diagnostic(name, 1, 1, codes.CASES_UNREADABLE, str(exc)))
            continue
        n = len(diags)
        src = parse_yaml(name, text, diags)
        if len(diags) > n:
            continue
        cases.extend(_Reader(src, diags, pack).read())
    if diags:
        raise PolicyError(diags)
    return cases


# --- checking ----------------------------------------------------------------


def _check_verdict(i: int, exp: dict[str, Any], v: Verdict) -> list[Mismatch]:
    out: list[Mismatch] = []
    for key in (*_STR_EXPECT, *_NULLABLE_EXPECT, *_BOOL_EXPECT):
        if key in exp and getattr(v, key) != exp[key]:
            out.append(Mismatch(i, key, exp[key], getattr(v, key)))
    rules = [m.rule for m in v.matched]
    if "matched" in exp:
        missing = [r for r in exp["matched"] if r not in rules]
        if missing:
            out.append(Mismatch(i, "matched", missing, rules))
    if "not_matched" in exp:
        present = [r for r in exp["not_matched"] if r in rules]
        if present:
            out.append(Mismatch(i, "not_matched", present, rules))
    for key, attr in _CONTAINS_EXPECT.items():
        if key not in exp:
            continue
        wanted = [exp[key]] if isinstance(exp[key], str) else exp[key]
        text = getattr(v, attr) or ""
        for part in wanted:
            if part not in text:
                out.append(Mismatch(i, key, part, text))
    return out


def _check_error(i: int, exp: dict[str, Any], err: EvaluationError) -> list[Mismatch]:
    out: list[Mismatch] = []
    if err.code != exp["code"]:
        out.append(Mismatch(i, "error.code", exp["code"], err.code))
    if "field" in exp and err.field != exp["field"]:
        out.append(Mismatch(i, "error.field", exp["field"], err.field))
    if "message_contains" in exp and exp["message_contains"] not in err.message:
        out.append(Mismatch(i, "error.message_contains", exp["message_contains"], err.message))
    return out


def run_case(evaluator: Evaluator, case: Case) -> CaseResult:
    """Evaluate every fact of ``case``: its mismatches (none: it passes) and each fact's outcome."""
    start = perf_counter()
    out: list[Mismatch] = []
    runs: list[FactRun] = []
    for i, fact in enumerate(case.facts):
        try:
            verdict = evaluator.evaluate(fact)
        except EvaluationError as err:
            runs.append(FactRun(i, None, None, err))
            if case.expect_error is None:
                out.append(Mismatch(i, "error", None, str(err)))
            else:
                out.extend(_check_error(i, case.expect_error, err))
            continue
        runs.append(FactRun(i, evaluator.validate(fact), verdict, None))
        if case.expect_error is not None:
            got = f"{verdict.verdict}/{verdict.reason}"
            out.append(Mismatch(i, "error", case.expect_error, got))
        elif case.expect is not None:
            out.extend(_check_verdict(i, case.expect, verdict))
    return CaseResult(case, out, runs, perf_counter() - start)


def check_case(evaluator: Evaluator, case: Case) -> list[Mismatch]:
    """Evaluate every fact of ``case``; the mismatches found (empty: the case passes)."""
    return run_case(evaluator, case).mismatches
