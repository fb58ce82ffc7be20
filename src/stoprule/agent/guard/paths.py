"""What the guard protects: stoprule's files and each harness's hook and MCP wiring.

By name, wherever it is (a path's components): a project's ``.stoprule/``; the harnesses'
project config (``.claude/``, ``.codex/``, ``.gemini/``, ``.opencode/``, ``.agents/``, the
Cursor and Copilot hook and MCP files, ``.mcp.json``, ``opencode.json``). By place: the
user's stoprule directories (the global pack and config, caches, state: their ``XDG_*`` and
``STOPRULE_*`` locations too), the harnesses' user config directories where a variable moved
them, and the managed-settings folders. Writing there is the user's business, never the agent's.

:func:`protected` answers for one path; :data:`TEXT_NAMES` finds the same names in code the
agent runs (an inline ``python -c``, a script).
"""

from __future__ import annotations

from stoprule._util import oslite as os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["TEXT_NAMES", "Places", "protected"]

# a path component -> what it is (any file below it is protected)
DIRS: dict[str, str] = {
    ".stoprule": "stoprule's project state and settings",
    ".claude": "Claude Code's settings and hooks",
    ".codex": "Codex's config and hooks",
    ".gemini": "Gemini CLI's settings and hooks",
    ".opencode": "OpenCode's plugins",
    ".agents": "Antigravity's hooks and MCP servers",
    ".copilot": "Copilot CLI's config and hooks",
}
# (parent component, name) -> what it is; parent None: any parent
FILES: dict[tuple[str | None, str], str] = {
    (None, ".mcp.json"): "the project's MCP servers",
    (None, "opencode.json"): "OpenCode's config (plugins, MCP servers)",
    (None, "opencode.jsonc"): "OpenCode's config (plugins, MCP servers)",
    (".cursor", "hooks.json"): "Cursor's hooks",
    (".cursor", "mcp.json"): "Cursor's MCP servers",
    (".github", "mcp.json"): "Copilot's MCP servers",
    (".vscode", "mcp.json"): "VS Code's MCP servers",
}
# (parent component, folder) -> what it is
SUBDIRS: dict[tuple[str, str], str] = {
    (".github", "hooks"): "Copilot's hooks",
    (".config", "stoprule"): "stoprule's global pack and user config",
    (".cache", "stoprule"): "stoprule's caches",
    (".config", "opencode"): "OpenCode's user config and plugins",
}

# The same names, as a regular expression over code: each at a path boundary (a quote, a slash,
# the start), not inside a longer name.
TEXT_NAMES = (
    r"(?<![\w.-])(?:\.stoprule|\.claude|\.codex|\.gemini|\.opencode|\.copilot|\.agents[/\\](?:hooks|mcp_config)\.json"
    r"|\.mcp\.json|opencode\.jsonc?|\.cursor[/\\](?:hooks|mcp)\.json|\.github[/\\](?:hooks|mcp\.json)"
    r"|(?:\.config|\.cache|\.local[/\\]state)[/\\]stoprule|managed-settings\.json)(?![\w-])"
    r"|XDG_(?:CONFIG|CACHE|STATE)_HOME|STOPRULE_(?:STATE|CACHE)_DIR"
)


class Places:
    """The protected places that depend on where things are: the user's stoprule directories
    and the harnesses' config directories, from ``env`` (the hook's environment: the harness's,
    which the agent's shell cannot change)."""

    __slots__ = ("dirs",)

    def __init__(self, env: Mapping[str, str], home: str | None = None) -> None:
        home = home or env.get("HOME") or os.path.expanduser("~")
        config = env.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
        cache = env.get("XDG_CACHE_HOME") or os.path.join(home, ".cache")
        state = env.get("XDG_STATE_HOME") or os.path.join(home, ".local", "state")
        found: list[tuple[str, str]] = [
            (os.path.join(config, "stoprule"), "stoprule's global pack and user config"),
            (os.path.join(cache, "stoprule"), "stoprule's caches"),
            (os.path.join(state, "stoprule"), "stoprule's state"),
            (os.path.join(home, ".local", "state", "stoprule"), "stoprule's state"),
            (os.path.join(config, "opencode"), "OpenCode's user config and plugins"),
            ("/etc/claude-code", "Claude Code's managed settings"),
            ("/Library/Application Support/ClaudeCode", "Claude Code's managed settings"),
            ("/etc/gemini-cli", "Gemini CLI's system settings"),
            ("/etc/cursor", "Cursor's enterprise hooks"),
            ("/etc/codex", "Codex's managed config"),
        ]
        for var, what in (
            ("STOPRULE_GLOBAL_POLICY", "stoprule's global pack"),
            ("STOPRULE_CACHE_DIR", "stoprule's caches"),
            ("STOPRULE_STATE_DIR", "stoprule's state"),
            ("CLAUDE_CONFIG_DIR", "Claude Code's settings and hooks"),
            ("CODEX_HOME", "Codex's config and hooks"),
            ("COPILOT_HOME", "Copilot CLI's config and hooks"),
        ):
            if env.get(var):
                found.append((env[var], what))
        ledger = env.get("STOPRULE_LEDGER")
        if ledger and "://" not in ledger:
            found.append((ledger, "stoprule's decision ledger"))
        self.dirs = [(os.path.normpath(os.path.abspath(p)), what) for p, what in found]


def _by_name(path: str) -> str | None:
    parts = [p for p in path.replace("\\", "/").split("/") if p]
    for i, part in enumerate(parts):
        parent = parts[i - 1] if i else None
        if part in DIRS:
            return DIRS[part]
        if parent is not None and (parent, part) in SUBDIRS:
            return SUBDIRS[(parent, part)]
        if i + 1 == len(parts):
            return FILES.get((parent, part)) or FILES.get((None, part))
    return None


def _under(path: str, places: Places) -> str | None:
    for root, what in places.dirs:
        if path == root or path.startswith(root.rstrip("/") + "/"):
            return what
    return None


def protected(path: str, places: Places, *, contains: bool = False) -> str | None:
    """What the absolute ``path`` is, when it is protected (else None); its real path (symlinks
    resolved) counts too. ``contains``: also when ``path`` is a folder holding a protected place
    (a recursive delete or move of it takes them along)."""
    norm = os.path.normpath(path)
    candidates = [norm]
    try:
        real = os.path.realpath(norm)
    except (OSError, ValueError):
        real = norm
    if real != norm:
        candidates.append(real)
    for p in candidates:
        what = _by_name(p) or _under(p, places)
        if what is not None:
            return what if p == norm else f"{what}: it links to {p}"
    if contains:
        for p in candidates:
            prefix = p.rstrip("/") + "/"
            for root, what in places.dirs:
                if root.startswith(prefix):
                    return what
            try:
                with os.scandir(p) as it:
                    for entry in it:
                        if entry.name in DIRS or (None, entry.name) in FILES:
                            return DIRS.get(entry.name) or FILES[(None, entry.name)]
            except OSError:
                pass
    return None
