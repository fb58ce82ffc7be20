"""Fact providers: each ``provide(event, ctx) -> (observations, notes)``, run in a fixed order.

Order (:data:`stoprule.hooks.settings.PROVIDER_ORDER`): ``hook``, ``state``, ``closure``,
``transcript``, ``git`` — what was declared (the payload, facts declared for the session,
the agent's closure trailer) before what is inferred (the transcript, the working tree).
A provider reports neutral observations (``transcript.turns`` ...); ``providers.fields``
in the config maps each to a fact field of the pack (or to nothing). The ``state``
provider's observations are fact fields already (``state.<field>`` may rename one).

The first provider to set a field wins; a later provider with a different value is
recorded as a conflict, never silently overwrites. Each provider gets ``timeout_ms``:
it is told its deadline, and one that overruns it has its observations dropped (noted).
"""

from __future__ import annotations

import importlib
import time
from dataclasses import dataclass, field
from typing import Any

from ..event import HookEvent
from ..settings import PROVIDER_ORDER

__all__ = ["Context", "Provenance", "gather"]


@dataclass
class Context:
    """What a provider may use besides the event."""

    project: str | None  # the .stoprule/ directory (None: there is none)
    home: str  # where session state lives: the project, else the user's state directory
    workdir: str
    settings: dict[str, Any]  # the ``providers`` section (plain dict)
    session: dict[str, Any]  # the hook's record for this session (providers may update it)
    deadline: float = 0.0  # time.monotonic() by which the running provider must be done


@dataclass
class Provenance:
    """Which provider set each fact field, what else was observed, conflicts and notes."""

    fields: dict[str, dict[str, Any]] = field(default_factory=dict)
    observed: list[dict[str, Any]] = field(default_factory=list)
    conflicts: list[dict[str, Any]] = field(default_factory=list)
    notes: dict[str, list[str]] = field(default_factory=dict)
    timings_ms: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "fields": self.fields,
            "observed": self.observed,
            "conflicts": self.conflicts,
            "notes": self.notes,
            "timings_ms": self.timings_ms,
        }


def _run(name: str, event: HookEvent, ctx: Context) -> tuple[dict[str, Any], list[str]]:
    module = importlib.import_module(f".{name}_provider", __name__)
    result: tuple[dict[str, Any], list[str]] = module.provide(event, ctx)
    return result


def gather(event: HookEvent, ctx: Context) -> tuple[dict[str, Any], Provenance]:
    """Run the enabled providers in order; the merged fact and its provenance."""
    enabled = set(ctx.settings.get("enabled", PROVIDER_ORDER))
    mapping: dict[str, str | None] = ctx.settings.get("fields", {})
    budget = ctx.settings.get("timeout_ms", 1500) / 1000.0
    fact: dict[str, Any] = {}
    prov = Provenance()
    for name in PROVIDER_ORDER:
        if name not in enabled:
            continue
        t0 = time.monotonic()
        ctx.deadline = t0 + budget
        try:
            obs, notes = _run(name, event, ctx)
        except Exception as exc:  # noqa: BLE001 - a provider's failure is a note, not the hook's
            obs, notes = {}, [f"failed: {type(exc).__name__}: {exc}"]
        spent = time.monotonic() - t0
        prov.timings_ms[name] = round(spent * 1000, 2)
        if spent > budget:
            obs, notes = {}, [*notes, f"took {spent * 1000:.0f} ms, over its {budget * 1000:.0f} ms: ignored"]
        if notes:
            prov.notes[name] = notes
        for key, value in obs.items():
            target = mapping.get(f"{name}.{key}", key if name == "state" else None)
            if target is None:
                prov.observed.append({"provider": name, "key": key, "value": value})
                continue
            if target in fact:
                if fact[target] != value:
                    kept = prov.fields[target]
                    prov.conflicts.append({
                        "field": target,
                        "kept": {"provider": kept["provider"], "value": kept["value"]},
                        "ignored": {"provider": name, "key": key, "value": value},
                    })  # fmt: skip
                continue
            fact[target] = value
            prov.fields[target] = {"provider": name, "key": key, "value": value}
    return fact, prov
