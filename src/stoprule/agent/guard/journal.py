"""The session's attempts journal: every refused or undone attempt, one JSON line each.

``<state home>/state/attempts/<session>.jsonl`` (the project's ``.stoprule/``, else the user's
state directory), appended in one ``O_APPEND`` write per line (concurrent writers never
interleave), redacted first. The guard and the CLI write it; the stop hook's ``guard``
provider reads it, names what is new to the user at the next stop, and puts the session's
attempts in the fact the ledger records. Each line::

    {"at": 1767000000.0, "via": "guard", "harness": "claude-code", "tool": "Bash",
     "kind": "command", "what": "runs `stoprule facts set`, which only the user may run"}

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

from stoprule._util import oslite as os
from stoprule._util.jsonin import loads
from stoprule._util.jsonout import dumps

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

__all__ = ["MAX_LINES", "journal_file", "read_attempts", "record_attempt", "user_state_dir"]

MAX_LINES = 500  # read per session; more are counted, not kept
MAX_LINE = 2000


def user_state_dir(env: Mapping[str, str]) -> str:
    """Where state goes when no ``.stoprule/`` is found (as the stop hook's)."""
    if env.get("STOPRULE_STATE_DIR"):
        return env["STOPRULE_STATE_DIR"]
    base = env.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(base, "stoprule")


def journal_file(home: str, session: str | None) -> str:
    from stoprule.project import session_name

    return os.path.join(home, "state", "attempts", session_name(session) + ".jsonl")


def record_attempt(home: str, session: str | None, entry: dict[str, Any]) -> None:
    """Append one attempt (redacted, cleaned, each text bounded); never raises."""
    import time

    from stoprule._util.redact import redact_obj
    from stoprule._util.text import clean_obj

    try:
        item = {"at": round(time.time(), 3), **entry}
        item = {k: (v[:MAX_LINE] if isinstance(v, str) else v) for k, v in item.items()}
        line = dumps(redact_obj(clean_obj(item)), ensure_ascii=False) + "\n"
        path = journal_file(home, session)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode("utf-8", "backslashreplace"))
        finally:
            os.close(fd)
    except Exception:  # noqa: BLE001 - the refusal stands even when it cannot be written down
        return


def read_attempts(home: str, session: str | None) -> list[dict[str, Any]]:
    """The session's attempts, oldest first (damaged lines skipped; at most :data:`MAX_LINES`)."""
    from stoprule._util.regular import read_regular

    out: list[dict[str, Any]] = []
    data = read_regular(journal_file(home, session), 8 << 20)  # a FIFO or a folder there: nothing
    for line in (data or b"").decode("utf-8", "replace").splitlines():
        try:
            item = loads(line)
        except ValueError:
            continue
        if isinstance(item, dict) and isinstance(item.get("what"), str):
            out.append(item)
        if len(out) >= MAX_LINES:
            break
    return out
