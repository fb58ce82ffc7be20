"""The default run and the integration tier (pyproject.toml's markers): a table whose cases each
start processes or servers keeps a fast representative in the default run, and `pytest -m
integration` (.ci/run) runs every other case."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest


def first_by_default(cases: Iterable[Any], keep: int = 1) -> list[Any]:
    """The first ``keep`` cases as they are, the others marked ``integration`` (a tuple is one
    case's values, one per parameter name)."""
    return [
        case if i < keep else pytest.param(*case if isinstance(case, tuple) else (case,), marks=pytest.mark.integration)
        for i, case in enumerate(cases)
    ]
