"""Message templates: ``{field.path}`` interpolates a fact field, ``{@set}`` a set's members.

``{list[].field}`` renders the values found in every element, joined with ``, ``.
``{field|fallback}`` renders ``fallback`` when the field is missing, null or empty;
without a fallback such a field renders as ``(unset)``. ``{{`` and ``}}`` are
literal braces.
"""

from __future__ import annotations

__all__ = ["Template", "compile_template", "parse_template", "render"]

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
        import json

        return json.dumps(v, sort_keys=True)
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
    out = []
    for part in tpl:
        if isinstance(part, str):
            out.append(part)
        elif part[0] == "set":
            out.append(", ".join(map(str, sets.get(part[1][0], ()))))
        else:
            out.append(_show(_lookup(fact, part[1]), part[2]))
    return "".join(out)


def compile_template(tpl: Template, sets: dict[str, tuple[Any, ...]]) -> Callable[[dict[str, Any]], str]:
    """``render`` for one template, with the literal parts and ``{@set}`` placeholders joined
    once: a function of the fact (compiled once per pack, rendered only for the winner)."""
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
    if not parts:
        return lambda fact: ""
    if len(parts) == 1 and isinstance(parts[0], str):
        const = parts[0]
        return lambda fact: const

    frozen = tuple(parts)

    def render_one(fact: dict[str, Any]) -> str:
        return "".join(p if isinstance(p, str) else _show(_lookup(fact, p[0]), p[1]) for p in frozen)

    return render_one
