"""``stoprule fmt [PATH...] [--check] [--diff]``: pack and case files in one canonical layout.

The layout (the bundled pack's): two-space indentation, list items indented under their key
(``  - id: ...``), keys in a fixed order (sections of a pack file; a rule's ``id``,
``priority``, ``description``, ``when``, ``verdict``, ``reason``, ``message``,
``review_reason``; a field's ``type`` first ...; a case's ``name``, ``fact``/``facts``,
``without``, ``expect``/``expect_error``), one newline at the end of the file, no trailing
spaces. Everything else is kept as written: comments, quoting, flow (``{a: 1}``) or block
style, folded and literal text, long lines. Unknown keys stay after the known ones, in their
order. Formatting is idempotent: a formatted file is left as is.

``ruamel.yaml`` does the round trip: it is the YAML library that keeps comments and styles
(PyYAML, which reads packs, drops both). It is imported only by this command.

Exit codes (CI-friendly, as ``opa fmt --fail`` / ``gofmt -l``): 0 every file is formatted
(without ``--check``: after rewriting those that were not), 1 with ``--check`` some file
would change (each is named), 2 a file cannot be read or parsed.
"""

from __future__ import annotations

import argparse
import difflib
import io
from pathlib import Path
from typing import IO, Any

from stoprule._util.files import atomic_write
from stoprule.diagnostics import EXIT_INVALID, EXIT_NOT_OK, CommandError
from stoprule.engine.packs import select_pack

__all__ = ["add_arguments", "format_text", "run"]

TOP: tuple[str, ...] = ("pack", "schema", "blocker_categories", "legal_closure_states", "sets", "high_risk_stops",
                        "verdicts", "conditions", "rules")  # fmt: skip
PACK: tuple[str, ...] = ("name", "description", "version")
SCHEMA: tuple[str, ...] = ("additional_fields", "fields")
FIELD: tuple[str, ...] = ("type", "values", "required", "nullable", "default", "aliases", "required_if",
                          "description", "items", "fields")  # fmt: skip
SET: tuple[str, ...] = ("description", "members")
STOP: tuple[str, ...] = ("id", "description", "when")
VERDICT: tuple[str, ...] = ("ok", "stop", "requires_user_review", "retryable", "description")
RULE: tuple[str, ...] = ("id", "priority", "description", "when", "verdict", "reason", "message", "review_reason")
CASE_FILE: tuple[str, ...] = ("base", "cases")
CASE: tuple[str, ...] = ("name", "fact", "facts", "without", "expect", "expect_error")
WIDTH = 120  # a flow collection ({...}, [...]) whose line would be longer is written in block style


def _order(m: Any, keys: tuple[str, ...]) -> None:
    """Reorder a ruamel mapping in place: ``keys`` first (in that order), the rest after, as they were.
    Comments attached to a key move with it."""
    if not hasattr(m, "move_to_end"):
        return
    rest = [k for k in m if k not in keys]
    for k in [*(k for k in keys if k in m), *rest]:
        m.move_to_end(k)


def _field(spec: Any) -> None:
    if not hasattr(spec, "move_to_end"):
        return
    _order(spec, FIELD)
    if hasattr(spec.get("items"), "move_to_end"):
        _field(spec["items"])
    fields = spec.get("fields")
    if hasattr(fields, "values"):
        for child in fields.values():
            _field(child)


def _pack_file(doc: Any) -> None:
    _order(doc, TOP)
    _order(doc.get("pack"), PACK)
    schema = doc.get("schema")
    _order(schema, SCHEMA)
    if hasattr(schema, "get") and hasattr(schema.get("fields"), "values"):
        for spec in schema["fields"].values():
            _field(spec)
    for name, ordered in (("sets", SET), ("verdicts", VERDICT)):
        section = doc.get(name)
        if hasattr(section, "values"):
            for value in section.values():
                _order(value, ordered)
    for name, ordered in (("high_risk_stops", STOP), ("rules", RULE)):
        items = doc.get(name)
        if isinstance(items, list):
            for item in items:
                _order(item, ordered)


def _case_file(doc: Any) -> None:
    _order(doc, CASE_FILE)
    cases = doc.get("cases")
    if isinstance(cases, list):
        for case in cases:
            _order(case, CASE)


def _flat_len(node: Any, y: Any, seen: set[int]) -> int:
    """How long ``node`` is written on one line in flow style; a node met before (an alias) as ``*name``."""
    anchor = getattr(node, "anchor", None)
    name = anchor.value if anchor is not None and anchor.value else None
    if isinstance(node, (dict, list)):
        if id(node) in seen and name:
            return EXIT_NOT_OK + len(name)
        lead = len(name) + 2 if name else 0
        if isinstance(node, dict):
            parts = [_flat_len(k, y, seen) + 2 + _flat_len(v, y, seen) for k, v in node.items()]
        else:
            parts = [_flat_len(v, y, seen) for v in node]
        return lead + 2 + sum(parts) + 2 * max(len(parts) - 1, 0)
    key = (type(node), node) if type(node) in _PLAIN else None  # written from its value alone
    if key is not None and key in _SCALAR_LEN:
        return _SCALAR_LEN[key]
    out = io.StringIO()
    y.dump([node], out)  # a scalar as written: its quoting and style kept
    n = len(out.getvalue().strip()[1:-1])
    if key is not None:
        if len(_SCALAR_LEN) >= 4096:
            _SCALAR_LEN.clear()
        _SCALAR_LEN[key] = n
    return n


# The flow length of a scalar of a plain type, by value: the same for every YAML made by _yaml()
# (the only kind format_text is given); ruamel's own scalar types keep a style, so are measured each time
_PLAIN = (str, int, bool, type(None))
_SCALAR_LEN: dict[tuple[type, Any], int] = {}


def _unflow(node: Any, column: int, y: Any, seen: set[int] | None = None) -> None:
    """Write in block style every flow collection that would not fit in :data:`WIDTH` on its line;
    keep every anchor (even an unused one) where it is. ``column``: where ``node``'s keys or items start."""
    seen = set() if seen is None else seen
    if id(node) in seen:  # an alias: written as *name
        return
    seen.add(id(node))
    anchor = getattr(node, "anchor", None)
    if anchor is not None and anchor.value:
        anchor.always_dump = True
    if isinstance(node, dict):
        items = [(len(str(k)) + 2, v) for k, v in node.items()]
    elif isinstance(node, list):
        items = [(2, v) for v in node]
    else:
        return
    for lead, value in items:
        if not isinstance(value, (dict, list)):
            continue
        fa = getattr(value, "fa", None)
        flow = fa is not None and fa.flow_style() and id(value) not in seen
        # (past WIDTH already, e.g. inside a flow collection: no need to measure it)
        if flow and fa is not None and (column + lead > WIDTH or column + lead + _flat_len(value, y, seen) > WIDTH):
            fa.set_block_style()
        block = fa is None or not fa.flow_style()
        _unflow(value, column + 2 if block else 1 << 16, y, seen)


def _yaml() -> Any:
    from ruamel.yaml import YAML

    y = YAML(typ="rt")
    y.preserve_quotes = True
    y.width = 1 << 16  # no re-wrapping: long flow collections become block style instead (_unflow)
    y.indent(mapping=2, sequence=4, offset=2)
    y.brace_single_entry_mapping_in_flow_sequence = True  # [{a: 1}], not [a: 1]
    y.representer.add_representer(type(None), lambda r, _: r.represent_scalar("tag:yaml.org,2002:null", "null"))
    return y


def format_text(text: str, yaml: Any = None) -> str:
    """``text`` (one pack or case file) in the canonical layout. Raises ``ValueError`` if it is not YAML."""
    from ruamel.yaml.error import YAMLError

    y = yaml if yaml is not None else _yaml()
    try:
        doc = y.load(text)
    except YAMLError as exc:
        raise ValueError(str(exc).strip().splitlines()[-1] if str(exc).strip() else "invalid YAML") from None
    if doc is None:
        return text.strip() + "\n" if text.strip() else ""
    if hasattr(doc, "keys"):
        (_case_file if "cases" in doc or "base" in doc else _pack_file)(doc)
    _unflow(doc, 0, y)
    out = io.StringIO()
    y.dump(doc, out)
    lines = [ln.rstrip() for ln in out.getvalue().splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines) + "\n"


def _targets(paths: list[str], policy: str | None) -> list[Path]:
    """The YAML files to format: named files, the ``*.yaml``/``*.yml`` of named folders and of
    their ``tests/``; by default the selected pack's."""
    if not paths:
        paths = [str(select_pack(policy))]
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            for folder in (p, p / "tests"):
                if folder.is_dir():
                    out += sorted(f for f in folder.iterdir() if f.suffix in (".yaml", ".yml") and f.is_file())
        else:
            out.append(p)
    return out


def run(args: argparse.Namespace, stdin: object, stdout: IO[str], stderr: IO[str]) -> int:
    yaml = _yaml()
    changed: list[Path] = []
    bad = 0
    for path in _targets(args.paths, args.policy):
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            stderr.write(f"stoprule: cannot read {path}: {getattr(exc, 'strerror', None) or exc}\n")
            bad += 1
            continue
        try:
            new = format_text(text, yaml)
        except ValueError as exc:
            stderr.write(f"stoprule: {path}: not valid YAML: {exc}\n")
            bad += 1
            continue
        if new == text:
            continue
        changed.append(path)
        if args.diff:
            stdout.writelines(difflib.unified_diff(text.splitlines(True), new.splitlines(True), str(path), str(path)))
        if args.check or args.diff:
            if not args.diff:
                stdout.write(f"{path}\n")
            continue
        atomic_write(str(path), new, keep_mode=True)
        stdout.write(f"formatted {path}\n")
    if bad:
        return EXIT_INVALID
    if changed and (args.check or args.diff):
        raise CommandError(f"{len(changed)} file(s) not formatted (run `stoprule fmt` to rewrite them)", EXIT_NOT_OK)
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Rewrite pack and case files in the canonical layout (key order, indentation), keeping comments and "
        "styles. Exit 0 formatted, 1 with --check/--diff when a file would change, 2 unreadable or invalid YAML."
    )
    p.add_argument("paths", nargs="*", metavar="PATH", help="files or pack folders (default: the selected pack)")
    p.add_argument("--policy", metavar="PATH", help="the pack to format when no PATH is given")
    p.add_argument("--check", action="store_true", help="change nothing; list the files that would change (exit 1)")
    p.add_argument("--diff", action="store_true", help="change nothing; print what would change as a diff (exit 1)")
