"""Which backend evaluates batches: one function, :func:`select_backend`.

    auto      the C accelerator where it is built and applies, else the Python path (the default)
    python    the Python path only
    c         the C accelerator (:mod:`stoprule.engine.speedups`)
    NAME      a plug-in registered under the ``stoprule.backends`` entry-point group: an object
              matching :class:`~stoprule.engine.protocols.Backend`

``STOPRULE_SPEEDUPS=0`` in the environment turns the accelerator off (``auto`` and ``c`` then
run in Python); every backend gives the Python path's verdicts (the conformance corpus).
"""

from __future__ import annotations

import importlib.metadata

from stoprule.diagnostics import CommandError
from stoprule.engine.protocols import Backend
from stoprule.engine.speedups import c_backend

__all__ = ["BUILT_IN", "GROUP", "backend_names", "select_backend"]

GROUP = "stoprule.backends"
BUILT_IN = ("auto", "python", "c")


def _plugins() -> dict[str, importlib.metadata.EntryPoint]:
    return {entry.name: entry for entry in importlib.metadata.entry_points(group=GROUP)}


def backend_names() -> list[str]:
    """The built-in names, then the plug-ins' (sorted)."""
    return [*BUILT_IN, *sorted(set(_plugins()) - set(BUILT_IN))]


def select_backend(name: str = "auto") -> Backend | None:
    """The backend called ``name`` (None: the Python path only). An unknown name is a
    :class:`~stoprule.diagnostics.CommandError` listing the known ones."""
    if name == "python":
        return None
    if name in ("auto", "c"):
        return c_backend
    plugins = _plugins()
    if name not in plugins:
        raise CommandError(f"unknown evaluation backend {name!r} (known: {', '.join(backend_names())})")
    found = plugins[name].load()
    if not isinstance(found, Backend):
        raise CommandError(f"the evaluation backend {name!r} ({plugins[name].value}) is not callable")
    return found
