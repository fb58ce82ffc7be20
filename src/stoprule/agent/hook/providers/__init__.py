"""Fact providers: each ``provide(event, ctx) -> (observations, notes)``, run in a fixed order.

Order (:data:`stoprule.config.defaults.PROVIDER_ORDER`): ``hook``, ``state``, ``blockers``,
``transcript``, ``closure``, ``git``, and always last ``guard`` (the agent's refused attempts)
— what was declared (the payload, facts declared for
the session, blockers the agent logged) before what is inferred (the working tree); the
transcript comes before ``closure`` so that the agent's last message (its closure trailer,
a question to the user) is read from the transcript when the payload has none.
A provider reports neutral observations (``transcript.turns`` ...); ``providers.fields``
in the config maps each to a fact field of the pack (or to nothing). The ``state``
provider's observations are fact fields already (``state.<field>`` may rename one).

The first provider to set a field wins; a later provider with a different value is
recorded as a conflict, never silently overwrites. Each provider gets ``timeout_ms``:
it is told its deadline. One that fails or overruns it makes the stop an internal error
(:class:`ObservationFailed`, the hook's fail policy): what it did not see is never "nothing".

Modules: one per provider (``hook_provider``, ``state_provider``, ``blockers_provider``,
``transcript_provider``, ``closure_provider``, ``git_provider``, ``guard_provider``), imported
when it first runs, each a :class:`~.protocol.Provider` (``protocol``); ``git_baseline`` takes
the git provider's baseline at session start, ``git_hidden`` reads what a session hid from
git when a stop finds something new; ``context`` holds what they are given
(:class:`Context`) and what the merge records (:class:`Provenance`); ``_turn`` says which stops
belong to one user turn, for the providers that keep per-turn marks.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

import time

from stoprule.agent.hook.event import HookEvent
from stoprule.agent.hook.providers.context import Context, Provenance
from stoprule.config.defaults import PROVIDER_ORDER
from stoprule.diagnostics import AgentError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from stoprule.agent.hook.providers.protocol import Provider

__all__ = ["Context", "ObservationFailed", "Provenance", "gather", "merge"]


def _provider(name: str) -> Provider:
    """The module of provider ``name`` (of :data:`PROVIDER_ORDER`), imported when it first runs."""
    if name == "hook":
        from stoprule.agent.hook.providers import hook_provider

        return hook_provider
    if name == "state":
        from stoprule.agent.hook.providers import state_provider

        return state_provider
    if name == "blockers":
        from stoprule.agent.hook.providers import blockers_provider

        return blockers_provider
    if name == "closure":
        from stoprule.agent.hook.providers import closure_provider

        return closure_provider
    if name == "transcript":
        from stoprule.agent.hook.providers import transcript_provider

        return transcript_provider
    if name == "git":
        from stoprule.agent.hook.providers import git_provider

        return git_provider
    if name == "guard":
        from stoprule.agent.hook.providers import guard_provider

        return guard_provider
    raise KeyError(name)


def _run(name: str, event: HookEvent, ctx: Context) -> tuple[dict[str, Any], list[str]]:
    return _provider(name).provide(event, ctx)


class ObservationFailed(AgentError):
    """A provider failed or overran its budget: what it would have seen is unknown, and unknown
    is never "nothing there" (the hook's fail policy decides the stop)."""


def gather(event: HookEvent, ctx: Context) -> tuple[dict[str, Any], Provenance]:
    """Run the enabled providers in order; the merged fact and its provenance. Raises
    :class:`ObservationFailed` when one failed or overran its budget."""
    enabled = set(ctx.settings.get("enabled", PROVIDER_ORDER))
    budget = ctx.settings.get("timeout_ms", 1500) / 1000.0
    results: list[tuple[str, dict[str, Any], list[str]]] = []
    timings: dict[str, float] = {}
    failures: list[str] = []
    for name in (*PROVIDER_ORDER, "guard"):  # guard: always (the agent's attempts are never the config's to hide)
        if name not in enabled and name != "guard":
            continue
        t0 = time.monotonic()
        ctx.deadline = t0 + budget
        try:
            obs, notes = _run(name, event, ctx)
        except Exception as exc:  # noqa: BLE001 - collected: could not observe is never "nothing there"
            obs, notes = {}, [f"failed: {type(exc).__name__}: {exc}"]
            failures.append(f"{name}: {type(exc).__name__}: {exc}")
        if name == "transcript" and event.last_message is None:
            scan = ctx.scan if ctx.scan is not None else (ctx.session.get("transcript") or {}).get("scan") or {}
            if isinstance(scan.get("last_text"), str) and scan["last_text"].strip():
                event.last_message = scan["last_text"]  # the payload has none: the transcript's
                notes = [*notes, "last message read from the transcript"]
        spent = time.monotonic() - t0
        timings[name] = round(spent * 1000, 2)
        if spent > budget:
            obs, notes = {}, [*notes, f"took {spent * 1000:.0f} ms, over its {budget * 1000:.0f} ms: ignored"]
            failures.append(f"{name}: took {spent * 1000:.0f} ms, over its {budget * 1000:.0f} ms")
        results.append((name, obs, notes))
    if failures:
        raise ObservationFailed(
            "could not observe (" + "; ".join(failures)[:1000] + "): the stop is not decided on what is missing"
        )
    fields = ctx.settings.get("fields", {})
    fact, prov = merge(results, fields)
    prov.timings_ms = timings
    _skip_blocked(fact, prov, fields)
    _session_mode(fact, prov, fields, event, ctx)
    return fact, prov


def _session_mode(
    fact: dict[str, Any], prov: Provenance, fields: dict[str, str | None], event: HookEvent, ctx: Context
) -> None:
    """``sessionMode`` and where it came from; what the harness, the config or the user's switch
    says beats a declared value (the agent can declare facts; it cannot make itself attended)."""
    from stoprule.agent.hook.mode import resolve

    target = fields.get("session.mode", "sessionMode")
    if not target:
        return
    scan = (ctx.session.get("transcript") or {}).get("scan") if ctx.scan is None else ctx.scan
    scan = scan if isinstance(scan, dict) else None
    mode, source = resolve(event.harness, event.raw, ctx.env, ctx.mode_setting, scan)
    if target in fact and fact[target] != mode:
        kept = prov.fields.get(target, {})
        prov.conflicts.append(
            {
                "field": target,
                "kept": {"provider": "session", "value": mode},
                "ignored": {"provider": kept.get("provider"), "value": fact[target]},
            }
        )
    fact[target] = mode
    prov.fields[target] = {"provider": "session", "key": "mode", "value": mode, "source": source}


def _skip_blocked(fact: dict[str, Any], prov: Provenance, fields: dict[str, str | None]) -> None:
    """Tasks an open progress-blocking blocker is about are never offered as the next task:
    they leave the available tasks (noted in the provenance)."""
    blocked = next(
        (o["value"] for o in prov.observed if o["provider"] == "blockers" and o["key"] == "blocked_tasks"), None
    )
    target = fields.get("transcript.available_tasks")
    if not blocked or not target or not isinstance(fact.get(target), list):
        return
    kept = [t for t in fact[target] if t not in blocked]
    if len(kept) < len(fact[target]):
        prov.notes.setdefault("blockers", []).append(f"left out of {target} (blocked): {', '.join(map(str, blocked))}")
        fact[target] = kept


# what the agent declares (facts it set, report_status, its closure trailer): never over an observation
DECLARING = ("state", "closure")


def merge(
    results: list[tuple[str, dict[str, Any], list[str]]], mapping: dict[str, str | None]
) -> tuple[dict[str, Any], Provenance]:
    """Map each provider's observations to fact fields: what was observed first (in provider
    order), then what the agent declared (:data:`DECLARING`); the first to set a field wins, so
    a declaration never overrides an observation: the conflict is kept (``declared: true``)."""
    fact: dict[str, Any] = {}
    prov = Provenance()
    ordered = [r for r in results if r[0] not in DECLARING] + [r for r in results if r[0] in DECLARING]
    for name, obs, notes in ordered:
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
                    prov.conflicts.append(
                        {
                            "field": target,
                            "kept": {"provider": kept["provider"], "value": kept["value"]},
                            "ignored": {"provider": name, "key": key, "value": value},
                            **({"declared": True} if name in DECLARING and kept["provider"] not in DECLARING else {}),
                        }
                    )
                continue
            fact[target] = value
            prov.fields[target] = {"provider": name, "key": key, "value": value}
    return fact, prov
