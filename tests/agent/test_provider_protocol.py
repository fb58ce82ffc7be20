"""Every fact provider matches the Provider protocol (stoprule.agent.hook.providers.protocol):
``provide(event, ctx: Context) -> (observations, notes)``, and each gives that shape."""

from __future__ import annotations

from pathlib import Path

import pytest

from protocolcheck import mismatches
from stoprule.agent.hook.event import HookEvent
from stoprule.agent.hook.providers import _provider
from stoprule.agent.hook.providers.context import Context
from stoprule.agent.hook.providers.protocol import Provider
from stoprule.config.defaults import PROVIDER_ORDER


@pytest.mark.parametrize("name", PROVIDER_ORDER)
def test_every_provider_matches_the_protocol(name: str) -> None:
    assert mismatches(_provider(name), Provider, bound=True) == []


@pytest.mark.parametrize("name", PROVIDER_ORDER)
def test_every_provider_gives_observations_and_notes(name: str, tmp_path: Path) -> None:
    """Outside any project, repository or transcript: each answers (nothing to observe, noted)."""
    ctx = Context(None, str(tmp_path), str(tmp_path), {}, {})
    ctx.deadline = float("inf")
    obs, notes = _provider(name).provide(HookEvent(harness="claude-code", event="stop", cwd=str(tmp_path)), ctx)
    assert isinstance(obs, dict) and isinstance(notes, list) and all(isinstance(n, str) for n in notes)
    assert all(isinstance(k, str) for k in obs)


def test_the_check_sees_a_provider_of_another_shape() -> None:
    class Wrong:
        @staticmethod
        def provide(event: HookEvent) -> dict[str, object]:
            return {}

    assert mismatches(Wrong, Provider, bound=True) != []
