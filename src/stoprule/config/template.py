"""The ``.stoprule/config.yaml`` that ``stoprule init`` writes, generated from the defaults.

Each line shows one setting: its value is the default (:mod:`stoprule.config.defaults`) unless
:data:`INIT_CHOICES` says what a new project starts with instead, and its comment is the
field's ``description`` (:mod:`stoprule.config.sections`). ``tests/config/test_template.py``
loads the result and holds it equal to the defaults and the choices.
"""

from __future__ import annotations

import json
from typing import Any

from stoprule.config.defaults import DEFAULTS
from stoprule.config.sections import SECTIONS

__all__ = ["INIT_CHOICES", "SHOWN", "config_template"]

#: the settings a new config shows, per section, in order
SHOWN: dict[str, tuple[str, ...]] = {
    "hook": ("mode", "fail", "loop_cap", "ledger", "budget_ms", "permission_triage"),
    "providers": ("enabled", "timeout_ms"),
}
#: what a new project starts with where it differs from the default
INIT_CHOICES: dict[tuple[str, str], Any] = {
    ("hook", "ledger"): True,  # a new project records every decision in .stoprule/ledger.db
}
_HEADER = "# stoprule settings (see docs/agents.md). Unknown keys are errors.\n"
_FIELDS_EXAMPLE = (
    "  # fields:          # observation -> fact field of the pack (null: observe only)\n"
    "  #   transcript.turns: turn\n"
    "  #   git.dirty: uncommittedWork\n"
)
_COMMENT_AT = 21  # the column comments start at, where the setting is short enough


def _yaml(value: Any) -> str:
    """A default as a YAML flow value: JSON (which is YAML), names without quotes."""
    if isinstance(value, str) and value.isidentifier() and value not in ("true", "false", "null"):
        return value
    if isinstance(value, list):
        return f"[{', '.join(_yaml(v) for v in value)}]"
    return json.dumps(value)


def config_template(*, permission_triage: bool = False) -> str:
    """The new config's text; ``permission_triage`` turns ``hook.permission_triage`` on."""
    choices = {**INIT_CHOICES, ("hook", "permission_triage"): permission_triage}
    out = [_HEADER]
    for section, names in SHOWN.items():
        out.append(f"{section}:\n")
        model = SECTIONS[section]
        for name in names:
            value = choices.get((section, name), DEFAULTS[section][name])
            setting = f"  {name}: {_yaml(value)}"
            comment = model.model_fields[name].description
            out.append(f"{setting.ljust(_COMMENT_AT - 2)}  # {comment}\n" if comment else f"{setting}\n")
        if section == "providers":
            out.append(_FIELDS_EXAMPLE)
    return "".join(out)
