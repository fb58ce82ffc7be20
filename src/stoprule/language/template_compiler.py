"""Message templates at compile time: parsed from a pack's text, and generated as code (one
function per template) for an evaluator deciding many facts.

:mod:`stoprule.language.templates` renders them on a stop (the same text, nothing compiled).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from stoprule._util.codegen import define
from stoprule.language.templates import Template, _lookup, _parts, _show

__all__ = ["compile_template", "compile_templates", "parse_template"]

_TOKEN = r"\{\{|\}\}|\{([^{}]*)\}|[{}]"  # compiled when a pack is (not on a cached start)


def parse_template(text: str) -> tuple[Template, list[str]]:
    """Split ``text`` into literal parts and placeholders; also return syntax errors."""
    parts: list[str | tuple[str, tuple[str, ...], str | None]] = []
    errors: list[str] = []
    pos = 0
    for m in re.finditer(_TOKEN, text):
        parts.append(text[pos : m.start()])
        tok = m.group(0)
        if tok in ("{{", "}}"):
            parts.append(tok[0])
        elif tok in ("{", "}"):
            errors.append(f"unbalanced {tok!r} (write {tok * 2} for a literal brace)")
        else:
            name, bar, fallback = m.group(1).partition("|")
            name = name.strip()
            if not name:
                errors.append("empty placeholder {}")
            elif name.startswith("@"):
                parts.append(("set", (name[1:],), None))
            else:
                parts.append(("field", tuple(name.split(".")), fallback if bar else None))
        pos = m.end()
    parts.append(text[pos:])
    return tuple(p for p in parts if p != ""), errors


def compile_template(tpl: Template, sets: dict[str, tuple[Any, ...]]) -> Callable[[dict[str, Any]], str]:
    """The renderer of one template: a function of the fact (see :func:`compile_templates`)."""
    return compile_templates([tpl], sets)[1][0]


def compile_templates(
    templates: list[Template], sets: dict[str, tuple[Any, ...]]
) -> tuple[str, list[Callable[[dict[str, Any]], str]]]:
    """Straight-line code rendering each template, one function per template, generated and
    compiled once per pack (rendered only for the winning rule): ``{field}`` a non-empty string
    as itself, anything else as ``_show`` (:mod:`stoprule.language.templates`) writes it
    (``(unset)`` or the fallback for a missing, null or empty value); ``{list[].field}`` the
    values of every element, joined.

    Returns the source (cached with the pack, see :mod:`stoprule._util.codegen`) and the functions.
    """
    ns: dict[str, Any] = {"SH": _show, "LK": _lookup}
    lines: list[str] = []

    def const(value: Any) -> str:
        name = f"K{len(ns)}"
        ns[name] = value
        return name

    for i, tpl in enumerate(templates):
        lines.append(f"def t{i}(f):")
        pieces = []
        for j, part in enumerate(_parts(tpl, sets)):
            if isinstance(part, str):
                pieces.append(repr(part))
                continue
            path, fallback = part
            v, fb = f"v{j}", const(fallback)
            if any(step.endswith("[]") for step in path):
                lines.append(f"    {v} = LK(f, {const(path)})")
            else:
                lines.append(f"    {v} = f.get({path[0]!r}) if isinstance(f, dict) else None")
                for step in path[1:]:
                    lines.append(f"    {v} = {v}.get({step!r}) if isinstance({v}, dict) else None")
            # a non-empty string renders as itself; everything else as _show renders it
            pieces.append(f"({v} if type({v}) is str and {v} else SH({v}, {fb}))")
        lines.append(f"    return {' + '.join(pieces) or repr('')}")
    lines.append(f"T = ({''.join(f't{i}, ' for i in range(len(templates)))})")
    source = "\n".join(lines)
    return source, list(define(source, ns, "T"))
