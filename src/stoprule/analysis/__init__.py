"""Analysis of checked packs, apart from evaluation: ``audit`` (one pack), ``diff`` (two),
``coverage`` (a pack by its test cases) and ``explain`` (one fact). All of them read the
:class:`~stoprule.language.checked.CheckedPolicy` only.

Modules, lowest first::

    formula   hash-consed boolean formulas over finite-domain variables
    strings   witness strings per class of strings the rules cannot tell apart (globs included)
    numeric   regions of compared numbers, each with a witness
    values    concrete candidates, placeholders, fact assembly
    domain    the finite abstraction of a fact domain (variables and their values)
    explore   memoized Shannon expansion: outcomes per region, counts, examples
    queries   references, reference outcomes and rewrites over a checked pack
    audit     gaps, conflicts, dead rules, unused declarations, verdict map
    diff      verdict changes between two packs; decls: declaration changes
    encoding  the conditions as SMT terms (cvc5), and models back as facts
    solver    queries with a deadline, witness checks (reference interpreter and engine)
    solver_audit, solver_diff   audit and diff on the solver
    backends  which backend answers: exhaustive, solver, or auto
    corpus    statistics of real facts; render: plain-text output
    coverage  rule, condition and MC/DC coverage of a pack by evaluated facts
    explain   why one fact got its verdict

Nothing on the evaluation path imports this package.
"""

from __future__ import annotations

from stoprule.analysis.audit import AuditReport, Finding
from stoprule.analysis.backends import audit_pack, diff_packs
from stoprule.analysis.diff import DiffReport
from stoprule.diagnostics import AnalysisLimit

__all__ = ["AnalysisLimit", "AuditReport", "DiffReport", "Finding", "audit_pack", "diff_packs"]
