"""The ``ledger:`` section of ``.stoprule/config.yaml``: which ledger the project's commands use.

Named in :data:`stoprule.agent.config.SECTIONS`. ``--ledger`` and ``$STOPRULE_LEDGER`` take
precedence over it; without any of the three, ``ledger.db`` beside the config (see ``cli/common.py``).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["LedgerSettings"]


class LedgerSettings(BaseModel):
    """``ledger:`` — where decisions are recorded."""

    model_config = ConfigDict(extra="forbid")

    # a SQLite file (relative: to the config's directory) or a postgresql:// URL (the password
    # belongs in ~/.pgpass or $PGPASSWORD, not in a file that may be committed)
    url: str | None = Field(None, min_length=1)

    @field_validator("url")
    @classmethod
    def _known_scheme(cls, value: str | None) -> str | None:
        if value is not None and "://" in value and not value.startswith(("postgresql://", "postgres://")):
            raise ValueError("must be a file path or a postgresql:// URL")
        if value is not None and value != value.strip():
            raise ValueError("must not start or end with spaces")
        return value
