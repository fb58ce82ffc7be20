"""A fact's validation errors, built where a fact fails (off the stop's path when it is
valid): the field path, the type mismatch, the did-you-mean of an unknown field, ``--strict``'s
error (what :mod:`stoprule.facts.schema` raises).
"""

from __future__ import annotations

import difflib

from stoprule import codes
from stoprule.diagnostics import FactError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["format_field", "prefix", "show", "strict_error", "suggest", "type_error"]

# a field below is a FactField (typed Any: stoprule.facts.schema imports this module)


def format_field(path: tuple[str | int, ...]) -> str:
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else p)
    return out


def type_error(want: Any, got: Any, path: tuple[str | int, ...]) -> FactError:
    kind = type(got).__name__ if got is not None else "null"
    kinds = {"dict": "object", "list": "list", "str": "string", "float": "number"}
    return FactError(
        codes.FACT_TYPE,
        f"expected {want.describe()}, got {kinds.get(kind, kind)}",
        format_field(path),
    )


def prefix(exc: FactError, step: str | int) -> FactError:
    """Put ``step`` in front of the error's field path (errors are built innermost first)."""
    exc.field = format_field((step,)) + ("" if not exc.field else exc.field if exc.field[0] == "[" else "." + exc.field)
    return exc


def show(text: str) -> str:
    """``text`` quoted for a message, with characters that cannot be printed escaped."""
    return ascii(text) if not text.isascii() or not text.isprintable() else repr(text)


def suggest(schema: Any, path: str) -> str:
    """`` (did you mean 'x'?)`` for the field name closest to the last step of ``path``."""
    scope: Any = schema
    steps = path.replace("]", "").replace("[", ".").split(".")
    for step in steps[:-1]:
        if scope is None or step.isdigit():
            scope = scope.items if scope is not None and scope.type == "list" else scope
            continue
        scope = scope.fields.get(scope.lookup.get(step, ""))
        scope = scope.items if scope is not None and scope.type == "list" else scope
    if scope is None or scope.type != "object":
        return ""
    best = difflib.get_close_matches(steps[-1], list(scope.lookup), n=1, cutoff=0.7)
    return f" (did you mean {scope.lookup[best[0]]!r}?)" if best else ""


def strict_error(warnings: list[dict[str, str]]) -> FactError:
    """The error a warning becomes under ``--strict``."""
    w = warnings[0]
    more = f" (and {len(warnings) - 1} more)" if len(warnings) > 1 else ""
    return FactError(w["code"], w["message"] + more, w["field"])
