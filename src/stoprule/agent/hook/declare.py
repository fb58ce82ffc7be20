"""Writing a session's declared facts (``stoprule facts set|clear``, the blocker tools'
``report_status``): each a locked read-modify-write of its file (:mod:`stoprule.agent.hook.state`
says where and how; the stop only reads them).
"""

from __future__ import annotations

from stoprule._util.jsonout import dumps
from stoprule.agent.hook.state import _change, facts_file

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from typing import Any

__all__ = ["clear_facts", "declare_facts", "set_facts"]


def set_facts(project: str, session: str | None, fields: Mapping[str, Any]) -> dict[str, Any]:
    """Merge ``fields`` (pack field names -> JSON values) into the session's declared facts."""
    dumps(dict(fields))  # only JSON values are stored (TypeError otherwise)
    return _change(facts_file(project, session), lambda cur: {**cur, **fields})


def declare_facts(project: str, session: str | None, fields: Mapping[str, Any]) -> dict[str, Any]:
    """Merge ``fields`` in one locked change, a ``None`` value removing its field (the blocker
    tools' ``report_status``); returns the session's declared facts."""
    dumps(dict(fields))
    return _change(
        facts_file(project, session),
        lambda cur: {k: v for k, v in {**cur, **fields}.items() if v is not None or k not in fields},
    )


def clear_facts(project: str, session: str | None, keys: Iterable[str] | None = None) -> dict[str, Any]:
    """Drop ``keys`` (None: every fact) from the session's declared facts; returns what is left."""
    drop = None if keys is None else set(keys)
    return _change(
        facts_file(project, session),
        lambda cur: {} if drop is None else {k: v for k, v in cur.items() if k not in drop},
    )
