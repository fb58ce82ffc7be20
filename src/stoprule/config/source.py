"""A config file's bytes, read bounded: a FIFO, a device or a file over
:data:`~stoprule.limits.MAX_CONFIG_BYTES` is refused unread (``config.unreadable``).

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

from stoprule import codes
from stoprule._util import oslite as os
from stoprule._util.files import read_bounded
from stoprule.limits import MAX_CONFIG_BYTES

__all__ = ["read_config"]


def read_config(path: str | os.PathLike[str]) -> bytes | None:
    """The bytes of the config file at ``path``; None when it does not exist. A FIFO, a huge or an
    unreadable file is a :class:`~stoprule.diagnostics.ConfigError` (refused unread)."""
    name = os.fspath(path)
    try:
        return read_bounded(name, MAX_CONFIG_BYTES)
    except FileNotFoundError:
        return None
    except OSError as exc:
        from stoprule.diagnostic import Diagnostic
        from stoprule.diagnostics import ConfigError

        raise ConfigError([Diagnostic(name, 1, 1, codes.CONFIG_UNREADABLE, str(exc))]) from None
