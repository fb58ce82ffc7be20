"""Each config test reads and writes its own cache folder: entries other checkouts wrote are not seen."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _own_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path_factory.mktemp("cache")
    monkeypatch.setenv("STOPRULE_CACHE_DIR", str(folder))
    monkeypatch.delenv("STOPRULE_NO_CACHE", raising=False)
    return folder
