"""Freezing a session at its start (:mod:`stoprule.agent.hook.frozen` says what is kept): the
record made, its pack copied, the wiring keyed; what a stop checks against it, and the
record's writing, stay in :mod:`~stoprule.agent.hook.frozen`, which calls these and gives
them itself (``fz``: its keys and stamps) by name.

On the cold path when a session starts (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

from stoprule._util import oslite as os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

__all__ = ["freeze", "lost"]


def _copy_pack(home: str, pack: str, key: str, fz: Any) -> str | None:
    """The pack's files (every layer, flat) and its ``agent/`` data copied to ``state/packs/KEY/``."""
    import shutil
    import tempfile

    dest = os.path.join(home, "state", "packs", key)
    if os.path.isfile(os.path.join(dest, fz.PACK_MARK)):
        return dest
    try:
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        tmp = tempfile.mkdtemp(prefix=".tmp-", dir=os.path.dirname(dest))
        for path in fz._pack_files(pack):
            shutil.copyfile(path, os.path.join(tmp, os.path.basename(path)))
        agent = os.path.join(pack, "agent")
        if os.path.isdir(agent):
            shutil.copytree(agent, os.path.join(tmp, "agent"))
        with open(os.path.join(tmp, fz.PACK_MARK), "w", encoding="utf-8") as fh:
            fh.write(f"a session's frozen copy of {pack}\n")
        try:
            os.rename(tmp, dest)
        except OSError:  # another session copied it first
            shutil.rmtree(tmp, ignore_errors=True)
        return dest if os.path.isfile(os.path.join(dest, fz.PACK_MARK)) else None
    except OSError:
        return None


def _wiring_paths(root: str, env: Mapping[str, str]) -> list[str]:
    from stoprule.agent.hook.wiring import MCP, OPENCODE_PLUGIN, SCOPES, TARGETS

    home = os.path.expanduser("~")
    found = [t.path(root, scope, env) for t in TARGETS.values() for scope in SCOPES]  # shared, personal, user
    found += [m.path(root, "shared") for m in MCP.values()]
    found += [
        os.path.join(root, *OPENCODE_PLUGIN[0].split("/")),
        os.path.join(home, *OPENCODE_PLUGIN[1].split("/")),
        MCP["opencode"].path(root, "user", env),
    ]
    return list(dict.fromkeys(os.path.abspath(p) for p in found))


def _wiring(paths: list[str], fz: Any) -> dict[str, Any]:
    from stoprule._util.jsonin import loads
    from stoprule.agent.guard.settings import view

    out: dict[str, Any] = {}
    for path in paths:
        data = fz._read(path)
        entry: dict[str, Any] = {"key": fz._key(data)}
        if data is not None and path.endswith(".json"):
            try:
                entry.update(view(loads(data)))
            except ValueError:
                entry["invalid"] = True
        out[path] = entry
    return out


def freeze(
    project: str | None, home: str, session: str, root: str, pack: str, env: Mapping[str, str], fz: Any
) -> dict[str, Any]:
    """Freeze the session: its config (``config.freeze``), a copy of its pack, the keys of what
    else decides it. Returns the record to keep as ``frozen`` in the session's record."""
    import time

    from stoprule.agent.hook.state import read_facts
    from stoprule.project import GUARD_OFF_FILE as OFF_FILE

    config = None
    if project is not None:
        from stoprule.config.freeze import freeze as freeze_config

        try:
            config = freeze_config(project, session).digest
        except Exception:  # noqa: BLE001 - an unreadable config: the live one decides (its error the stop's)
            config = None
    stamp = fz.pack_stamp(pack)  # before the bytes are read: a change meanwhile shows at the next stop
    key = fz.pack_key(pack)
    copy = _copy_pack(home, pack, key, fz)
    copy_stamp = fz.pack_stamp(copy) if copy else None
    rec: dict[str, Any] = {
        "at": round(time.time(), 3),
        "root": root,
        "project": project,
        "config": config,
        "config_key": fz._key(fz._read(os.path.join(project, "config.yaml"))) if project else None,
        "pack": {
            "path": pack,
            "key": key,
            "stamp": {"files": stamp, "racy": fz._racy(stamp)} if stamp is not None else None,
            "copy": copy,
            "copy_key": fz.pack_key(copy) if copy else None,
            "copy_stamp": {"files": copy_stamp, "racy": fz._racy(copy_stamp)} if copy_stamp is not None else None,
        },
        "wiring": _wiring(_wiring_paths(root, env), fz),
        "guard": "off" if project and os.path.exists(os.path.join(project, OFF_FILE)) else "on",
        "switches": fz._switches(project),
        "env": fz._env(env),
        "facts": read_facts(project, None) if project else {},
        "named": [],
    }
    return rec


def lost(home: str, session: str, record: Mapping[str, Any]) -> str | None:
    """What says this session froze before though its frozen record no longer reads (its config
    copy, or a stop the hook's own record counted), or None: a first freeze."""
    from stoprule.project import state_file

    if os.path.exists(state_file(home, "config", session)):
        return "its frozen config copy is still there"
    return "an earlier stop of the session was counted" if isinstance(record.get("guard"), dict) else None
