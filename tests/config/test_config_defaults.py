"""Defaults are written once (stoprule.config.defaults): each pydantic model, the hook's plain
reader and the ``stoprule init`` template agree with them."""

from __future__ import annotations

from pathlib import Path

import pytest

from stoprule.config.defaults import DEFAULTS, SERVE_DEFAULTS, SERVE_LIMITS
from stoprule.config.fields import DEFAULT_FIELDS
from stoprule.config.loader import load_config
from stoprule.config.reader import default_settings, read_settings
from stoprule.config.sections import SECTIONS
from stoprule.config.serve import Limits, ServeConfig, ServeFile
from stoprule.config.template import INIT_CHOICES, SHOWN, config_template


@pytest.mark.parametrize("section", sorted(SECTIONS))
def test_each_model_takes_its_defaults_from_the_table(section: str) -> None:
    assert SECTIONS[section]().model_dump() == DEFAULTS[section]
    assert set(SECTIONS[section].model_fields) == set(DEFAULTS[section])


def test_the_serve_file_takes_its_defaults_from_the_table() -> None:
    assert ServeFile().model_dump() == SERVE_DEFAULTS
    assert Limits().__dict__ == SERVE_LIMITS
    assert ServeConfig().reload_interval_ms == SERVE_DEFAULTS["reload_interval_ms"]


def test_the_reader_without_a_file_gives_what_the_loader_gives_for_an_empty_one(tmp_path: Path) -> None:
    empty = tmp_path / "config.yaml"
    empty.write_text("# nothing set\n")
    plain = default_settings()
    assert read_settings(str(empty))._replace(source=None) == plain
    assert read_settings(str(tmp_path / "missing.yaml")) == plain == read_settings(None)
    loaded = {name: model.model_dump() for name, model in load_config(str(empty)).items()}
    assert {**loaded["providers"], "fields": DEFAULT_FIELDS} == plain.providers
    assert (loaded["hook"], loaded["blockers"], loaded["server"], loaded["ledger"]) == (
        plain.hook,
        plain.blockers,
        plain.server,
        plain.ledger,
    )


def test_the_defaults_are_not_shared_between_readers() -> None:
    first = default_settings()
    first.hook["mode"] = "observe"
    first.providers["enabled"].append("x")
    assert default_settings().hook["mode"] == DEFAULTS["hook"]["mode"]
    assert default_settings().providers["enabled"] == DEFAULTS["providers"]["enabled"]


@pytest.mark.parametrize("triage", [False, True])
def test_the_init_template_holds_the_defaults_and_the_init_choices(tmp_path: Path, triage: bool) -> None:
    text = config_template(permission_triage=triage)
    path = tmp_path / "config.yaml"
    path.write_text(text)
    loaded = load_config(str(path))
    choices = {**INIT_CHOICES, ("hook", "permission_triage"): triage}
    for section, model in loaded.items():
        want = {k: choices.get((section, k), v) for k, v in DEFAULTS[section].items()}
        assert model.model_dump() == want, section
    shown = [
        ln.split(":")[0].strip()
        for ln in text.splitlines()
        if ln.startswith("  ") and ":" in ln and not ln.lstrip().startswith("#")
    ]
    assert shown == [name for names in SHOWN.values() for name in names]


def test_every_setting_the_template_shows_has_its_comment() -> None:
    text = config_template()
    for section, names in SHOWN.items():
        for name in names:
            comment = SECTIONS[section].model_fields[name].description
            assert comment and f"# {comment}\n" in text, (section, name)
