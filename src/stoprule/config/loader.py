"""The one loader: a YAML config file validated against pydantic models, every mistake a
:class:`~stoprule.diagnostics.ConfigError` naming the file, line and key.

    load_config(path, sections)     .stoprule/config.yaml: each section's model (defaults where absent)
    load_document(name, data, model)  one whole document against one model (``stoprule serve --config``)
    config_path(start)              config.yaml of the nearest .stoprule/

The hook does not come here on a warm start: :mod:`stoprule.config.reader` caches what this
module validates, by the file's bytes.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from stoprule import codes
from stoprule._util.hints import unknown_hint
from stoprule.config.sections import SECTIONS
from stoprule.config.source import read_config
from stoprule.diagnostic import Diagnostic
from stoprule.diagnostics import ConfigError
from stoprule.language.source import PathKey, SourceFile, format_path, parse_yaml
from stoprule.language.spec import validation_messages
from stoprule.project import CONFIG_FILE, find_project

__all__ = [
    "CONFIG_FILE",
    "config_path",
    "load_config",
    "load_document",
]


_M = TypeVar("_M", bound=BaseModel)


def config_path(start: str | os.PathLike[str] | None = None) -> str | None:
    """``config.yaml`` of the nearest ``.stoprule/`` (which need not exist yet), or None."""
    state = find_project(start)
    return os.path.join(state, CONFIG_FILE) if state else None


def _mapping(name: str, data: bytes) -> tuple[SourceFile | None, dict[Any, Any]]:
    """The document as a mapping (empty: ``{}``), with where each value is."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError([Diagnostic(name, 1, 1, codes.CONFIG_UNREADABLE, str(exc))]) from None
    diags: list[Diagnostic] = []
    src = parse_yaml(name, text, diags)
    if diags:
        raise ConfigError(diags)
    if src.data is None or src.data == {}:
        return src, {}
    if not isinstance(src.data, dict):
        raise ConfigError([src.diag((), codes.CONFIG_NOT_MAPPING, "the config must be a YAML mapping")])
    return src, src.data


def _diag(name: str, src: SourceFile | None, loc: PathKey, code: str, message: str) -> Diagnostic:
    return src.diag(loc, code, message) if src is not None else Diagnostic(name, 1, 1, code, message, format_path(loc))


def _validate(
    name: str, src: SourceFile | None, model: type[_M], raw: Any, at: PathKey, diags: list[Diagnostic]
) -> _M | None:
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        for sub, kind, msg in validation_messages(model, raw, exc.errors()):
            code = codes.CONFIG_UNKNOWN_KEY if kind == codes.POLICY_UNKNOWN_KEY else codes.CONFIG_INVALID
            diags.append(_diag(name, src, (*at, *sub), code, msg))
        return None


def load_config(
    path: str | os.PathLike[str] | None, sections: tuple[str, ...] | None = None, *, data: bytes | None = None
) -> dict[str, Any]:
    """Every section (or only ``sections``) of the config at ``path``, validated (models of
    :data:`~stoprule.config.sections.SECTIONS`); defaults where the file or a section is absent.
    ``data``: the file's bytes, already read (``path`` then only names it). Raises
    :class:`ConfigError` naming file and line."""
    wanted = sections if sections is not None else tuple(SECTIONS)
    name = os.fspath(path) if path is not None else CONFIG_FILE
    if data is None and path is not None:
        data = read_config(path)
    src, doc = _mapping(name, data) if data is not None else (None, {})
    diags = [
        _diag(name, src, (key,), codes.CONFIG_UNKNOWN_KEY, f"unknown section {key!r}{unknown_hint(str(key), SECTIONS)}")
        for key in doc
        if key not in SECTIONS
    ]
    out: dict[str, Any] = {}
    for section in wanted:
        out[section] = _validate(name, src, SECTIONS[section], doc.get(section) or {}, (section,), diags)
    if diags:
        raise ConfigError(diags)
    return out


def load_document(name: str, data: bytes, model: type[_M]) -> _M:
    """The whole document ``data`` (from the file ``name``) validated against ``model``.
    Raises :class:`ConfigError` naming file, line and key."""
    src, doc = _mapping(name, data)
    diags: list[Diagnostic] = []
    found = _validate(name, src, model, doc, (), diags)
    if found is None:
        raise ConfigError(diags)
    return found


def section_defaults() -> Mapping[str, BaseModel]:
    """Each section's model with nothing set (its defaults)."""
    return {name: model() for name, model in SECTIONS.items()}
