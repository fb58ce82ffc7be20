"""The ``hook:`` and ``providers:`` sections of ``.stoprule/config.yaml`` (pydantic models).

Named in :data:`stoprule.agent.config.SECTIONS`; :func:`stoprule.agent.settings.hook_settings`
validates through them once per distinct file content and caches plain dicts.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from stoprule.agent.defaults import DEFAULT_HOOK, PROVIDER_ORDER

__all__ = ["HookSettings", "ProviderSettings"]

Provider = Literal["hook", "state", "blockers", "transcript", "closure", "git"]


class HookSettings(BaseModel):
    """``hook:`` — how ``stoprule hook`` decides and reports."""

    model_config = ConfigDict(extra="forbid")

    mode: Literal["enforce", "observe"] = "enforce"
    fail: Literal["open", "closed"] = "open"
    loop_cap: int = Field(3, ge=1, le=100)
    ledger: bool = False
    budget_ms: int = Field(5000, ge=100, le=600000)
    log: bool | str = True
    strict: bool = False
    permission_triage: bool = False  # deny permission requests with the triage (autonomous sessions)
    resident: bool = False  # start the user's resident process on demand (stoprule resident)
    closed_message: str = Field(DEFAULT_HOOK["closed_message"], min_length=1)


class ProviderSettings(BaseModel):
    """``providers:`` — which fact providers run and which fact field each observation feeds."""

    model_config = ConfigDict(extra="forbid")

    enabled: list[Provider] = Field(default_factory=lambda: list(PROVIDER_ORDER))  # type: ignore[arg-type]
    timeout_ms: int = Field(1500, ge=10, le=600000)
    fields: dict[str, str | None] = Field(default_factory=dict)
    transcript_tail_bytes: int = Field(262144, ge=4096)
    transcript_max_scan_bytes: int = Field(8388608, ge=0)
