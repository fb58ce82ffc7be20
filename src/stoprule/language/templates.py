"""Message templates: ``{field.path}`` interpolates a fact field, ``{@set}`` a set's members.

``{list[].field}`` renders the values found in every element, joined with ``, ``.
``{field|fallback}`` renders ``fallback`` when the field is missing, null or empty;
without a fallback such a field renders as ``(unset)``. ``{{`` and ``}}`` are
literal braces.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

__all__ = ["Template", "compile_template", "compile_templates", "parse_template", "render", "renderer"]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

Template = tuple[str | tuple[str, tuple[str, ...], str | None], ...]

_TOKEN = r"\{\{|\}\}|\{([^{}]*)\}|[{}]"  # compiled when a pack is (not on a cached start)
UNSET = "(unset)"


def parse_template(text: str) -> tuple[Template, list[str]]:
    """Split ``text`` into literal parts and placeholders; also return syntax errors."""
    parts: list[str | tuple[str, tuple[str, ...], str | None]] = []
    errors: list[str] = []
    pos = 0
    import re

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


def _lookup(fact: Any, path: tuple[str, ...]) -> Any:
    cur: Any = fact
    for i, p in enumerate(path):
        if not isinstance(cur, dict):
            return None
        if p.endswith("[]"):
            seq = cur.get(p[:-2])
            if not isinstance(seq, list):
                return None
            rest = path[i + 1 :]
            found = [_lookup(x, rest) if rest else x for x in seq]
            flat = [y for x in found for y in (x if isinstance(x, list) else [x]) if y is not None]
            return ", ".join(map(_show_one, flat)) or None
        cur = cur.get(p)
    return cur


def _show_one(v: Any) -> str:
    if isinstance(v, dict):
        from stoprule._util.jsonout import dumps

        return dumps(v, sort_keys=True)
    if isinstance(v, list):
        return ", ".join(_show_one(x) for x in v if x is not None)
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _show(v: Any, fallback: str | None) -> str:
    if v is None or v == "" or v == []:
        return UNSET if fallback is None else fallback
    return _show_one(v)


def render(tpl: Template, fact: dict[str, Any], sets: dict[str, tuple[Any, ...]]) -> str:
    """``tpl`` rendered for ``fact``, as the evaluator renders it (:func:`renderer`; the same
    text as :func:`compile_templates`)."""
    return renderer(tpl, sets)(fact)


def _parts(tpl: Template, sets: dict[str, tuple[Any, ...]]) -> list[str | tuple[tuple[str, ...], str | None]]:
    """Literal text (adjacent literals and ``{@set}`` placeholders joined) and field placeholders."""
    parts: list[str | tuple[tuple[str, ...], str | None]] = []
    for part in tpl:
        if isinstance(part, str):
            text: str | None = part
        elif part[0] == "set":
            text = ", ".join(map(str, sets.get(part[1][0], ())))
        else:
            text = None
            parts.append((part[1], part[2]))
        if text is not None:
            if parts and isinstance(parts[-1], str):
                parts[-1] += text
            else:
                parts.append(text)
    return parts


def renderer(tpl: Template, sets: dict[str, tuple[Any, ...]]) -> Callable[[dict[str, Any]], str]:
    """The renderer of one template without generated code: what :func:`compile_templates` renders,
    for a process that renders a message or two (compiling a pack's renderers costs more there)."""
    steps: list[tuple[str | None, tuple[str, ...], bool, str | None]] = []
    for part in _parts(tpl, sets):
        if isinstance(part, str):
            steps.append((part, (), False, None))
        else:
            path, fallback = part
            steps.append((None, path, any(step.endswith("[]") for step in path), fallback))

    def render_direct(f: dict[str, Any]) -> str:
        out = []
        for text, path, listed, fallback in steps:
            if text is not None:
                out.append(text)
                continue
            if listed:
                v = _lookup(f, path)
            else:
                v = f.get(path[0]) if isinstance(f, dict) else None
                for step in path[1:]:
                    v = v.get(step) if isinstance(v, dict) else None
            out.append(v if type(v) is str and v else _show(v, fallback))
        return "".join(out)

    return render_direct


def compile_template(tpl: Template, sets: dict[str, tuple[Any, ...]]) -> Callable[[dict[str, Any]], str]:
    """The renderer of one template: a function of the fact (see :func:`compile_templates`)."""
    return compile_templates([tpl], sets)[1][0]


def compile_templates(
    templates: list[Template], sets: dict[str, tuple[Any, ...]]
) -> tuple[str, list[Callable[[dict[str, Any]], str]]]:
    """Straight-line code rendering each template, one function per template, generated and
    compiled once per pack (rendered only for the winning rule): ``{field}`` a non-empty string
    as itself, anything else as :func:`_show` writes it (``(unset)`` or the fallback for a
    missing, null or empty value); ``{list[].field}`` the values of every element, joined.

    Returns the source (cached with the pack, see :mod:`stoprule._util.codegen`) and the functions.
    """
    from stoprule._util.codegen import define

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
