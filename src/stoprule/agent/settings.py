"""Hook settings without pydantic: defaults, the provider order, the field mapping, and a
loader that validates ``.stoprule/config.yaml`` (through :mod:`stoprule.agent.hook_config`) once
per distinct file content and caches the result as JSON, so a warm ``stoprule hook``
imports neither pydantic nor YAML (as ``packs.py`` caches compiled packs).
"""

from __future__ import annotations

import os
import zlib

from stoprule.agent.fields import DEFAULT_FIELDS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "DEFAULT_BLOCKERS",
    "DEFAULT_FIELDS",
    "DEFAULT_HOOK",
    "DEFAULT_PROVIDERS",
    "PROVIDER_ORDER",
    "default_settings",
    "hook_settings",
]

# Providers run in this fixed order; the first to set a field wins, and a later provider
# with another value is recorded as a conflict. Declarations (hook payload, declared
# state, the agent's closure trailer) come before inference (git); the transcript comes before the
# closure trailer, which is read from the transcript's last text when the payload has none.
PROVIDER_ORDER: tuple[str, ...] = ("hook", "state", "blockers", "transcript", "closure", "git")

DEFAULT_HOOK: dict[str, Any] = {
    "mode": "enforce",
    "fail": "open",
    "loop_cap": 3,
    "ledger": False,
    "budget_ms": 5000,
    "log": True,
    "strict": False,
    "permission_triage": False,
    "closed_message": (
        "stoprule could not decide whether you may stop (an internal error; see .stoprule/hook.log). "
        "Do not start new work: summarize the current state for the user, then stop."
    ),
}
# The ``blockers:`` section's defaults (:class:`~stoprule.agent.blocker_config.BlockerSettings`
# validates a config's; the hook uses these when there is none, without pydantic).
DEFAULT_BLOCKERS: dict[str, Any] = {
    "enabled": True,
    "file": ".stoprule/blockers.md",
    "max_per_run": 50,
    "cooldown_seconds": 30.0,
    "rotate_bytes": 10 * 1024 * 1024,
    "rotate_entries": 1000,
    "soft_categories": [],
    "ledger": False,
}
DEFAULT_PROVIDERS: dict[str, Any] = {
    "enabled": list(PROVIDER_ORDER),
    "timeout_ms": 1500,
    "fields": {},
    "transcript_tail_bytes": 262144,
    "transcript_max_scan_bytes": 8388608,
}


def default_settings() -> dict[str, dict[str, Any]]:
    """The settings when there is no config file (plain dicts, as :func:`hook_settings` returns)."""
    providers = dict(DEFAULT_PROVIDERS, enabled=list(PROVIDER_ORDER), fields=dict(DEFAULT_FIELDS))
    providers["blockers"] = dict(DEFAULT_BLOCKERS, soft_categories=[])
    return {"hook": dict(DEFAULT_HOOK), "providers": providers}


def _cache_file(key: str) -> str | None:
    if os.environ.get("STOPRULE_NO_CACHE"):
        return None
    base = os.environ.get("STOPRULE_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "stoprule"
    )
    return os.path.join(base, f"hookcfg-{key}.json")


def hook_settings(path: str | None) -> dict[str, dict[str, Any]]:
    """The validated ``hook`` and ``providers`` sections of the config at ``path`` (the ``blockers``
    section rides along as ``providers["blockers"]``, for the blockers provider) (None or a
    missing file: defaults) as plain dicts; ``providers.fields`` is the full mapping (defaults
    overlaid with the file's). Raises :class:`~stoprule.diagnostics.ConfigError`.

    Cached by the file's bytes: a hit reads one small JSON file and imports nothing.
    """
    import json

    from stoprule.version import __version__

    if path is None or not os.path.exists(path):
        return default_settings()
    with open(path, "rb") as fh:
        data = fh.read()
    key = f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}{len(data):x}"
    cache = _cache_file(key)
    if cache is not None:
        try:
            with open(cache, encoding="utf-8") as fh:
                hit = json.load(fh)
            if hit.get("version") == __version__ and hit.get("path") == os.path.abspath(path):
                return hit["settings"]
        except (OSError, ValueError, KeyError, AttributeError):
            pass
    from stoprule.agent.config import load_config  # pydantic + YAML: only on a cache miss

    sections = load_config(path, sections=("hook", "providers", "blockers"))
    settings = {"hook": sections["hook"].model_dump(), "providers": sections["providers"].model_dump()}
    settings["providers"]["fields"] = {**DEFAULT_FIELDS, **settings["providers"]["fields"]}
    settings["providers"]["blockers"] = sections["blockers"].model_dump()  # for the blockers provider
    if cache is not None:
        _write_cache(cache, {"version": __version__, "path": os.path.abspath(path), "settings": settings})
    return settings


def _write_cache(cache: str, entry: dict[str, Any]) -> None:
    import json

    try:
        os.makedirs(os.path.dirname(cache), exist_ok=True)
        tmp = f"{cache}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(entry, fh)
        os.replace(tmp, cache)
    except OSError:
        return
