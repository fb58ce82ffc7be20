"""The ``blockers`` section of ``.stoprule/config.yaml`` (unknown keys are errors)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from stoprule.agent.defaults import DEFAULT_BLOCKERS

__all__ = ["BlockerSettings"]


class BlockerSettings(BaseModel):
    """Blocker tool and blocked-report settings.

    ``file`` (the rendered view, default ``.stoprule/blockers.md``: stoprule's own files
    never dirty the agent's work tree) is relative to the project (the directory holding ``.stoprule/``); an
    absolute path, a ``..`` step, or a symlink that leads out of the project is an error.
    ``soft_categories`` adds soft categories to the pack's ``blocker_categories.soft``
    (choices an agent may make itself, such as naming or formatting): the categories the
    ``blocker`` tool accepts are the pack's blocker categories plus these.
    """

    model_config = ConfigDict(extra="forbid")

    enabled: bool = DEFAULT_BLOCKERS["enabled"]
    file: str = DEFAULT_BLOCKERS["file"]
    max_per_run: int = Field(DEFAULT_BLOCKERS["max_per_run"], gt=0)
    cooldown_seconds: float = Field(DEFAULT_BLOCKERS["cooldown_seconds"], ge=0)
    rotate_bytes: int = Field(DEFAULT_BLOCKERS["rotate_bytes"], gt=0)
    rotate_entries: int = Field(DEFAULT_BLOCKERS["rotate_entries"], gt=0)
    soft_categories: list[str] = Field(default_factory=list)
    ledger: bool = False  # record each logged blocker and filed report in the ledger (run = session)

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
