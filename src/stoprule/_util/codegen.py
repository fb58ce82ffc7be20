"""Generated Python code (the projectors, the fact validator, the message renderers), compiled
once per source in a process.

Generating a pack's code is cheap; compiling it is not (tens of milliseconds for the default
pack): an evaluator decides its first facts without it (``Evaluator._use_code``), and only a
longer run compiles it. Compiled code is never cached on disk: a cache is data, never code.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

__all__ = ["define"]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import CodeType
    from typing import Any

_CODE: dict[str, CodeType] = {}
MAX_CODE = 512  # sources kept in one process (a few per pack)


def define(source: str, namespace: dict[str, Any], name: str) -> Any:
    """Run ``source`` (compiled once) in ``namespace`` and return what it defines as ``name``."""
    code = _CODE.get(source)
    if code is None:
        code = compile(source, f"<stoprule generated {name}>", "exec")
        if len(_CODE) >= MAX_CODE:
            _CODE.clear()
        _CODE[source] = code
    exec(code, namespace)  # noqa: S102 - the source is generated from a compiled pack's names only
    return namespace[name]
