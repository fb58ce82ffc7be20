"""Plain-text (``--format pretty``) rendering of audit and diff reports."""

from __future__ import annotations

import json
from typing import Any

from stoprule.analysis.audit import AuditReport
from stoprule.analysis.diff import DiffReport

__all__ = ["render_audit", "render_diff"]

KINDS = {
    "gap": "GAP",
    "conflict": "CONFLICT",
    "dead_rule": "DEAD RULE",
    "unsatisfiable": "UNSATISFIABLE",
    "unused": "UNUSED",
    "unused_field": "UNREAD FIELD",
}


def _pct(x: float | None) -> str:
    if x is None:
        return "-"
    if x == 0:
        return "0%"
    if x < 0.001:
        return "<0.1%"
    return f"{x * 100:.1f}%"


def _fact(fact: Any) -> str:
    return json.dumps(fact, separators=(", ", ": "))


def _table(rows: list[list[str]], indent: str = "  ") -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [indent + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]


def _finding(f: dict[str, Any]) -> list[str]:
    head = f"  {KINDS.get(f['kind'], f['kind']):<14}{f['location']}  {f['message']}"
    out = [head]
    pad = " " * 16
    if f.get("region"):
        out.append(f"{pad}where:")
        out += [f"{pad}  {line}" for line in f["region"]]
    if "example" in f:
        out.append(f"{pad}example: {_fact(f['example'])}")
    for r in f.get("regions") or []:
        out.append(f"{pad}where: " + "; ".join(r["region"]))
    for s in f.get("shadowed_by") or []:
        share = "" if s["share_of_region"] is None else f" in {_pct(s['share_of_region'])} of its region"
        out.append(
            f"{pad}beaten by {s['rule']} ({s['location']}, priority {s['priority']}){share}, e.g. {_fact(s['example'])}"
        )
    return out


def render_audit(report: AuditReport) -> str:
    d = report.to_dict()
    dom = d["domain"]
    head = f"stoprule audit: {d['name']} ({d['pack']}, {d['policy'][:19]}...)"
    solver = report.backend == "solver"
    if solver:
        where = f"solver backend ({dom.get('solver', 'z3')}): {dom['variables']} variables, {dom['queries']} queries"
    else:
        where = f"domain: {dom['variables']} variables, {dom['cells']:.3g} abstract cells, "
        where += f"{dom['states']} states explored"
    out = [head, where, ""]
    if report.unanswered:
        out.append(f"stopped after {report.timeout:g} s: these questions were not answered:")
        out += [f"  - {q}" for q in report.unanswered]
        out.append("")
    if report.bugs:
        out.append(f"Internal errors ({len(report.bugs)}): witnesses that do not reproduce (a bug in stoprule):")
        out += [f"  {b['question']}: {b['problem']}; fact {_fact(b['fact'])}" for b in report.bugs]
        out.append("")
    if d["findings"]:
        out.append(f"Findings ({len(d['findings'])}):")
        for f in d["findings"]:
            out += _finding(f)
    else:
        out.append("Findings: none (no gap, conflict, dead rule or unused declaration)")
    out += [
        "",
        "Verdict map (verdicts that can be reached; the solver counts no shares):"
        if solver
        else "Verdict map (share of the abstract domain):",
    ]
    rows = [["verdict/reason", "share", "won by"]]
    for v in d["verdict_map"]:
        label = f"{v['verdict']}/{v['reason']}" if v["verdict"] else "(no rule: gap)"
        rules = ", ".join(r["rule"] + (" (catch-all)" if r["catch_all"] else "") for r in v["rules"])
        rows.append([label, _pct(v["share"]), rules])
    out += _table(rows)
    if d["notes"]:
        out += ["", f"Notes ({len(d['notes'])}, not findings):"]
        out += [f"  {n['location']}  {n['message']}" for n in d["notes"]]
    if report.corpus is not None:
        out += ["", *_corpus(report.corpus)]
    out += ["", f"audit took {report.seconds:.2f} s"]
    return "\n".join(out)


def _corpus(c: dict[str, Any]) -> list[str]:
    out = [f"Corpus {c['file']}: {c['facts']} facts, {c['evaluated']} evaluated, {len(c['invalid'])} invalid"]
    rows = [["rule", "matched", "won"]] + [[r["rule"], str(r["matched"]), str(r["won"])] for r in c["rules"]]
    out += _table(rows)
    counts = ", ".join(f"{v['verdict']}/{v['reason']} {v['count']}" for v in c["verdicts"])
    out.append("  verdicts: " + (counts or "none"))
    out.append("  never matched: " + (", ".join(c["never_matched"]) or "none"))
    out.append("  never won: " + (", ".join(c["never_won"]) or "none"))
    lines = ", ".join(map(str, c["fell_through"][:20])) + (" ..." if len(c["fell_through"]) > 20 else "")
    out.append(f"  fell through to the catch-all ({', '.join(c['catch_all']) or 'none'}): {lines or 'none'}")
    if c["no_rule"]:
        out.append("  matched no rule (policy.no_rule) on lines: " + ", ".join(map(str, c["no_rule"])))
    for e in c["invalid"]:
        where = f"{e['field']}: " if e.get("field") else ""
        out.append(f"  invalid: line {e['line']}: {e['code']}: {where}{e['message']}")
    return out


def render_diff(report: DiffReport) -> str:
    d = report.to_dict()
    out = [f"stoprule diff: {d['old']['pack']} -> {d['new']['pack']}"]
    if d["schema_notes"]:
        out.append("fact schemas differ; compared over their union:")
        out += [f"  {n}" for n in d["schema_notes"]]
    out.append("")
    if d["changes"]:
        share = "" if d["changed_share"] is None else f", {_pct(d['changed_share'])} of the domain"
        out.append(f"Verdict changes ({len(d['changes'])} groups{share}):")
        for c in d["changes"]:
            out.append(f"  {c['title']}  ({_pct(c['share'])})")
            for r in c["rules"]:
                old = r["old_rule"]["rule"] if r["old_rule"] else "(no rule)"
                new = r["new_rule"]["rule"] if r["new_rule"] else "(no rule)"
                out.append(f"      {old} -> {new}  ({_pct(r['share'])}), e.g. {_fact(r['example']['fact'])}")
            for reg in c["regions"]:
                out.append("      where: " + "; ".join(reg["region"]))
    else:
        out.append("Verdict changes: none (every fact gets the same verdict and reason)")
    if report.unanswered:
        out.append(f"stopped after {report.timeout} s: not answered: " + "; ".join(report.unanswered))
    decl = d["declarations"]
    out += ["", "Declarations:"]
    lines = [f"  + {a['section']}: {a['name']}" for a in decl["added"]]
    lines += [f"  - {r['section']}: {r['name']}" for r in decl["removed"]]
    for c in decl["changed"]:
        parts = []
        for det in c["details"]:
            where = det["path"] or "value"
            if "old" in det:
                parts.append(f"{where}: {_fact(det['old'])} -> {_fact(det['new'])}")
            else:
                if "removed" in det:
                    parts.append(f"{where}: removed {_fact(det['removed'])}")
                if "added" in det:
                    parts.append(f"{where}: added {_fact(det['added'])}")
        lines.append(f"  ~ {c['section']}: {c['name']}: " + "; ".join(parts))
    lines += [f"  > {m['section']}: {m['what']} moved from {m['from']} to {m['to']}" for m in decl["moved"]]
    out += lines or ["  none changed"]
    out += ["", f"diff took {report.seconds:.2f} s"]
    return "\n".join(out)
