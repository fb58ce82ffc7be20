"""Blocked reports: judged by the pack, saved per task, rendered for people.

A report is judged by evaluating a fact built from it and the session's ``turn`` /
``max_turns`` with the same pack that gates the stop. The rules that match only
because the report is there, and whose verdict is not ok, are its problems; each is
returned with its rule, reason and rendered message, and, for a rule about entries of
a list section, the offending entries (found by evaluating each entry on its own).
Nothing here names a section or category: the pack decides what is wrong.
"""

from __future__ import annotations

import json
import os
import re
import textwrap
from dataclasses import dataclass, field
from typing import Any

from stoprule._util.files import atomic_write, read_bounded
from stoprule._util.redact import redact_obj
from stoprule._util.text import clean_obj
from stoprule.config.fields import FIELDS, REPORT_SECTIONS
from stoprule.diagnostics import EvaluationError
from stoprule.engine.evaluator import Evaluator
from stoprule.language.templates import render

__all__ = ["Problem", "ReportCheck", "check_report", "load_report", "render_report", "report_path", "save_report",
           "succeeded"]  # fmt: skip

_TASK = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")  # fullmatch: no trailing newline


@dataclass(frozen=True)
class Problem:
    rule: str
    reason: str
    message: str
    entries: list[str] = field(default_factory=list)  # e.g. "blocking_issues[1]: {...}"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"rule": self.rule, "reason": self.reason, "message": self.message}
        if self.entries:
            out["entries"] = self.entries
        return out

    def text(self) -> str:
        return self.message + ("" if not self.entries else " Wrong entries: " + "; ".join(self.entries) + ".")


@dataclass(frozen=True)
class ReportCheck:
    ok: bool
    problems: list[Problem]
    fact: dict[str, Any]


def _judging_turns(turn: int | None, max_turns: int | None) -> tuple[int, int]:
    """The session's turn and max_turns; a report filed before the escape-hatch window
    (or with the turns unknown) is judged as at the window's first turn."""
    if max_turns is None:
        max_turns = 3
    if turn is None or turn < max_turns - 2:
        turn = max_turns - 2
    return turn, max_turns


def _names(ev: Evaluator, fact: dict[str, Any]) -> set[str]:
    return {r.id for r in ev.matched_rules(fact)}


def check_report(
    ev: Evaluator, report: dict[str, Any], turn: int | None = None, max_turns: int | None = None
) -> ReportCheck:
    """Judge ``report`` with the pack; ``ok`` when no rule objects to it."""
    key, tkey, mkey = FIELDS["blocked_report"], FIELDS["turn"], FIELDS["max_turns"]
    t, m = _judging_turns(turn, max_turns)
    fact = {key: report, tkey: t, mkey: m}
    try:
        data = ev.validate(fact)
        with_report = ev.matched_rules(fact)
    except EvaluationError as exc:
        where = exc.extra.get("field") if hasattr(exc, "extra") else None
        msg = str(exc) + (f" (field {where})" if where and str(where) not in str(exc) else "")
        return ReportCheck(False, [Problem("schema", "invalid_fact", msg)], fact)
    without = _names(ev, {tkey: t, mkey: m})
    verdicts = ev.compiled.verdicts
    problems: list[Problem] = []
    for rule in with_report:
        if rule.id in without or verdicts[rule.verdict].ok:
            continue
        message = render(rule.message, data, ev.compiled.sets)
        problems.append(Problem(rule.id, rule.reason, message, _blame(ev, fact, key, rule.id)))
    return ReportCheck(not problems, problems, fact)


def _blame(ev: Evaluator, fact: dict[str, Any], key: str, rule: str) -> list[str]:
    """Entries of a list section that alone make ``rule`` match (none if it is not about entries)."""
    report = fact[key]
    out: list[str] = []
    for section, value in report.items():
        if not isinstance(value, list) or not value:
            continue
        try:
            if rule in _names(ev, {**fact, key: {**report, section: []}}):
                continue  # the rule does not depend on this section's entries
            for i, entry in enumerate(value):
                if rule in _names(ev, {**fact, key: {**report, section: [entry]}}):
                    out.append(f"{section}[{i}]: {json.dumps(entry, ensure_ascii=False)}")
        except EvaluationError:
            continue
    return out


def check_task_id(task: str) -> str | None:
    """An error message if ``task`` cannot name a report folder, else None."""
    if not isinstance(task, str) or not _TASK.fullmatch(task) or ".." in task:
        return (
            f"task id {task!r} cannot name a report folder: use letters, digits, '.', '_' or '-'"
            " (at most 128, starting with a letter or digit)"
        )
    return None


def report_path(project_dir: str, task: str) -> str:
    return os.path.join(project_dir, ".stoprule", "reports", task, "blocked_report.json")


def save_report(project_dir: str, task: str, report: dict[str, Any], meta: dict[str, Any]) -> str:
    """Write ``.stoprule/reports/<task>/blocked_report.json`` atomically; returns its path.

    The file holds the four sections at the top level and ``_meta`` (task, session,
    turn, max_turns, filed_at). Raises ``OSError`` if it cannot be written."""
    path = report_path(project_dir, task)
    body = redact_obj(clean_obj({**{k: report[k] for k in report}, "_meta": meta}))
    atomic_write(path, json.dumps(body, ensure_ascii=False, indent=2) + "\n")
    return path


def load_report(project_dir: str, task: str | None = None) -> tuple[str, dict[str, Any]] | None:
    """``(task, report)`` for ``task``, or the most recently filed report; None if there is none."""
    base = os.path.join(project_dir, ".stoprule", "reports")
    if task is not None:
        candidates = [task] if check_task_id(task) is None else []
    else:
        try:
            candidates = sorted(os.listdir(base), key=lambda t: _mtime(report_path(project_dir, t)), reverse=True)
        except OSError:
            candidates = []
    for t in candidates:
        try:
            data = json.loads(read_bounded(report_path(project_dir, t), 4 << 20))
        except (OSError, ValueError, RecursionError):
            continue
        if isinstance(data, dict):
            return t, data
    return None


def _mtime(path: str) -> float:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return -1.0


def succeeded(result: Any) -> bool:
    """Whether an attempt's ``result`` says it worked."""
    return str(result).strip().lower() in ("success", "succeeded", "passed", "ok", "done")


def render_report(report: dict[str, Any], width: int = 68) -> str:
    """The "Task Blocked - Structured Report", as plain text."""
    title = "Task Blocked - Structured Report"
    inner = max(width, len(title) + 4)
    pad = inner - len(title)
    lines = ["╭" + "─" * inner + "╮", "│" + " " * (pad // 2) + title + " " * (pad - pad // 2) + "│",
             "╰" + "─" * inner + "╯", ""]  # fmt: skip
    issues, attempts, alternatives, action = (report.get(s) for s in REPORT_SECTIONS)
    lines.append("Blocking Issues:")
    for issue in issues if isinstance(issues, list) else []:
        issue = issue if isinstance(issue, dict) else {"issue": str(issue)}
        lines.append(f"  • [{issue.get('category', '?')}] {issue.get('issue', '')}")
        if issue.get("location"):
            lines.append(f"    Location: {issue['location']}")
        if issue.get("details"):
            lines.append(f"    Details: {issue['details']}")
        lines.append("")
    if lines[-1] != "":
        lines.append("")
    lines.append("Attempts Made:")
    for att in attempts if isinstance(attempts, list) else []:
        att = att if isinstance(att, dict) else {"action": str(att)}
        mark = "✓" if succeeded(att.get("result")) else "✗"
        lines.append(f"  Turn {att.get('turn', '?')}: {mark} {att.get('action', '')}")
        if att.get("why_failed"):
            lines.append(f"    → {att['why_failed']}")
    lines += ["", "Suggested Alternatives:"]
    for alt in alternatives if isinstance(alternatives, list) else []:
        lines.append(f"  • {alt}")
    lines += ["", "Human Action Required:"]
    text = action if isinstance(action, str) and action.strip() else "Review worktree and determine next steps"
    lines += textwrap.wrap(text, width=width, initial_indent="  ", subsequent_indent="  ") or ["  "]
    return "\n".join(lines) + "\n"
