"""The sections of ``.stoprule/config.yaml``, one pydantic model each (unknown keys are errors).

Every default comes from :mod:`stoprule.config.defaults`; a field's ``description`` is the
comment ``stoprule init`` writes beside it (:mod:`stoprule.config.template`). :data:`SECTIONS`
names them for the loader (:mod:`stoprule.config.loader`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from stoprule.config.defaults import (
    DEFAULT_BLOCKERS,
    DEFAULT_HOOK,
    DEFAULT_LEDGER,
    DEFAULT_PROVIDERS,
    DEFAULT_SERVER,
    DEFAULT_SESSION,
)

__all__ = [
    "SECTIONS",
    "BlockerSettings",
    "HookSettings",
    "LedgerSettings",
    "ProviderSettings",
    "ServerSettings",
    "SessionSettings",
]

Provider = Literal["hook", "state", "blockers", "transcript", "closure", "git"]


class HookSettings(BaseModel):
    """``hook:`` — how ``stoprule hook`` decides and reports."""

    model_config = ConfigDict(extra="forbid")

    mode: Literal["enforce", "observe"] = Field(
        DEFAULT_HOOK["mode"], description="enforce | observe (decide, log and record, but never block)"
    )
    fail: Literal["open", "closed"] = Field(
        DEFAULT_HOOK["fail"],
        description="open: an internal error allows the stop; closed: it blocks with closed_message",
    )
    loop_cap: int = Field(
        DEFAULT_HOOK["loop_cap"],
        ge=1,
        le=100,
        description="consecutive blocks per session and turn before the stop is allowed anyway",
    )
    ledger: bool = Field(DEFAULT_HOOK["ledger"], description="record every decision in the ledger (run = session id)")
    budget_ms: int = Field(DEFAULT_HOOK["budget_ms"], ge=100, le=600000, description="the whole hook's time budget")
    log: bool | str = Field(DEFAULT_HOOK["log"], description="one line per stop in .stoprule/hook.log (or this file)")
    strict: bool = Field(DEFAULT_HOOK["strict"], description="warnings about the fact are errors")
    permission_triage: bool = Field(
        DEFAULT_HOOK["permission_triage"],
        description="deny permission requests with the triage (autonomous sessions only)",
    )
    resident: bool = Field(
        DEFAULT_HOOK["resident"],
        description="a stop decided in its own process starts the user's resident process (stoprule resident)",
    )
    closed_message: str = Field(
        DEFAULT_HOOK["closed_message"], min_length=1, description="what the agent is told when fail: closed blocks"
    )


class ProviderSettings(BaseModel):
    """``providers:`` — which fact providers run and which fact field each observation feeds."""

    model_config = ConfigDict(extra="forbid")

    enabled: list[Provider] = Field(
        default_factory=lambda: list(DEFAULT_PROVIDERS["enabled"]), description="the providers that run, in this order"
    )
    timeout_ms: int = Field(DEFAULT_PROVIDERS["timeout_ms"], ge=10, le=600000, description="each provider's budget")
    fields: dict[str, str | None] = Field(
        default_factory=dict, description="observation -> fact field of the pack (null: observe only)"
    )
    transcript_tail_bytes: int = Field(
        DEFAULT_PROVIDERS["transcript_tail_bytes"], ge=4096, description="the transcript's end read first"
    )
    transcript_max_scan_bytes: int = Field(
        DEFAULT_PROVIDERS["transcript_max_scan_bytes"], ge=0, description="how far back the transcript is read at most"
    )


class BlockerSettings(BaseModel):
    """``blockers:`` — the blocker tool and blocked reports.

    ``file`` (the rendered view, default ``.stoprule/blockers.md``: stoprule's own files
    never dirty the agent's work tree) is relative to the project (the directory holding
    ``.stoprule/``); an absolute path, a ``..`` step, or a symlink that leads out of the project
    is an error. ``soft_categories`` adds soft categories to the pack's ``blocker_categories.soft``
    (choices an agent may make itself, such as naming or formatting): the categories the
    ``blocker`` tool accepts are the pack's blocker categories plus these.
    """

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(DEFAULT_BLOCKERS["enabled"], description="the blocker tools are on")
    file: str = Field(DEFAULT_BLOCKERS["file"], description="the rendered view, relative to the project")
    max_per_run: int = Field(DEFAULT_BLOCKERS["max_per_run"], gt=0, description="blockers one session may log")
    cooldown_seconds: float = Field(
        DEFAULT_BLOCKERS["cooldown_seconds"], ge=0, description="the same blocker again within this is not logged"
    )
    rotate_bytes: int = Field(
        DEFAULT_BLOCKERS["rotate_bytes"], gt=0, description="the record is rotated past this size"
    )
    rotate_entries: int = Field(DEFAULT_BLOCKERS["rotate_entries"], gt=0, description="... or this many entries")
    soft_categories: list[str] = Field(
        default_factory=list, description="soft categories beside the pack's (choices an agent may make itself)"
    )
    ledger: bool = Field(
        DEFAULT_BLOCKERS["ledger"], description="record each logged blocker and filed report in the ledger"
    )

    @field_validator("file")
    @classmethod
    def _inside(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the blockers file must be a non-empty path inside the project")
        if value.startswith(("/", "\\")) or (len(value) > 1 and value[1] == ":"):
            raise ValueError(f"the blockers file {value!r} must be relative to the project, not absolute")
        parts = value.replace("\\", "/").split("/")
        if ".." in parts:
            raise ValueError(f"the blockers file {value!r} must stay inside the project (no '..')")
        if "\x00" in value:
            raise ValueError("the blockers file path contains a NUL byte")
        return value


class ServerSettings(BaseModel):
    """``server:`` — ask a ``stoprule serve`` instead of deciding here (:mod:`stoprule.agent.hook.remote`)."""

    model_config = ConfigDict(extra="forbid")

    url: str | None = Field(DEFAULT_SERVER["url"], pattern=r"^https?://", description="the decision service")
    token_env: str = Field(
        DEFAULT_SERVER["token_env"], min_length=1, description="the environment variable holding the bearer token"
    )
    timeout_ms: int = Field(DEFAULT_SERVER["timeout_ms"], ge=50, le=600000, description="each call's budget")
    record: bool = Field(
        DEFAULT_SERVER["record"], description="the server records each stop in its ledger (run = the session id)"
    )
    project: str | None = Field(
        DEFAULT_SERVER["project"],
        description="the name the team sees for this project's blockers (default: its directory's)",
    )


class LedgerSettings(BaseModel):
    """``ledger:`` — where the project's commands record decisions. ``--ledger`` and
    ``$STOPRULE_LEDGER`` take precedence; without any of the three, ``ledger.db`` beside the
    config (``cli/common.py``)."""

    model_config = ConfigDict(extra="forbid")

    url: str | None = Field(
        DEFAULT_LEDGER["url"],
        min_length=1,
        description="a SQLite file (relative: to the config's directory) or a postgresql:// URL (the password "
        "belongs in ~/.pgpass or $PGPASSWORD, not in a file that may be committed)",
    )

    @field_validator("url")
    @classmethod
    def _known_scheme(cls, value: str | None) -> str | None:
        if value is not None and "://" in value and not value.startswith(("postgresql://", "postgres://")):
            raise ValueError("must be a file path or a postgresql:// URL")
        if value is not None and value != value.strip():
            raise ValueError("must not start or end with spaces")
        return value


class SessionSettings(BaseModel):
    """``session:`` — who is there: ``auto`` (detected from the harness; when it says nothing,
    interactive), ``autonomous`` (nobody answers) or ``interactive`` (a person is there)."""

    model_config = ConfigDict(extra="forbid")

    mode: Literal["auto", "autonomous", "interactive"] = Field(
        DEFAULT_SESSION["mode"], description="auto | autonomous | interactive (who answers a question)"
    )


#: section -> the model that validates it (extra keys forbidden)
SECTIONS: dict[str, type[BaseModel]] = {
    "hook": HookSettings,
    "providers": ProviderSettings,
    "blockers": BlockerSettings,
    "server": ServerSettings,
    "ledger": LedgerSettings,
    "session": SessionSettings,
}
