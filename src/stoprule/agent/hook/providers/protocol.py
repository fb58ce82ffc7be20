"""The fact provider's seam: each provider module (``hook_provider``, ``state_provider`` ...) is a
:class:`Provider`: ``provide(event, ctx) -> (observations, notes)``.

Observations are neutral names (``transcript.turns``, ``git.dirty`` ...) that ``providers.fields``
maps to the pack's fact fields; notes are lines for the provenance. A provider never raises for
what it could not observe: it says so in a note (an exception is recorded as one too).
``tests/agent/test_provider_protocol.py`` checks every provider against it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from stoprule.agent.hook.event import HookEvent
    from stoprule.agent.hook.providers.context import Context

__all__ = ["Provider"]


class Provider(Protocol):
    def provide(self, event: HookEvent, ctx: Context) -> tuple[dict[str, Any], list[str]]: ...
