"""A project's settings: ``.stoprule/config.yaml``, one top-level section per layer.

Each section is a pydantic model owned by the layer it configures and named in
:data:`SECTIONS`; a missing section takes its model's defaults. Unknown keys, at the top
or inside a section, are errors naming the file, line and key (:class:`~stoprule.diagnostics.ConfigError`).
"""

from __future__ import annotations

import os
from typing import Any

from pydantic import BaseModel, ValidationError

from stoprule._util.files import read_bounded
from stoprule.agent.blocker_config import BlockerSettings
from stoprule.agent.hook_config import HookSettings, ProviderSettings, SessionSettings
from stoprule.agent.ledger_config import LedgerSettings
from stoprule.agent.server_config import ServerSettings
from stoprule.diagnostics import ConfigError, Diagnostic, unknown_hint
from stoprule.language.source import format_path, parse_yaml
from stoprule.limits import MAX_CONFIG_BYTES
from stoprule.project import find_project

__all__ = ["CONFIG_FILE", "SECTIONS", "config_path", "load_config"]

CONFIG_FILE = "config.yaml"

# section -> the model that validates it (extra keys forbidden)
SECTIONS: dict[str, type[BaseModel]] = {
    "hook": HookSettings,
    "providers": ProviderSettings,
    "blockers": BlockerSettings,
    "server": ServerSettings,
    "ledger": LedgerSettings,
    "session": SessionSettings,
}


def config_path(start: str | os.PathLike[str] | None = None) -> str | None:
    """``config.yaml`` of the nearest ``.stoprule/`` (which need not exist yet), or None."""
    state = find_project(start)
    return os.path.join(state, CONFIG_FILE) if state else None


def load_config(path: str | os.PathLike[str] | None, sections: tuple[str, ...] | None = None) -> dict[str, Any]:
    """Every section (or only ``sections``) of the config at ``path``, validated; defaults
    where the file or a section is absent. Raises :class:`ConfigError` naming file and line."""
    wanted = sections if sections is not None else tuple(SECTIONS)
    data: dict[str, Any] = {}
    diags: list[Diagnostic] = []
    name = os.fspath(path) if path is not None else CONFIG_FILE
    src = None
    if path is not None and os.path.exists(path):
        try:
            text = read_bounded(os.fspath(path), MAX_CONFIG_BYTES).decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError([Diagnostic(name, 1, 1, "config.unreadable", str(exc))]) from None
        src = parse_yaml(name, text, diags)
        if diags:
            raise ConfigError(diags)
        if src.data is None or src.data == {}:
            data = {}
        elif not isinstance(src.data, dict):
            raise ConfigError([src.diag((), "config.not_mapping", "the config must be a YAML mapping")])
        else:
            data = src.data
    for key in data:
        if key not in SECTIONS:
            hint = unknown_hint(str(key), SECTIONS)
            diags.append(src.diag((key,), "config.unknown_key", f"unknown section {key!r}{hint}"))  # type: ignore[union-attr]
    out: dict[str, Any] = {}
    for section in wanted:
        model = SECTIONS[section]
        raw = data.get(section) or {}
        try:
            out[section] = model.model_validate(raw)
        except ValidationError as exc:
            from stoprule.language.spec import validation_messages

            for sub, kind, msg in validation_messages(model, raw, exc.errors()):
                loc = (section, *sub)
                code = "config.unknown_key" if kind == "policy.unknown_key" else "config.invalid"
                if src is not None:
                    diags.append(src.diag(loc, code, msg))
                else:
                    diags.append(Diagnostic(name, 1, 1, code, msg, format_path(loc)))
    if diags:
        raise ConfigError(diags)
    return out
