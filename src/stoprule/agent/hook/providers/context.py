"""What a fact provider is given (:class:`Context`) and what merging their observations
records (:class:`Provenance`). Plain classes with slots: built once per stop.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

from stoprule.config.defaults import DEFAULT_BLOCKERS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

__all__ = ["Context", "Provenance"]


class Context:
    """What a provider may use besides the event: ``project`` (the .stoprule/ directory or
    None), ``home`` (where session state lives: the project, else the user's state
    directory), ``workdir``, ``settings`` (the ``providers`` section, a plain dict),
    ``blockers`` (the ``blockers`` section, a plain dict),
    ``session`` (the hook's record for this session; providers may update it) and
    ``deadline`` (``time.monotonic()`` by which the running provider must be done); ``pack``:
    the policy pack's directory (its ``agent/*.json`` data), None for the bundled one; ``env``
    the hook's environment and ``mode_setting`` the config's ``session.mode`` (the session
    mode, :mod:`stoprule.agent.hook.mode`); ``scan``: a transcript reader's state given
    instead of the file (``replay``)."""

    __slots__ = ("blockers", "deadline", "env", "frozen", "home", "mode_setting", "new_attempts", "pack", "project",
                 "scan", "session", "settings", "workdir")  # fmt: skip

    def __init__(
        self,
        project: str | None,
        home: str,
        workdir: str,
        settings: dict[str, Any],
        session: dict[str, Any],
        blockers: dict[str, Any] | None = None,
    ) -> None:
        self.project, self.home, self.workdir, self.settings, self.session = project, home, workdir, settings, session
        self.blockers: dict[str, Any] = dict(DEFAULT_BLOCKERS) if blockers is None else blockers
        self.deadline = 0.0
        self.pack: str | None = None
        self.env: Mapping[str, str] = {}  # the hook process's environment (set by the harness)
        self.mode_setting: str | None = None  # config session.mode
        self.scan: dict[str, Any] | None = None  # replay: the transcript reader's state at this stop
        self.new_attempts: list[str] = []  # the guard provider's: refused attempts not yet named to the user
        self.frozen: dict[str, Any] | None = None  # the session's frozen record (stoprule.agent.hook.frozen)


class Provenance:
    """Which provider set each fact field, what else was observed, conflicts and notes."""

    __slots__ = ("conflicts", "fields", "notes", "observed", "timings_ms")

    def __init__(self) -> None:
        self.fields: dict[str, dict[str, Any]] = {}
        self.observed: list[dict[str, Any]] = []
        self.conflicts: list[dict[str, Any]] = []
        self.notes: dict[str, list[str]] = {}
        self.timings_ms: dict[str, float] = {}

    def to_dict(self) -> dict[str, Any]:
        return {
            "fields": self.fields,
            "observed": self.observed,
            "conflicts": self.conflicts,
            "notes": self.notes,
            "timings_ms": self.timings_ms,
        }
