"""The durable_rules C engine, used directly: assert a fact, collect matches, retract.

One set of ruleset handles per thread (handles are not thread-safe). Rules carry
no ``run`` action: the matched rule names are read from the engine's action queue.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Sequence
from typing import Any

import durable_rules_engine as _dre

__all__ = ["Engine", "check_rulesets"]

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


def _rule_name(message: str) -> str:
    # messages look like {"r3":{"m":{...}}}: the rule name is the first key
    return message[2 : message.index('"', 2)]


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

    def match(self, projected: dict[str, Any]) -> set[str]:
        """Names of every engine rule whose condition holds for ``projected``."""
        text = _encode(projected)
        names: set[str] = set()
        for h in self._handles():
            result = _dre.assert_fact(h, text)
            if result[0] != 0:  # 1: matched no rule (not stored)
                continue
            state = result[1]
            try:
                action = _dre.start_action_for_state(h, state)
                if action:
                    names.add(_rule_name(action[1]))
                    while True:
                        nxt = _dre.complete_and_start_action(h, state)
                        if not nxt:
                            break
                        names.add(_rule_name(nxt))
            finally:
                _dre.retract_fact(h, text)
        return names
