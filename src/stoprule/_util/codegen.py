"""Generated Python code (the projectors, the fact validator), compiled once per source.

Generating a pack's code is cheap; compiling it is not (about 3 ms for the default pack,
on every start). Compiled code objects are kept by source text, and the compiled-pack
cache stores them (``marshal``, the format of ``.pyc`` files; the cache is keyed on the
Python version) so a start with a warm cache compiles nothing.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

import marshal

__all__ = ["define", "export", "preload"]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
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


def export(sources: Iterable[str]) -> dict[str, bytes]:
    """The compiled code of ``sources`` (those compiled in this process), marshalled."""
    return {s: marshal.dumps(_CODE[s]) for s in sources if s in _CODE}


def preload(blobs: dict[str, bytes]) -> None:
    """Make code compiled by an earlier process (see :func:`export`) available to :func:`define`."""
    for source, blob in blobs.items():
        if source not in _CODE:
            try:
                _CODE[source] = marshal.loads(blob)
            except (ValueError, EOFError, TypeError):
                continue
