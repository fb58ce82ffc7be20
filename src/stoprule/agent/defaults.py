"""The hook's defaults as plain data: the providers' order, the ``hook:`` and ``providers:``
sections (:mod:`stoprule.agent.settings` uses them without pydantic; the pydantic models of
:mod:`stoprule.agent.hook_config` take their defaults from here). On the cold path.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["DEFAULT_BLOCKERS", "DEFAULT_HOOK", "DEFAULT_PROVIDERS", "PROVIDER_ORDER"]

# Providers run in this fixed order; the first to set a field wins, and a later provider
# with another value is recorded as a conflict. Declarations (hook payload, declared
# state, the agent's closure trailer) come before inference (git); the transcript comes before the
# closure trailer, which is read from the transcript's last text when the payload has none.
PROVIDER_ORDER: tuple[str, ...] = ("hook", "state", "blockers", "transcript", "closure", "git")

DEFAULT_HOOK: dict[str, Any] = {
    "mode": "enforce",
    "fail": "open",
    "loop_cap": 3,
    "ledger": False,
    "budget_ms": 5000,
    "log": True,
    "strict": False,
    "permission_triage": False,
    "resident": False,
    "closed_message": (
        "stoprule could not decide whether you may stop (an internal error; see .stoprule/hook.log). "
        "Do not start new work: summarize the current state for the user, then stop."
    ),
}
# The ``blockers:`` section's defaults (:class:`~stoprule.agent.blocker_config.BlockerSettings`
# validates a config's; the hook uses these when there is none, without pydantic).
DEFAULT_BLOCKERS: dict[str, Any] = {
    "enabled": True,
    "file": ".stoprule/blockers.md",
    "max_per_run": 50,
    "cooldown_seconds": 30.0,
    "rotate_bytes": 10 * 1024 * 1024,
    "rotate_entries": 1000,
    "soft_categories": [],
    "ledger": False,
}
DEFAULT_PROVIDERS: dict[str, Any] = {
    "enabled": list(PROVIDER_ORDER),
    "timeout_ms": 1500,
    "fields": {},
    "transcript_tail_bytes": 262144,
    "transcript_max_scan_bytes": 8388608,
}
