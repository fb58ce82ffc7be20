"""Which matching rule wins: the highest priority, then the earliest declared.

One ordering for the evaluator (compiled rules) and for analysis (checked rules).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Protocol, TypeVar

    class Ranked(Protocol):
        @property
        def priority(self) -> int: ...
        @property
        def index(self) -> int: ...

    R = TypeVar("R", bound=Ranked)

__all__ = ["rank", "rank_key"]


def rank_key(rule: Ranked) -> tuple[int, int]:
    """Sort key: the winner sorts first."""
    return (-rule.priority, rule.index)


def rank(rules: Iterable[R]) -> list[R]:
    """``rules`` winner first."""
    return sorted(rules, key=rank_key)
