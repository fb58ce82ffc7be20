"""The public API is what ``stoprule.__all__`` lists, and nothing more (as httpx does)."""

from __future__ import annotations

import re
import types
from pathlib import Path

import stoprule
from stoprule import version


def test_exported_members() -> None:
    exported = {
        n
        for n in dir(stoprule)
        if not n.startswith("_") and n != "annotations" and not isinstance(getattr(stoprule, n), types.ModuleType)
    }
    assert exported == set(stoprule.__all__) - {"__version__"}
    assert stoprule.__all__ == sorted(stoprule.__all__)


def test_api_round_trip() -> None:
    policy = stoprule.load_policy()
    verdict = policy.evaluate({"status": "blocked"})
    assert isinstance(verdict, stoprule.Verdict)
    assert verdict.to_dict()["matched"][0] == {
        "rule": "review.agent_blocked",
        "verdict": "user_review",
        "reason": "agent_blocked",
    }
    many = policy.evaluate_many([{"status": "implemented"}, {"status": 3}], on_error="return")
    assert isinstance(many[0], stoprule.Verdict) and isinstance(many[1], stoprule.FactError)


def test_version_agrees_with_pyproject() -> None:
    pyproject = (Path(__file__).resolve().parent.parent / "pyproject.toml").read_text(encoding="utf-8")
    declared = re.search(r'^version = "([^"]+)"$', pyproject, re.MULTILINE)
    assert declared is not None, "no version in pyproject.toml's [project] table"
    assert stoprule.__version__ == version.__version__ == declared.group(1)


def test_evaluate_many_pauses_the_garbage_collector_and_restores_it() -> None:
    """A batch runs without cyclic collections; the collector is left as it was found, when
    the batch raises too."""
    import gc

    import pytest

    policy = stoprule.load_policy()
    seen: list[bool] = []

    def facts():  # noqa: ANN202
        for status in ("implemented", "blocked"):
            seen.append(gc.isenabled())
            yield {"status": status}

    assert gc.isenabled()
    assert len(policy.evaluate_many(facts())) == 2 and seen == [False, False]
    assert gc.isenabled()
    with pytest.raises(stoprule.FactError):
        policy.evaluate_many([{"status": 3}])
    assert gc.isenabled()
    gc.disable()
    try:
        policy.evaluate_many([{"status": "implemented"}])
        assert not gc.isenabled()
    finally:
        gc.enable()
