"""What a fact matches, for explaining it (``stoprule explain``, the blocker reports, the tests):
every rule whose condition holds, winner first, and what the engine is given for it.
:meth:`Evaluator.matched_rules <stoprule.engine.evaluator.Evaluator.matched_rules>` and
:meth:`~stoprule.engine.evaluator.Evaluator.projection` call these; a stop does not.
"""

from __future__ import annotations

from stoprule._util.jsonin import loads

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from stoprule.engine.compiled import RuleMeta

__all__ = ["matched_rules", "projection"]

# ``ev`` below is an Evaluator (typed Any: stoprule.engine.evaluator imports this module)


def projection(ev: Any, fact: Any) -> list[dict[str, Any]]:
    """What the engine is given for ``fact`` (validated first): the projected keys, one dict
    per ruleset (a single dict when every ruleset is given the whole projection)."""
    data = ev.validate(fact)
    return [loads("{" + project(data)) for project in ev._project_parts]


def matched_rules(ev: Any, fact: Any) -> list[RuleMeta]:
    """Every rule whose condition holds, winner first."""
    data = ev.validate(fact)
    return _ranked(ev, ev._data_matcher()(data))


def _ranked(ev: Any, names: set[str]) -> list[RuleMeta]:
    rank = ev._rank
    return [ev._rules[n] for n in sorted((n for n in names if n in rank), key=rank.__getitem__)]
