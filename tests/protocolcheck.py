"""Does an implementation match a ``Protocol``: every method the protocol declares, with the same
parameters (names, kinds, defaults present) and the same annotations as written (both modules
use ``from __future__ import annotations``, so annotations are compared as text)."""

from __future__ import annotations

import inspect
from typing import Any

__all__ = ["mismatches"]


def _members(protocol: type) -> dict[str, Any]:
    return {name: getattr(protocol, name) for name in protocol.__dict__
            if not name.startswith("_") or name == "__call__"}  # fmt: skip


def _shape(fn: Any, drop_self: bool) -> tuple[list[tuple[str, Any, bool, str]], str]:
    sig = inspect.signature(fn)
    params = list(sig.parameters.values())[1 if drop_self else 0 :]
    shown = [(p.name, p.kind, p.default is not p.empty, str(p.annotation)) for p in params]
    return shown, str(sig.return_annotation)


def mismatches(impl: Any, protocol: type, *, bound: bool = False) -> list[str]:
    """How ``impl`` (a class, a module, a function for a ``__call__``-only protocol, or a bound
    object with ``bound``) differs from ``protocol``: one line per difference (empty: it matches)."""
    out = []
    for name, want in _members(protocol).items():
        if not callable(want):
            if not hasattr(impl, name):
                out.append(f"no attribute {name}")
            continue
        if name == "__call__" and inspect.isfunction(impl):
            got, drop = impl, False
        else:
            got = getattr(impl, name, None)
            drop = not bound and inspect.isclass(impl)
        if got is None:
            out.append(f"no method {name}")
            continue
        if _shape(got, drop) != _shape(want, True):
            out.append(f"{name}: {_shape(got, drop)} != {_shape(want, True)}")
    return out
