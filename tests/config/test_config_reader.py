"""The hook's cached reader (stoprule.config.reader): validated once per distinct content,
a cache entry is data checked against the file it stands for."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stoprule._util.cache import content_key
from stoprule.config.reader import read_settings
from stoprule.diagnostics import ConfigError


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("STOPRULE_CACHE_DIR", str(folder))
    monkeypatch.delenv("STOPRULE_NO_CACHE", raising=False)
    return folder


def test_a_second_read_of_the_same_bytes_is_a_hit(tmp_path: Path, cache: Path) -> None:
    cfg = tmp_path / "config.yaml"
    cfg.write_text("hook: {loop_cap: 7}\n")
    first = read_settings(str(cfg))
    [entry] = cache.glob(f"config-{content_key(cfg.read_bytes())}-*.json")
    assert entry.exists() and first.hook["loop_cap"] == 7
    assert read_settings(str(cfg)) == first


def test_an_entry_that_does_not_match_its_file_is_ignored(tmp_path: Path, cache: Path) -> None:
    cfg = tmp_path / "config.yaml"
    cfg.write_text("hook: {fail: closed}\n")
    read_settings(str(cfg))
    [entry] = cache.glob(f"config-{content_key(cfg.read_bytes())}-*.json")
    forged = json.loads(entry.read_text())
    forged["sections"]["hook"]["fail"] = "open"
    forged["config"] = b"hook: {fail: open}\n".hex()
    entry.write_text(json.dumps(forged))
    assert read_settings(str(cfg)).hook["fail"] == "closed"


def test_an_entry_another_checkout_wrote_is_a_miss(tmp_path: Path, cache: Path) -> None:
    """The same config bytes validated by other code (another version, an edited model) may mean
    other settings: the entry names the code it came from."""
    cfg = tmp_path / "config.yaml"
    cfg.write_text("hook: {}\n")
    read_settings(str(cfg))
    [entry] = cache.glob(f"config-{content_key(cfg.read_bytes())}-*.json")
    other = json.loads(entry.read_text())
    other["code"] = "0.0.1 1:1 1:1 1:1 1:1"
    other["sections"]["hook"]["mode"] = "observe"
    entry.write_text(json.dumps(other))
    assert read_settings(str(cfg)).hook["mode"] == "enforce"


@pytest.mark.parametrize(
    ("text", "line", "path", "code"),
    [
        ("hook:\n  mode: sometimes\n", 2, "hook.mode", "config.invalid"),
        ("hooks: {}\n", 1, "hooks", "config.unknown_key"),
        ("hook:\n  loop_kap: 3\n", 2, "hook.loop_kap", "config.unknown_key"),
        ("- a\n", 1, "", "config.not_mapping"),
    ],
)
def test_a_bad_config_names_file_line_and_key(
    tmp_path: Path, cache: Path, text: str, line: int, path: str, code: str
) -> None:
    cfg = tmp_path / "config.yaml"
    cfg.write_text(text)
    for _ in range(2):  # nothing of a bad config is cached
        with pytest.raises(ConfigError) as caught:
            read_settings(str(cfg))
        [diag] = caught.value.diagnostics
        assert (diag.file, diag.line, diag.path, diag.code) == (str(cfg), line, path, code)
