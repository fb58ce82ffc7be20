"""Hook settings without pydantic: defaults, the provider order, the field mapping, and a
loader that validates ``.stoprule/config.yaml`` (through :mod:`stoprule.agent.hook_config`) once
per distinct file content and caches the result as JSON, so a warm ``stoprule hook``
imports neither pydantic nor YAML (as ``packs.py`` caches compiled packs).

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

import os
import zlib

from stoprule.agent.defaults import DEFAULT_BLOCKERS, DEFAULT_HOOK, DEFAULT_PROVIDERS, DEFAULT_SESSION, PROVIDER_ORDER
from stoprule.agent.fields import DEFAULT_FIELDS
from stoprule.limits import MAX_CONFIG_BYTES

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




def default_settings() -> dict[str, dict[str, Any]]:
    """The settings when there is no config file (plain dicts, as :func:`hook_settings` returns)."""
    providers = dict(DEFAULT_PROVIDERS, enabled=list(PROVIDER_ORDER), fields=dict(DEFAULT_FIELDS))
    providers["blockers"] = dict(DEFAULT_BLOCKERS, soft_categories=[])
    return {"hook": dict(DEFAULT_HOOK), "providers": providers, "session": dict(DEFAULT_SESSION)}


def _cache_file(key: str) -> str | None:
    if os.environ.get("STOPRULE_NO_CACHE"):
        return None
    base = os.environ.get("STOPRULE_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "stoprule"
    )
    return os.path.join(base, f"hookcfg-{key}.json")


def hook_settings(path: str | None) -> dict[str, dict[str, Any]]:
    """The validated ``hook``, ``providers`` and ``session`` sections of the config at ``path`` (the ``blockers``
    section rides along as ``providers["blockers"]``, for the blockers provider) (None or a
    missing file: defaults) as plain dicts; ``providers.fields`` is the full mapping (defaults
    overlaid with the file's). Raises :class:`~stoprule.diagnostics.ConfigError`.

    Cached by the file's bytes: a hit reads one small JSON file and imports nothing.
    """
    import json

    from stoprule._util.files import read_bounded
    from stoprule.version import __version__

    if path is None:
        return default_settings()
    try:
        data = read_bounded(path, MAX_CONFIG_BYTES)  # a FIFO or a huge file is refused unread
    except FileNotFoundError:
        return default_settings()
    except OSError as exc:
        from stoprule.diagnostics import ConfigError, Diagnostic

        raise ConfigError([Diagnostic(path, 1, 1, "config.unreadable", str(exc))]) from None
    key = f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}{len(data):x}"
    cache = _cache_file(key)
    if cache is not None:
        try:
            hit = json.loads(read_bounded(cache, 1 << 20))
            if hit.get("version") == __version__ and hit.get("path") == os.path.abspath(path):
                return hit["settings"]
        except (OSError, ValueError, KeyError, AttributeError):
            pass
    from stoprule.agent.config import load_config  # pydantic + YAML: only on a cache miss

    sections = load_config(path, sections=("hook", "providers", "blockers", "server", "ledger", "session"))
    settings = {"hook": sections["hook"].model_dump(), "providers": sections["providers"].model_dump()}
    settings["server"] = sections["server"].model_dump()
    settings["ledger"] = sections["ledger"].model_dump()
    settings["session"] = sections["session"].model_dump()
    settings["providers"]["fields"] = {**DEFAULT_FIELDS, **settings["providers"]["fields"]}
    settings["providers"]["blockers"] = sections["blockers"].model_dump()  # for the blockers provider
    if cache is not None:
        _write_cache(cache, {"version": __version__, "path": os.path.abspath(path), "settings": settings})
    return settings


def _write_cache(cache: str, entry: dict[str, Any]) -> None:
    import json

    from stoprule._util.files import atomic_write

    try:
        atomic_write(cache, json.dumps(entry), sync=False)
    except OSError:
        return
