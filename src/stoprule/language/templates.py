"""Message templates: ``{field.path}`` interpolates a fact field, ``{@set}`` a set's members.

``{list[].field}`` renders the values found in every element, joined with ``, ``.
``{field|fallback}`` renders ``fallback`` when the field is missing, null or empty;
without a fallback such a field renders as ``(unset)``. ``{{`` and ``}}`` are
literal braces.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

__all__ = ["Template", "render", "renderer"]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

Template = tuple[str | tuple[str, tuple[str, ...], str | None], ...]

UNSET = "(unset)"


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
    text as :func:`~stoprule.language.template_compiler.compile_templates`)."""
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
    """The renderer of one template without generated code: what
    :func:`~stoprule.language.template_compiler.compile_templates` renders,
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
