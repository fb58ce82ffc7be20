"""Static analysis of packs, apart from evaluation: ``audit`` (one pack) and ``diff`` (two).

Modules, lowest first::

    formula   hash-consed boolean formulas over finite-domain variables
    strings   witness strings per class of strings the rules cannot tell apart (globs included)
    numeric   regions of compared numbers, each with a witness
    values    concrete candidates, placeholders, fact assembly
    domain    the finite abstraction of a fact domain (variables and their values)
    explore   memoized Shannon expansion: outcomes per region, counts, examples
    pack      locations, references and rewrites over a compiled pack
    audit     gaps, conflicts, dead rules, unused declarations, verdict map
    diff      verdict changes between two packs; decls: declaration changes
    corpus    statistics of real facts; render: plain-text output

Nothing on the evaluation path imports this package.
"""

from __future__ import annotations

from .audit import AuditReport, Finding, audit_pack
from .diff import DiffReport, diff_packs
from .strings import AnalysisLimit

__all__ = ["AnalysisLimit", "AuditReport", "DiffReport", "Finding", "audit_pack", "diff_packs"]
