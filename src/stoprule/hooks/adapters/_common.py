"""Field readers the adapters share (payloads are read defensively: wrong types become None)."""

from __future__ import annotations

from typing import Any

__all__ = ["as_bool", "as_int", "as_str"]


def as_str(value: Any) -> str | None:
    return value if isinstance(value, str) and value != "" else None


def as_bool(value: Any) -> bool:
    return value is True


def as_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
