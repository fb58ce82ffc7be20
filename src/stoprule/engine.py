"""The durable_rules C engine, used directly: assert a fact, collect matches, retract.

One set of ruleset handles per thread (handles are not thread-safe). Rules carry
no ``run`` action: the matched rule names are read from the engine's action queue.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable, Sequence

import durable_rules_engine as _dre

__all__ = ["Engine", "check_rulesets"]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# UTF-8 as is: the engine does not decode \u escapes before matching patterns
_encode = json.JSONEncoder(separators=(",", ":"), check_circular=False, ensure_ascii=False).encode
_names = itertools.count()
_names_lock = threading.Lock()


def _unique(prefix: str) -> str:
    with _names_lock:
        return f"{prefix}-{next(_names)}"


def check_rulesets(rulesets: Sequence[dict[str, Any]]) -> str | None:
    """Create (and drop) each ruleset once; return the engine's complaint, if any."""
    for i, rs in enumerate(rulesets):
        try:
            handle = _dre.create_ruleset(_unique("check"), _encode(rs))
        except Exception as exc:  # the engine raises a bare error with a numeric code
            return f"the engine rejected ruleset {i}: {exc}"
        _dre.delete_ruleset(handle)
    return None


class Engine:
    """Matches projected facts against compiled rulesets; safe to share across threads."""

    def __init__(self, rulesets: Sequence[dict[str, Any]]) -> None:
        self._defs = [_encode(rs) for rs in rulesets]
        self._local = threading.local()

    def _handles(self) -> list[int]:
        hs = getattr(self._local, "handles", None)
        if hs is None:
            hs = [_dre.create_ruleset(_unique("stoprule"), d) for d in self._defs]
            self._local.handles = hs
        return hs

    def matcher(self) -> Callable[[dict[str, Any]], set[str]]:
        """A match function bound to this thread's handles (fetch once, call per fact)."""
        fn = getattr(self._local, "match", None)
        if fn is None:
            fn = self._local.match = _make_matcher(self._handles())
        return fn

    def match(self, projected: dict[str, Any]) -> set[str]:
        """Names of every engine rule whose condition holds for ``projected``."""
        return self.matcher()(projected)


def _make_matcher(handles: list[int]) -> Callable[[dict[str, Any]], set[str]]:
    """Assert the fact, drain the action queue for the matched rule names, retract it."""
    encode = _encode
    assert_fact = _dre.assert_fact
    start = _dre.start_action_for_state
    complete_and_next = _dre.complete_and_start_action
    retract = _dre.retract_fact

    def match(projected: dict[str, Any]) -> set[str]:
        text = encode(projected)
        names: set[str] = set()
        for h in handles:
            result = assert_fact(h, text)
            if result[0]:  # 1: matched no rule, and the fact was not stored
                continue
            state = result[1]
            try:
                action = start(h, state)
                if action:
                    msg = action[1]  # {"r3":{"m":{...}}}: the rule name is the first key
                    names.add(msg[2 : msg.index('"', 2)])
                    while msg := complete_and_next(h, state):
                        names.add(msg[2 : msg.index('"', 2)])
            finally:
                retract(h, text)
        return names

    return match
