"""A session frozen at its start: what decides its stops, whatever is written later.

At session start (a harness without a session-start hook: at its first stop) :func:`freeze`
records, in ``state/frozen/<session>.json`` (written once, redacted; :func:`load`, :func:`save`;
the freezing itself is :mod:`stoprule.agent.hook.freezing`, off the stop's path):

- ``root``: the project root, from the harness (``$CLAUDE_PROJECT_DIR``, ``$GEMINI_PROJECT_DIR``:
  the hook's environment, never the agent's current directory);
- ``config``: a key of ``config.yaml``'s bytes (the bytes themselves are frozen by
  :func:`stoprule.config.freeze.freeze`, which :func:`stoprule.config.reader.settings_for` reads);
- ``pack``: the selected pack (every layer: its files and the global pack's it uses), copied
  content-addressed to ``state/packs/<key>/``: every stop of the session loads that copy; a
  key of the pack's and of the copy's bytes, and a stamp of their files' stats
  (:func:`pack_stamp`): a stop reads the bytes again only when a stamp no longer vouches for them;
- ``wiring``: each harness hook and MCP file of the project and the user, with a content key and
  (for the guard's ``ConfigChange`` check) its :func:`~stoprule.agent.guard.settings.view`;
- ``guard``: the user's guard switch; ``switches``: a key of each other switch file the agent
  could write to change a stop (blocker logging's ``blockers/switch.json``); ``env``: the
  hook's ``STOPRULE_*``, ``XDG_*``, ``GIT_*`` variables; ``facts``: the project-wide declared
  facts (a session reads them as they were).

At each stop :func:`changes` names what differs since (the config, a pack layer, a wiring file,
the switches, the environment, the project-wide facts, a ``.stoprule/`` created below the root,
the frozen pack copy itself; :func:`lost`: the frozen record removed or damaged mid-session):
each once, as an entry of the session's attempts journal, so the stop's answer names it to the
user and the ledger keeps it. The session goes on being decided with what was frozen.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

from stoprule._util import oslite as os
from stoprule._util.files import RACY_NS, file_stamp, racy
from stoprule._util.native import content_key

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

__all__ = ["PACK_MARK", "anchor", "changes", "freeze", "load", "lost", "pack_of", "save"]

PACK_MARK = "FROZEN"  # in a frozen pack copy: its files are the whole pack (no global layering)
RESTAMPED = "restamped"  # in a record's ``pack``: a stamp was taken again (the record is to be saved)
_ENV_PREFIXES = ("STOPRULE_", "XDG_", "GIT_")
_SWITCHES = {"blockers": ("blockers", "switch.json")}  # below the project's root: what a stop reads live


def _key(data: bytes | None) -> str:
    return "-" if data is None else content_key(data)


def _read(path: str, limit: int = 8 << 20) -> bytes | None:
    from stoprule._util.regular import read_regular

    return read_regular(path, limit)


def load(home: str, session: str) -> dict[str, Any] | None:
    """The session's frozen record (None: it has none, or it does not read back)."""
    from stoprule._util.jsonin import loads
    from stoprule.project import state_file

    data = _read(state_file(home, "frozen", session), 16 << 20)
    try:
        record = loads(data) if data else None
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def save(home: str, session: str, record: dict[str, Any], *, first: bool = False) -> bool:
    """Write the session's frozen record (redacted first); ``first``: only if it has none yet
    (a concurrent start's record holds). Whether it was written; never raises."""
    from stoprule._util.files import atomic_write
    from stoprule._util.jsonout import dumps
    from stoprule._util.redact import redact_obj
    from stoprule._util.text import clean_obj
    from stoprule.project import state_file

    try:
        text = dumps(redact_obj(clean_obj(record)), ensure_ascii=False)
        return bool(atomic_write(state_file(home, "frozen", session), text, sync=False, exclusive=first))
    except OSError:
        return False


def anchor(harness: str, env: Mapping[str, str]) -> str | None:
    """The project root the harness itself names (its session's start directory), or None."""
    var = {"claude-code": "CLAUDE_PROJECT_DIR", "gemini": "GEMINI_PROJECT_DIR"}.get(harness)
    value = env.get(var) if var else None
    return value if value and os.path.isdir(value) else None


def _pack_files(pack: str) -> list[str]:
    from stoprule.language.files import pack_files

    try:
        return pack_files(pack)
    except OSError:
        return []


def _pack_paths(pack: str) -> list[tuple[str, str]]:
    """``(name, path)`` of each of the pack's files (every layer) and of its ``agent/`` data."""
    out = [(os.path.basename(path), path) for path in _pack_files(pack)]
    agent = os.path.join(pack, "agent")
    if os.path.isdir(agent):
        out += [(f"agent/{n}", os.path.join(agent, n)) for n in sorted(os.listdir(agent))]
    return out


def pack_key(pack: str) -> str:
    """A key over the pack's files (every layer), their names and bytes."""
    return _key("\n".join(f"{name}:{_key(_read(path))}" for name, path in _pack_paths(pack)).encode())


def pack_stamp(pack: str) -> list[list[Any]] | None:
    """Each of the pack's files' stamp (:func:`~stoprule._util.files.file_stamp`), labelled by its
    name (None: one could not be stated): equal stamps vouch for equal bytes, as the compiled-pack
    cache's do, unless a file changed within ``RACY_NS`` of the stamp (:func:`_racy`)."""
    try:
        return [file_stamp(name, path) for name, path in _pack_paths(pack)]
    except OSError:
        return None


def _racy(stamp: list[list[Any]]) -> bool:
    """Whether a file of ``stamp`` changed within ``RACY_NS`` of now (the stamp does not vouch yet)."""
    import time

    return racy(stamp, time.time_ns(), RACY_NS)


def _same_pack(pack: str, record: dict[str, Any], key_field: str, stamp_field: str) -> bool:
    """Whether ``pack``'s files are those ``record[key_field]`` keyed: by their stamp when the
    record's (``record[stamp_field]``, not racy) still vouches for them, else by their bytes, and
    then the stamp is kept in the record (marked :data:`RESTAMPED`, to be saved) for the next stop."""
    stamp = pack_stamp(pack)
    kept = record.get(stamp_field)
    if stamp is not None and isinstance(kept, dict) and kept.get("files") == stamp and kept.get("racy") is False:
        return True
    same = pack_key(pack) == record.get(key_field)
    if same and stamp is not None:
        taken = {"files": stamp, "racy": _racy(stamp)}
        if taken != kept:  # (a stamp still racy is kept as it was: the record is not written again)
            record[stamp_field] = taken
            record[RESTAMPED] = True
    return same


def _env(env: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k.startswith(_ENV_PREFIXES)}


def freeze(
    project: str | None, home: str, session: str, root: str, pack: str, env: Mapping[str, str]
) -> dict[str, Any]:
    """Freeze the session (:func:`stoprule.agent.hook.freezing.freeze`, off the stop's path)."""
    import sys

    from stoprule.agent.hook import freezing

    return freezing.freeze(project, home, session, root, pack, env, sys.modules[__name__])


def lost(home: str, session: str, record: Mapping[str, Any]) -> str | None:
    """:func:`stoprule.agent.hook.freezing.lost` (off the stop's path)."""
    from stoprule.agent.hook import freezing

    return freezing.lost(home, session, record)


def pack_of(frozen: Mapping[str, Any] | None, home: str) -> str | None:
    """The frozen pack copy a stop loads (None: none usable, or it was altered: see :func:`changes`)."""
    pack = frozen.get("pack") if frozen else None
    return pack["copy"] if isinstance(pack, dict) and _copy_intact(pack, home) else None


def _copy_intact(pack: dict[str, Any], home: str) -> bool:
    """Whether the record's copy is the one freezing made: ``state/packs/<key>/`` under ``home``,
    marked, with the files it had (an agent's edit of the copy, or a record pointing elsewhere, is not)."""
    copy, key = pack.get("copy"), pack.get("key")
    if not isinstance(copy, str) or not isinstance(key, str) or not os.path.isfile(os.path.join(copy, PACK_MARK)):
        return False
    where = os.path.realpath(os.path.join(home, "state", "packs", key))
    return os.path.realpath(copy) == where and _same_pack(copy, pack, "copy_key", "copy_stamp")


def _switches(project: str | None) -> dict[str, str]:
    root = os.path.dirname(project) if project else None
    return {name: _key(_read(os.path.join(root, ".stoprule", *rel))) for name, rel in _SWITCHES.items()} if root else {}


def _rel(path: str, root: str) -> str:
    rel = os.path.relpath(path, root)
    return path if rel.startswith("..") else rel


def changes(
    frozen: dict[str, Any],
    project: str | None,
    env: Mapping[str, str],
    nested: str | None,
    selected: str | None = None,
    copy_intact: bool = True,
) -> list[tuple[str, str]]:
    """``(key, what)`` for each change since the session froze that was not named yet (each is
    then added to ``frozen["named"]``); ``nested``: a ``.stoprule/`` found below the root;
    ``selected``: the pack a stop would select now; ``copy_intact``: what :func:`pack_of` found."""
    from stoprule.project import GUARD_OFF_FILE as OFF_FILE

    root = str(frozen.get("root") or "")
    found: list[tuple[str, str]] = []
    config = os.path.join(project, "config.yaml") if project else ""
    if project and frozen.get("config_key") is not None and _key(_read(config)) != frozen["config_key"]:
        found.append(
            (
                "config",
                f"{_rel(config, root)} changed since the session started: this session is decided with it as it was",
            )
        )
    recorded_pack = frozen.get("pack")
    pack: dict[str, Any] = recorded_pack if isinstance(recorded_pack, dict) else {}
    if selected and pack.get("path") and os.path.abspath(selected) != os.path.abspath(str(pack["path"])):
        found.append(
            (
                "pack-selected",
                f"the pack a stop selects is now {_rel(selected, root)}, not "
                f"{_rel(str(pack['path']), root)}: this session is decided with the one it "
                "started with",
            )
        )
    elif pack.get("path") and not _same_pack(str(pack["path"]), pack, "key", "stamp"):
        found.append(
            (
                "pack",
                f"the policy pack {_rel(str(pack['path']), root)} (or the global pack it layers) changed "
                "since the session started: this session is decided with it as it was",
            )
        )
    if isinstance(pack.get("copy"), str) and not copy_intact:
        found.append(
            (
                "pack-copy",
                f"the session's frozen copy of the policy pack ({_rel(str(pack['copy']), root)}) was altered "
                "or replaced: this stop is decided with the pack as it is now",
            )
        )
    recorded_switches = frozen.get("switches")
    if isinstance(recorded_switches, dict):
        for name, now_key in _switches(project).items():
            if name in recorded_switches and recorded_switches[name] != now_key:
                found.append(
                    (
                        f"switch:{name}",
                        f".stoprule/{'/'.join(_SWITCHES[name])} (the {name} switch) changed during the session",
                    )
                )
    recorded_wiring = frozen.get("wiring")
    wiring: dict[str, Any] = recorded_wiring if isinstance(recorded_wiring, dict) else {}
    for path, entry in wiring.items():
        if isinstance(entry, dict) and _key(_read(path)) != entry.get("key"):
            what = (
                f"{_rel(path, root)} (the harness's hooks or MCP servers) changed since the session started: "
                "the next session loads it as it is now; review it"
            )
            found.append((f"wiring:{path}", what))
    if project and frozen.get("guard") == "on" and os.path.exists(os.path.join(project, OFF_FILE)):
        found.append(("guard", "the guard was switched off during the session: it stays on until the session ends"))
    recorded = frozen.get("env")
    before: dict[str, str] = recorded if isinstance(recorded, dict) else {}
    now = _env(env)
    for name in sorted(set(before) | set(now)):
        if before.get(name) != now.get(name):
            found.append((f"env:{name}", f"the hook's environment variable {name} changed since the session started"))
    if project is not None:
        from stoprule.agent.hook.state import read_facts

        try:
            if read_facts(project, None) != frozen.get("facts", {}):
                found.append(
                    (
                        "facts",
                        "the project-wide declared facts changed during the session: this session "
                        "reads them as they were",
                    )
                )
        except Exception:  # noqa: BLE001 - unreadable now: the frozen ones are read anyway
            pass
    if nested is not None:
        found.append(
            (
                f"nested:{nested}",
                f"a .stoprule/ at {_rel(nested, root)} below the project root is ignored "
                "(the session's project is the one it started in)",
            )
        )
    named = frozen.setdefault("named", [])
    new = [(k, w) for k, w in found if k not in named]
    named.extend(k for k, _ in new)
    return new
