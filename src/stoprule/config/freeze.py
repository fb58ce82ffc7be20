"""A project's config frozen for one session: the session is decided with the config as it was
when it started, whatever is written to ``.stoprule/config.yaml`` later.

    freeze(project, session) -> FrozenConfig         record the config as it is now (once per session)
    frozen(project, session) -> FrozenConfig | None  the session's copy, or None when there is none
    copy.changed() -> bool                           the live config differs from the copy

``project`` is the ``.stoprule/`` directory (:func:`stoprule.project.find_project`), ``session``
the harness's session id. The copy is ``state/config/<session>.json``
(:func:`stoprule.project.state_file`): the config's bytes (``null`` when the project had no
config file: the defaults), their digest (``sha256:<hex>``), where they came from and when.
It is created once, atomically: a second :func:`freeze` for the session returns the first copy
unchanged. :func:`stoprule.config.reader.settings_for` prefers the copy to the live file.

A copy that does not read back (not JSON, a digest that does not match its bytes) is a
:class:`~stoprule.diagnostics.ConfigError` (``config.frozen_damaged``), never the defaults.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

from stoprule import codes
from stoprule._util import oslite as os
from stoprule._util.files import atomic_write, read_bounded
from stoprule._util.jsonin import loads
from stoprule._util.jsonout import dumps
from stoprule._util.records import record
from stoprule.config.source import read_config
from stoprule.limits import MAX_CONFIG_BYTES
from stoprule.project import CONFIG_FILE, state_file

__all__ = ["FrozenConfig", "freeze", "frozen"]

FORMAT = 1
_MAX_COPY_BYTES = 4 * MAX_CONFIG_BYTES + 4096  # the bytes as JSON text, escaped


@record
class FrozenConfig:
    """One session's copy of a project's config."""

    session: str
    path: str  # the copy: <project>/state/config/<session>.json
    source: str  # the live config it copies: <project>/config.yaml
    data: bytes | None  # the config's bytes when frozen; None: there was no config file
    digest: str  # "sha256:<hex>" of ``data`` (of no bytes when None)
    frozen_at: float  # time.time() when frozen

    def changed(self) -> bool:
        """Whether the live config's bytes differ from the copy's (a missing file differs from a present one)."""
        return read_config(self.source) != self.data


def _key(data: bytes | None) -> str:
    """A cheap check of the copy's bytes (hashlib would cost each stop ~2 ms)."""
    from stoprule._util.native import content_key

    return content_key(data or b"")


def _digest(data: bytes | None) -> str:
    import hashlib

    return "sha256:" + hashlib.sha256(data or b"").hexdigest()


def _damaged(path: str, why: str) -> Exception:
    from stoprule.diagnostic import Diagnostic
    from stoprule.diagnostics import ConfigError

    return ConfigError(
        [Diagnostic(path, 1, 1, codes.CONFIG_FROZEN_DAMAGED, f"the session's frozen config does not read back: {why}")]
    )


def _stored(session: str) -> str:
    """The session id as the copy stores it: cleaned (no control character, no lone surrogate)
    and redacted (an id can carry a secret; nothing is written unredacted)."""
    from stoprule._util.redact import redact
    from stoprule._util.text import clean

    return redact(clean(session))


def freeze(project: str, session: str) -> FrozenConfig:
    """Record ``project``'s config as it is now for ``session`` (the ``.stoprule/`` directory and
    the session id) and return the copy; when the session has one already, return that one
    unchanged. Raises :class:`~stoprule.diagnostics.ConfigError` when the config cannot be read
    and ``OSError`` when the copy cannot be written."""
    import time

    path = state_file(project, "config", session)
    existing = frozen(project, session)
    if existing is not None:
        return existing
    source = os.path.join(project, CONFIG_FILE)
    data = read_config(source)
    copy = FrozenConfig(session, path, source, data, _digest(data), round(time.time(), 3))
    text = None if data is None else data.decode("utf-8", "surrogateescape")
    entry = {"format": FORMAT, "session": _stored(session), "source": CONFIG_FILE, "digest": copy.digest,
             "key": _key(data),
             "frozen_at": copy.frozen_at, "config": text}  # fmt: skip
    if atomic_write(path, dumps(entry), exclusive=True, mode=0o600):
        return copy
    found = frozen(project, session)  # another process froze it first: theirs holds
    assert found is not None
    return found


def frozen(project: str, session: str) -> FrozenConfig | None:
    """``session``'s copy of ``project``'s config, or None when it has none. Raises
    :class:`~stoprule.diagnostics.ConfigError` for a copy that does not read back."""
    path = state_file(project, "config", session)
    try:
        raw = read_bounded(path, _MAX_COPY_BYTES)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _damaged(path, str(exc)) from None
    try:
        entry = loads(raw)
        text = entry["config"]
        data = None if text is None else text.encode("utf-8", "surrogateescape")
        copy = FrozenConfig(
            str(entry["session"]),
            path,
            os.path.join(project, CONFIG_FILE),
            data,
            str(entry["digest"]),
            float(entry["frozen_at"]),
        )
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise _damaged(path, f"{type(exc).__name__}: {exc}") from None
    intact = entry["key"] == _key(data) if "key" in entry else _digest(data) == copy.digest
    if entry.get("format") != FORMAT or copy.session != _stored(session) or not intact:
        raise _damaged(path, "its format, session or digest does not match its content")
    return copy
