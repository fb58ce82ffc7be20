"""A session's frozen config (stoprule.config.freeze): the session is decided with the config
as it was when frozen, other sessions with the live file; a damaged copy is an error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stoprule.config.freeze import freeze, frozen
from stoprule.config.reader import read_settings, settings_for
from stoprule.diagnostics import ConfigError


@pytest.fixture
def project(tmp_path: Path) -> Path:
    state = tmp_path / ".stoprule"
    state.mkdir()
    (state / "config.yaml").write_text("hook:\n  mode: enforce\n  loop_cap: 3\n")
    return state


def test_a_frozen_session_keeps_its_config_and_others_see_the_live_one(project: Path) -> None:
    copy = freeze(str(project), "s1")
    assert copy.data == (project / "config.yaml").read_bytes() and copy.digest.startswith("sha256:")
    assert not copy.changed()
    (project / "config.yaml").write_text("hook:\n  mode: observe\n  loop_cap: 9\n")
    assert copy.changed()
    mine = settings_for(str(project), "s1")
    assert (mine.hook["mode"], mine.hook["loop_cap"], mine.source) == ("enforce", 3, copy.path)
    other = settings_for(str(project), "s2")
    assert (other.hook["mode"], other.hook["loop_cap"]) == ("observe", 9)
    assert settings_for(str(project), None) == other == read_settings(str(project / "config.yaml"))


def test_freezing_twice_keeps_the_first_copy(project: Path) -> None:
    first = freeze(str(project), "s1")
    (project / "config.yaml").write_text("hook: {mode: observe}\n")
    again = freeze(str(project), "s1")
    assert again == first and frozen(str(project), "s1") == first
    assert settings_for(str(project), "s1").hook["mode"] == "enforce"


def test_a_project_without_a_config_freezes_the_defaults(project: Path) -> None:
    (project / "config.yaml").unlink()
    copy = freeze(str(project), "s1")
    assert copy.data is None and not copy.changed()
    (project / "config.yaml").write_text("hook: {mode: observe}\n")
    assert copy.changed() and settings_for(str(project), "s1").hook["mode"] == "enforce"


@pytest.mark.parametrize("session", ["../../etc/passwd", "a/b", ".hidden", "é 🎉", "x" * 300])
def test_any_session_id_stays_inside_the_state_folder(project: Path, session: str) -> None:
    copy = freeze(str(project), session)
    assert Path(copy.path).parent == project / "state" / "config"
    assert frozen(str(project), session) == copy


@pytest.mark.parametrize("session", ["\x0c", "a\x00b", "x\ud800", "\x1b[31mred"])
def test_a_session_id_with_control_characters_is_written_cleaned(project: Path, session: str) -> None:
    copy = freeze(str(project), session)
    text = Path(copy.path).read_text(encoding="utf-8")
    stored = json.loads(text)["session"]
    assert stored.isprintable(), text  # no control character or lone surrogate on disk
    back = frozen(str(project), session)  # and it reads back for the same id
    assert back is not None and (back.path, back.digest, back.data) == (copy.path, copy.digest, copy.data)


def test_no_copy_is_none(project: Path) -> None:
    assert frozen(str(project), "never") is None


@pytest.mark.parametrize(
    "damage",
    [
        lambda e: "not json",
        lambda e: json.dumps({**e, "config": e["config"] + "# edited\n"}),  # digest no longer matches
        lambda e: json.dumps({**e, "session": "other"}),
        lambda e: json.dumps({**e, "format": 99}),
        lambda e: json.dumps({k: v for k, v in e.items() if k != "digest"}),
    ],
)
def test_a_damaged_copy_is_an_error_never_the_defaults(project: Path, damage) -> None:  # type: ignore[no-untyped-def]
    copy = freeze(str(project), "s1")
    entry = json.loads(Path(copy.path).read_text())
    Path(copy.path).write_text(damage(entry))
    with pytest.raises(ConfigError) as caught:
        settings_for(str(project), "s1")
    assert [d.code for d in caught.value.diagnostics] == ["config.frozen_damaged"]


def test_a_frozen_config_that_does_not_validate_names_the_copy(project: Path) -> None:
    (project / "config.yaml").write_text("hook:\n  mode: sometimes\n")
    copy = freeze(str(project), "s1")
    (project / "config.yaml").write_text("hook:\n  mode: enforce\n")
    with pytest.raises(ConfigError) as caught:
        settings_for(str(project), "s1")
    [diag] = caught.value.diagnostics
    assert (diag.file, diag.line, diag.path) == (copy.path, 2, "hook.mode")
