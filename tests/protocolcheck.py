"""Does an implementation match a ``Protocol``: every method the protocol declares, with the same
parameters (names, kinds, defaults present) and the same annotations as written (both modules
use ``from __future__ import annotations``, so annotations are compared as text)."""

from __future__ import annotations

import inspect
from typing import Any

__all__ = ["mismatches"]


def _members(protocol: type) -> dict[str, Any]:
    names = [*protocol.__dict__, *getattr(protocol, "__annotations__", {})]
    return {
        name: protocol.__dict__.get(name)
        for name in dict.fromkeys(names)
        if not name.startswith("_") or name in ("__call__", "__enter__", "__exit__")
    }


def _shape(fn: Any, drop_self: bool, annotations: bool) -> tuple[list[tuple[str, Any, bool, str]], str]:
    fn = fn.fget if isinstance(fn, property) else fn
    sig = inspect.signature(fn)
    params = list(sig.parameters.values())[1 if drop_self else 0 :]
    shown = [(p.name, p.kind, p.default is not p.empty, str(p.annotation) if annotations else "") for p in params]
    return shown, str(sig.return_annotation) if annotations else ""


def mismatches(impl: Any, protocol: type, *, bound: bool = False, annotations: bool = True) -> list[str]:
    """How ``impl`` (a class, a module, a function for a ``__call__``-only protocol, or a bound
    object with ``bound``) differs from ``protocol``: one line per difference (empty: it matches).
    Without ``annotations`` only the parameters' names, kinds and defaults are compared (where
    an implementation names its own types: mypy checks those)."""
    out = []
    for name, want in _members(protocol).items():
        if not callable(want) and not isinstance(want, property):  # a data attribute
            if not inspect.isclass(impl) and not hasattr(impl, name):  # a class sets it in __init__
                out.append(f"no attribute {name}")
            continue
        if name == "__call__" and inspect.isfunction(impl):
            got, drop = impl, False
        else:
            got = getattr(impl, name, None)
            drop = not bound and inspect.isclass(impl)
            if isinstance(want, property) or isinstance(inspect.getattr_static(impl, name, None), property):
                got, drop = inspect.getattr_static(impl, name, None), True
        if got is None:
            out.append(f"no method {name}")
            continue
        if _shape(got, drop, annotations) != _shape(want, True, annotations):
            out.append(f"{name}: {_shape(got, drop, annotations)} != {_shape(want, True, annotations)}")
    return out
