"""Which files make up a pack, and a cheap key over their raw bytes (no YAML parsing).

A pack is its directory's YAML files, layered over the user's global pack when there is one
(docs/policy-language.md, "The global pack"): ``$STOPRULE_GLOBAL_POLICY`` (empty: none), else
``$XDG_CONFIG_HOME/stoprule/policies``, else ``~/.config/stoprule/policies``. A global file
whose name the pack also has is shadowed by the pack's; the others join the pack, named
``global/NAME`` in diagnostics (their rule ids are ``<file stem>.<id>`` as any file's).

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

from stoprule._util import oslite as os

__all__ = ["GLOBAL_PREFIX", "global_pack", "layers", "pack_files", "raw_key"]

GLOBAL_PREFIX = "global/"


def global_pack(env: os._Environ[str] | dict[str, str] | None = None) -> str | None:
    """The global pack's directory, if it exists."""
    env = os.environ if env is None else env
    if "STOPRULE_GLOBAL_POLICY" in env:
        path = env["STOPRULE_GLOBAL_POLICY"]
    else:
        base = env.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
        path = os.path.join(base, "stoprule", "policies")
    return os.path.normpath(path) if path and os.path.isdir(path) else None


def _yaml_names(root: str | os.PathLike[str]) -> list[str]:
    with os.scandir(root) as it:
        return sorted(
            e.name for e in it if e.is_file() and e.name.endswith((".yaml", ".yml")) and not e.name.startswith(".")
        )


def layers(root: str | os.PathLike[str]) -> tuple[list[str], list[str], str | None]:
    """``(global files used, global files shadowed by the pack's, the global pack)``: paths. A
    session's frozen copy of a pack (a ``FROZEN`` file in it) is whole: nothing is layered under it."""
    glob = global_pack()
    if glob is None or os.path.exists(os.path.join(root, "FROZEN")):
        return [], [], None
    try:
        if os.path.samefile(glob, root):
            return [], [], None
        names = _yaml_names(glob)
    except OSError:
        return [], [], None
    own = set(_yaml_names(root)) if os.path.isdir(root) else set()
    used = [os.path.join(glob, n) for n in names if n not in own]
    shadowed = [os.path.join(glob, n) for n in names if n in own]
    return used, shadowed, glob


def pack_files(root: str | os.PathLike[str]) -> list[str]:
    """Paths of the pack's YAML files, sorted by name (subfolders such as ``tests/`` excluded),
    after the global pack's files it does not shadow."""
    own = [os.path.join(root, n) for n in _yaml_names(root)]
    used, _, _ = layers(root)
    return used + own


def raw_key(files: list[str], glob: str | None = None) -> tuple[str, list[tuple[str, bytes]]]:
    """sha256 over the file names and contents, and the contents read; files of ``glob`` (the global
    pack) are named ``global/NAME``."""
    import hashlib

    h = hashlib.sha256()
    contents = []
    for p in files:
        with open(p, "rb") as fh:
            data = fh.read()
        name = os.path.basename(p)
        if glob is not None and os.path.dirname(p) == glob:
            name = GLOBAL_PREFIX + name
        contents.append((name, data))
        h.update(name.encode() + b"\0" + str(len(data)).encode() + b"\0" + data)
    return h.hexdigest(), contents
