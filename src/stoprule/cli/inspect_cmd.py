"""``stoprule inspect``: what a pack declares, as tables or JSON (like ``opa inspect``).

Rules (by precedence: priority, then declaration order), verdict kinds, sets, high-risk stops,
named conditions, the fact schema, and the layering: which files come from the global pack,
which global files the pack shadows, and where a global rule and a pack rule share a priority.
"""

from __future__ import annotations

import argparse
import json
from typing import IO, Any

from stoprule._util.hints import unknown_hint
from stoprule.cli.common import policy_error
from stoprule.cli.flags import add_policy_flags
from stoprule.cli.style import styled
from stoprule.diagnostics import CommandError, PolicyError
from stoprule.engine.packs import select_pack
from stoprule.language.compiler import check_pack
from stoprule.language.inventory import inspect_data

__all__ = ["SECTIONS", "add_arguments", "inspect_data", "layering", "run"]

SECTIONS = ("rules", "verdicts", "sets", "stops", "conditions", "schema", "layers")


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
