"""The hook's fast reader: a project's settings as plain data, validated once per distinct file
content (by :mod:`stoprule.config.loader`) and cached as JSON (:mod:`stoprule._util.cache`),
so a warm ``stoprule hook`` imports neither pydantic nor YAML.

    settings_for(project, session) -> Settings   the session's frozen copy if any, else the live config
    read_settings(path) -> Settings              the config file at ``path`` (None or missing: defaults)
    default_settings() -> Settings               every section's defaults

Commands off the hook's path that want typed sections use :func:`stoprule.config.loader.load_config`.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

from stoprule._util import oslite as os
from stoprule._util.cache import cache_file, content_key, read_entry, write_entry
from stoprule._util.records import record
from stoprule.config.defaults import DEFAULTS
from stoprule.config.fields import DEFAULT_FIELDS
from stoprule.config.source import read_config
from stoprule.project import CONFIG_FILE

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["Settings", "default_settings", "read_settings", "settings_for"]

_MAX_ENTRY_BYTES = 1 << 20
_HERE = os.path.dirname(os.path.abspath(__file__))
# the modules that shape what a config validates to: a cached entry names their sizes and mtimes
_VALIDATORS = ("defaults.py", "fields.py", "loader.py", "sections.py")


def _code_stamp() -> str:
    """The version and the validating modules' size and mtime (another checkout or an edit of
    them is a miss, never a stale hit)."""
    from stoprule.version import __version__

    parts = [__version__]
    for name in _VALIDATORS:
        try:
            st = os.stat(os.path.join(_HERE, name))
            parts.append(f"{st.st_size}:{st.st_mtime_ns}")
        except OSError:
            parts.append("?")
    return " ".join(parts)


@record
class Settings:
    """A project's validated settings, one plain dict per section of ``config.yaml``.

    ``providers["fields"]`` is the full observation -> fact field mapping (the defaults overlaid
    with the file's). ``source``: the file they came from (the config, the session's frozen copy)
    or None (the defaults)."""

    hook: dict[str, Any]
    providers: dict[str, Any]
    blockers: dict[str, Any]
    server: dict[str, Any]
    ledger: dict[str, Any]
    source: str | None = None
    session: dict[str, Any] | None = None  # ``session:`` (the session mode); None: its defaults


def _build(sections: dict[str, dict[str, Any]], source: str | None) -> Settings:
    providers = dict(sections["providers"])
    providers["fields"] = {**DEFAULT_FIELDS, **providers["fields"]}
    session = sections.get("session") or dict(DEFAULTS["session"])
    return Settings(
        sections["hook"], providers, sections["blockers"], sections["server"], sections["ledger"], source, session
    )


def default_settings() -> Settings:
    """The settings when there is no config file (a copy: the caller may change it)."""
    return _build({name: _copy(section) for name, section in DEFAULTS.items()}, None)


def _copy(section: dict[str, Any]) -> dict[str, Any]:
    """A section of defaults with its lists and mappings copied (their values are plain data)."""
    return {k: list(v) if isinstance(v, list) else dict(v) if isinstance(v, dict) else v for k, v in section.items()}


def read_settings(path: str | None) -> Settings:
    """The validated settings of the config at ``path`` (None or a missing file: the defaults).
    Raises :class:`~stoprule.diagnostics.ConfigError` naming the file, line and key.

    Cached by the file's bytes: a hit reads one small JSON file and imports nothing."""
    if path is None:
        return default_settings()
    data = read_config(path)
    return default_settings() if data is None else _validated(path, data)


def settings_for(project: str | None, session: str | None) -> Settings:
    """The settings a session is decided with: its frozen copy (:mod:`stoprule.config.freeze`)
    when it has one, else the live ``config.yaml`` of ``project`` (the ``.stoprule/`` directory;
    None: the defaults). Raises :class:`~stoprule.diagnostics.ConfigError`."""
    if project is None:
        return default_settings()
    if session:
        from stoprule.config.freeze import frozen

        copy = frozen(project, session)
        if copy is not None:
            return default_settings() if copy.data is None else _validated(copy.path, copy.data)
    return read_settings(os.path.join(project, CONFIG_FILE))


def _validated(name: str, data: bytes) -> Settings:
    """``data`` (the bytes of the file ``name``) validated, through the cache."""
    from stoprule._util.jsonin import loads
    from stoprule._util.jsonout import dumps

    stamp = _code_stamp()  # in the name too: checkouts sharing a cache folder keep an entry each
    entry = cache_file(f"config-{content_key(data)}-{content_key(stamp.encode())}.json")
    if entry is not None:
        raw = read_entry(entry, _MAX_ENTRY_BYTES)
        try:
            hit = loads(raw) if raw is not None else None
            if hit is not None and hit.get("code") == stamp and hit.get("config") == data.hex():
                return _build(hit["sections"], name)
        except (ValueError, KeyError, AttributeError, TypeError):
            pass
    from stoprule.config.loader import load_config  # pydantic + YAML: only on a cache miss

    sections = {key: model.model_dump() for key, model in load_config(name, data=data).items()}
    if entry is not None:
        write_entry(entry, dumps({"code": stamp, "config": data.hex(), "sections": sections}).encode())
    return _build(sections, name)
