"""``stoprule inspect``: what a pack declares, as tables or JSON (like ``opa inspect``).

Rules (by precedence: priority, then declaration order), verdict kinds, sets, high-risk stops,
named conditions, the fact schema, and the layering: which files come from the global pack,
which global files the pack shadows, and where a global rule and a pack rule share a priority.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import IO, Any

from stoprule.cli.common import add_policy_flags, policy_error
from stoprule.cli.style import styled
from stoprule.diagnostics import CommandError, PolicyError, unknown_hint
from stoprule.engine.packs import select_pack
from stoprule.language.compiler import check_pack
from stoprule.language.files import GLOBAL_PREFIX, layers

__all__ = ["SECTIONS", "add_arguments", "inspect_data", "layering", "run"]

SECTIONS = ("rules", "verdicts", "sets", "stops", "conditions", "schema", "layers")


def _where(loc: Any) -> str:
    return f"{loc.file}:{loc.line}"


def _fields(field: Any, prefix: str = "") -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for name, f in field.fields.items():
        path = f"{prefix}{name}"
        kind = f.type
        if f.type == "enum":
            kind = "enum(" + "|".join(f.values) + ")"
        elif f.type == "list" and f.items is not None:
            kind = f"list of {f.items.type}"
        out.append({
            "field": path,
            "type": kind,
            "required": f.required,
            "nullable": f.nullable,
            "default": f.default if f.has_default else None,
            "aliases": list(f.aliases),
            "description": f.description or "",
        })  # fmt: skip
        if f.type == "object":
            out += _fields(f, path + ".")
        elif f.type == "list" and f.items is not None and f.items.type == "object":
            out += _fields(f.items, path + "[].")
    return out


def inspect_data(checked: Any, root: str) -> dict[str, Any]:
    """Everything ``inspect`` shows, as JSON-ready data."""
    used, shadowed, glob = layers(root)
    verdicts = checked.verdicts
    order = sorted(checked.rules, key=lambda r: (-r.priority, r.index))
    rules = [
        {
            "rule": r.id,
            "priority": r.priority,
            "verdict": r.verdict,
            "reason": r.reason,
            "stop": verdicts[r.verdict].stop if r.verdict in verdicts else None,
            "ok": verdicts[r.verdict].ok if r.verdict in verdicts else None,
            "layer": "global" if r.loc.file.startswith(GLOBAL_PREFIX) else "pack",
            "where": _where(r.loc),
        }
        for r in order
    ]
    ties: list[dict[str, Any]] = []  # a global and a pack rule at one priority: declaration order decides
    by_priority: dict[int, list[dict[str, Any]]] = {}
    for r in rules:
        by_priority.setdefault(r["priority"], []).append(r)
    for priority, group in sorted(by_priority.items(), reverse=True):
        if {r["layer"] for r in group} == {"global", "pack"}:
            ties.append({"priority": priority, "rules": [r["rule"] for r in group], "wins": group[0]["rule"]})
    return {
        "pack": root,
        "name": checked.name,
        "digest": checked.digest,
        "files": list(checked.files),
        "rules": rules,
        "verdicts": [
            {"verdict": v.name, "ok": v.ok, "stop": v.stop, "requires_user_review": v.requires_user_review,
             "retryable": v.retryable, "where": _where(v.loc)}
            for v in verdicts.values()
        ],  # fmt: skip
        "sets": [
            {"set": s.name, "members": list(s.members), "where": _where(s.loc)} for s in checked.sets.values()
        ],
        "stops": [{"stop": s.id, "description": s.description, "where": _where(s.loc)} for s in checked.stops],
        "conditions": [{"condition": c.name, "where": _where(c.loc)} for c in checked.conditions.values()],
        "schema": _fields(checked.schema.root),
        "layers": {
            "global": glob,
            "global_files": [os.path.basename(p) for p in used],
            "shadowed": [os.path.basename(p) for p in shadowed],
            "same_priority": ties,
        },
    }


def layering(checked: Any, root: str) -> tuple[dict[str, Any], list[str]] | None:
    """The global pack layered under ``root`` (None: there is none): as data, and as text lines."""
    layers = inspect_data(checked, root)["layers"]
    return None if layers["global"] is None else (layers, _layers_text(layers))


def _cell(v: Any) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if v is None:
        return ""
    if isinstance(v, list):
        return ", ".join(map(str, v))
    return str(v)


def _tables(data: dict[str, Any], sections: tuple[str, ...]) -> list[tuple[str, list[str], list[list[str]]]]:
    out = []
    if "rules" in sections:
        cols = ["rule", "priority", "verdict", "reason", "stop", "layer", "where"]
        rows = [[_cell(r[c]) for c in cols] for r in data["rules"]]
        out.append(("rules (first match wins, in this order)", cols, rows))
    if "verdicts" in sections:
        cols = ["verdict", "ok", "stop", "requires_user_review", "retryable", "where"]
        out.append(("verdict kinds", cols, [[_cell(v[c]) for c in cols] for v in data["verdicts"]]))
    if "sets" in sections:
        cols = ["set", "members", "where"]
        out.append(("sets", cols, [[_cell(s[c]) for c in cols] for s in data["sets"]]))
    if "stops" in sections:
        cols = ["stop", "description", "where"]
        out.append(("high-risk stops", cols, [[_cell(s[c]) for c in cols] for s in data["stops"]]))
    if "conditions" in sections:
        cols = ["condition", "where"]
        out.append(("named conditions", cols, [[_cell(c[k]) for k in cols] for c in data["conditions"]]))
    if "schema" in sections:
        cols = ["field", "type", "required", "default", "aliases"]
        out.append(("fact schema", cols, [[_cell(f[c]) for c in cols] for f in data["schema"]]))
    return out


def _layers_text(layers: dict[str, Any]) -> list[str]:
    if layers["global"] is None:
        return ["global pack: none"]
    lines = [f"global pack: {layers['global']} (layered under this pack)"]
    lines.append("  files used: " + (", ".join(layers["global_files"]) or "none"))
    if layers["shadowed"]:
        lines.append("  shadowed by the pack's file of the same name: " + ", ".join(layers["shadowed"]))
    for t in layers["same_priority"]:
        lines.append(
            f"  conflict: priority {t['priority']} holds global and pack rules ({', '.join(t['rules'])}); "
            f"{t['wins']} is declared first and wins"
        )
    return lines


def _plain(title: str, cols: list[str], rows: list[list[str]]) -> str:
    widths = [max([len(c), *(len(r[i]) for r in rows)]) for i, c in enumerate(cols)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    lines = [f"{title}:", "  " + fmt.format(*cols).rstrip()]
    lines += ["  " + fmt.format(*r).rstrip() for r in rows]
    return "\n".join(lines)


def render(data: dict[str, Any], sections: tuple[str, ...], stdout: IO[str]) -> None:
    """Tables: drawn by rich (colour) on a terminal without ``NO_COLOR``, aligned text otherwise."""
    tables = _tables(data, sections)
    console = styled(stdout)
    head = f"{data['name']} ({data['pack']}): {data['digest']}"
    if console is None:
        parts = [head] + [_plain(t, c, r) for t, c, r in tables]
        if "layers" in sections:
            parts.append("\n".join(_layers_text(data["layers"])))
        stdout.write("\n\n".join(parts) + "\n")
        return
    from rich.table import Table

    console.print(head, style="bold")
    for title, cols, rows in tables:
        table = Table(title=title, title_justify="left", header_style="bold cyan")
        for c in cols:
            table.add_column(c)
        for r in rows:
            table.add_row(*r)
        console.print(table)
    if "layers" in sections:
        console.print("\n".join(_layers_text(data["layers"])))


def run(args: argparse.Namespace, stdin: object, stdout: IO[str], stderr: IO[str]) -> int:
    for name in args.only:
        if name not in SECTIONS:
            raise CommandError(f"unknown section {name!r}{unknown_hint(name, SECTIONS)}")
    root = select_pack(args.policy)
    try:
        checked = check_pack(root)
    except PolicyError as exc:
        return policy_error(exc, root, stderr)
    data = inspect_data(checked, str(root))
    sections = tuple(args.only) if args.only else SECTIONS
    if args.format == "json":
        stdout.write(json.dumps({k: v for k, v in data.items() if k not in SECTIONS or k in sections}) + "\n")
    else:
        render(data, sections, stdout)
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Show what a pack declares: rules in precedence order, verdict kinds, sets, high-risk stops, named "
        "conditions, the fact schema, and the global pack layered under it. Exit 0, 2 if the pack has errors."
    )
    add_policy_flags(p, default_format="pretty")
    p.add_argument(
        "only", nargs="*", metavar="SECTION", help=f"only these sections ({', '.join(SECTIONS)}; default: all)"
    )
