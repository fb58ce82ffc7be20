"""The ``server:`` section of ``.stoprule/config.yaml``: ask a ``stoprule serve`` instead of deciding here.

Named in :data:`stoprule.agent.config.SECTIONS`; see :mod:`stoprule.agent.hook.remote`.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ServerSettings"]


class ServerSettings(BaseModel):
    """``server:`` — where the decision service is and how to reach it."""

    model_config = ConfigDict(extra="forbid")

    url: str | None = Field(None, pattern=r"^https?://")
    token_env: str = Field("STOPRULE_SERVER_TOKEN", min_length=1)  # the variable holding the bearer token
    timeout_ms: int = Field(2000, ge=50, le=600000)
    record: bool = True  # the server records each stop in its ledger (run = the session id)
    project: str | None = None  # the name the team sees for this project's blockers (default: its directory's)
