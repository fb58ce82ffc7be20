"""``stoprule init --harness H [--user] [--dry-run] [--no-mcp] [--permission-triage]``: wire the
stop hook into a harness, with its session-start hook (the triage instructions, the session's
baseline) and, with ``--permission-triage``, its permission hook (and ``permission_triage: true``
in a new config). OpenCode gets a generated plugin (``.opencode/plugins/stoprule.js``) and its
MCP server in ``opencode.json``.

Writes or merges stoprule's entry into the harness's hook config (existing entries kept,
a ``.bak`` copy of a file it changes, nothing written when the entry is already there)
and creates ``.stoprule/config.yaml`` (with a ``.gitignore`` for the hook's state) when
missing. Beside the hook it registers the blocker tools' MCP server (``stoprule mcp``) in
the harness's MCP config where that is a project JSON file (Claude Code ``.mcp.json``,
Gemini CLI ``.gemini/settings.json``, Cursor ``.cursor/mcp.json``, Copilot CLI
``.github/mcp.json``) and Codex (the project's ``.codex/config.toml``, with ``required = true`` so
that ``codex exec`` waits for the server before its first request; Codex reads it in a trusted
project); ``--no-mcp`` skips it.
``--dry-run`` prints what would change instead.

Beside the stop hook it wires the guard (``stoprule guard HARNESS`` by its fast entry) on every
event of the harness that can veto a tool call (Claude Code ``PreToolUse`` and ``ConfigChange``,
Codex and Copilot ``PreToolUse``, Gemini CLI ``BeforeTool``, Cursor ``beforeShellExecution`` and
``preToolUse``; the OpenCode plugin's ``tool.execute.before``) and, for Claude Code,
``permissions.deny`` rules; ``--no-guard`` skips both. ``--managed`` (Claude Code) writes
nothing: it prints the managed-settings file that pins the same wiring where no project or
user setting can override it (``allowManagedHooksOnly``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import sys
from typing import IO, Any

if sys.version_info >= (3, 11):
    import tomllib

from stoprule._util.files import atomic_write
from stoprule.agent.hook.wiring import (
    EXTRA_EVENTS,
    GUARD_EVENTS,
    OPENCODE_CONFIG,
    OPENCODE_PLUGIN,
    TARGETS,
    add_deny_rules,
    add_entry,
    deny_rules,
    guard_argv,
    opencode_plugin,
)
from stoprule.config.template import config_template
from stoprule.diagnostics import CommandError
from stoprule.project import STATE_DIR, find_project

__all__ = ["add_arguments", "default_command", "run"]

GITIGNORE = "state/\nhook.log\nhook.log.1\nledger.db\nledger.db-*\nledger.db.keys\nledger.db.journal*\n"


def stoprule_argv() -> list[str]:
    """How a harness runs this stoprule, also when it starts without this venv on PATH: this
    interpreter, by its absolute path, on the package's launcher (``-I -S .../stoprule/launch.py``:
    a process started at every stop skips ``site``'s start, :mod:`stoprule.launch`); else the
    console script beside this interpreter, else the one on PATH, else ``python -m stoprule``."""
    launcher = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "launch.py")
    if os.path.isabs(sys.executable) and os.path.isfile(sys.executable) and os.path.isfile(launcher):
        return [sys.executable, "-I", "-S", launcher]
    here = shutil.which("stoprule", path=os.path.dirname(sys.executable))
    found = here or shutil.which("stoprule")
    if found:
        return [os.path.abspath(found)]
    return [sys.executable, "-m", "stoprule"]


def default_command(harness: str) -> str:
    """``/abs/path/python -I -S /abs/path/stoprule/launch.py hook H`` (see :func:`stoprule_argv`)."""
    return shlex.join([*stoprule_argv(), "hook", harness])


def add_arguments(p: argparse.ArgumentParser) -> None:
    harnesses = (*TARGETS, "opencode")
    p.description = "Wire `stoprule hook` into an agent harness's hook config; create .stoprule/config.yaml."
    p.add_argument("--harness", required=True, choices=harnesses, metavar="HARNESS", help=" | ".join(harnesses))
    p.add_argument(
        "--user", action="store_true", help="the harness's user-level config (home) instead of the project's"
    )
    p.add_argument("--dry-run", action="store_true", help="print the changes, write nothing")
    p.add_argument("--command", metavar="CMD", help="the hook command (default: stoprule hook HARNESS)")
    p.add_argument("--no-mcp", action="store_true", help="do not register the blocker tools' MCP server")
    p.add_argument(
        "--permission-triage",
        action="store_true",
        help="also wire the permission hook: permission requests are denied with the triage (autonomous sessions)",
    )
    p.add_argument(
        "--no-guard",
        action="store_true",
        help="do not wire the guard (the pre-tool hook refusing the agent's tampering) nor the deny rules",
    )
    p.add_argument(
        "--managed",
        action="store_true",
        help="Claude Code: print the managed-settings file pinning stoprule's hooks (allowManagedHooksOnly); "
        "writes nothing",
    )


def guard_command(harness: str, command: str | None) -> str:
    """The guard's command: its fast entry, or after ``--command``'s program (its ``hook H`` dropped)."""
    if not command:
        return shlex.join(guard_argv(harness))
    argv = shlex.split(command)
    if argv[-2:] == ["hook", harness]:
        argv = argv[:-2]
    return shlex.join([*argv, "guard", harness])


# where each system reads Claude Code's managed settings
MANAGED_PATHS = ("/etc/claude-code/managed-settings.json (Linux, WSL)",
                 "/Library/Application Support/ClaudeCode/managed-settings.json (macOS)",
                 "C:\\Program Files\\ClaudeCode\\managed-settings.json (Windows)")  # fmt: skip


def managed_settings(command: str, guard: str | None) -> dict[str, Any]:
    """Claude Code's managed settings: stoprule's stop, session-start and guard hooks, its deny
    rules, ``allowManagedHooksOnly`` (project and user hooks do not run; nobody but an
    administrator can drop these)."""
    t = TARGETS["claude-code"]
    config: dict[str, Any] = {"allowManagedHooksOnly": True}
    add_entry(config, t, command)
    for ev, name in EXTRA_EVENTS["claude-code"].items():
        if ev != "permission":
            add_entry(config, t, f"{command} --event {ev}", name)
    if guard is not None:
        for name, matcher in GUARD_EVENTS["claude-code"]:
            add_entry(config, t, guard, name, matcher, guard=True)
        config["permissions"] = {"deny": deny_rules()}
    return config


# harness -> its project MCP config file (JSON with an ``mcpServers`` object)
MCP_FILES = {"claude-code": ".mcp.json", "gemini": os.path.join(".gemini", "settings.json"),
             "cursor": os.path.join(".cursor", "mcp.json"), "copilot": os.path.join(".github", "mcp.json")}  # fmt: skip
# required: Codex waits for the server (and fails the session if it cannot start) instead of
# sending the first request without the blocker tools
CODEX_MCP = "[mcp_servers.stoprule]\ncommand = {command}\nargs = {args}\nrequired = true\n"
CODEX_CONFIG = os.path.join(".codex", "config.toml")


# the plugin route (stoprule.agent.hook.plugins): the same wiring, per user, no path in the project
PLUGIN_ROUTES = {
    "claude-code": "`stoprule plugin claude-code --out DIR`, then `claude plugin marketplace add DIR` "
    "and `claude plugin install stoprule@stoprule`",
    "gemini": "`stoprule plugin gemini --out DIR`, then `gemini extensions install DIR`",
    "opencode": "`stoprule plugin opencode --out DIR`, then name DIR/index.js (file://) in opencode.json's plugin list",
}


def _offer_plugin(harness: str, stdout: IO[str]) -> None:
    if harness in PLUGIN_ROUTES:
        stdout.write(f"note: or install stoprule as a {harness} plugin instead: {PLUGIN_ROUTES[harness]}\n")


def mcp_server() -> dict[str, Any]:
    """The MCP server entry: ``stoprule mcp`` by absolute path (see :func:`stoprule_argv`)."""
    argv = stoprule_argv()
    return {"command": argv[0], "args": [*argv[1:], "mcp"]}


def _write_json(path: str, config: dict[str, Any], dry_run: bool, what: str, stdout: IO[str], backed: set[str]) -> None:
    """Write ``config`` to ``path`` atomically, keeping a ``.bak`` of the file as it was before
    this run (``backed``: the files already backed up by it)."""
    text = json.dumps(config, indent=2, ensure_ascii=False) + "\n"
    if dry_run:
        stdout.write(f"would write {path}:\n{text}")
        return
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    if os.path.exists(path) and path not in backed:
        shutil.copy2(path, path + ".bak")
        stdout.write(f"backed up {path} to {path}.bak\n")
    backed.add(path)
    atomic_write(path, text, keep_mode=True)
    stdout.write(f"{what} in {path}\n")


def _wire_mcp(harness: str, root: str, dry_run: bool, stdout: IO[str], stderr: IO[str], backed: set[str]) -> None:
    server = mcp_server()
    if harness == "codex":
        _wire_codex_mcp(os.path.join(root, CODEX_CONFIG), server, dry_run, stdout, stderr, backed)
        return
    name = MCP_FILES.get(harness)
    if name is None:
        stdout.write(
            f"note: {harness}: register `{server['command']} {' '.join(server['args'])}` as an MCP server "
            "by hand for the blocker tools (docs/blockers.md)\n"
        )
        return
    path = os.path.join(root, name)
    try:
        config = _load(path)
        servers = config.setdefault("mcpServers", {})
        if not isinstance(servers, dict):
            raise ValueError("its mcpServers is not an object")
    except (OSError, ValueError) as exc:
        stderr.write(f"stoprule: cannot use {path}: {exc}; MCP server not registered\n")
        return
    if "stoprule" in servers:
        stdout.write(f"{path}: the stoprule MCP server is already there; unchanged\n")
        return
    servers["stoprule"] = server
    _write_json(path, config, dry_run, "registered the blocker tools' MCP server (stoprule mcp)", stdout, backed)


def _toml_tables(text: str, key: str) -> dict[str, Any]:
    """The table ``key`` of a TOML document (ValueError when it does not parse). Python 3.10
    has no TOML reader: there only a ``[key.NAME]`` header is looked for, unchecked."""
    if sys.version_info >= (3, 11):
        table = tomllib.loads(text).get(key, {})
        if not isinstance(table, dict):
            raise ValueError(f"its {key} is not a table")
        return table
    return {m: {} for m in re.findall(rf"(?m)^\s*\[{re.escape(key)}\.([A-Za-z0-9_-]+)\]", text)}


def _wire_codex_mcp(
    path: str, server: dict[str, Any], dry_run: bool, stdout: IO[str], stderr: IO[str], backed: set[str]
) -> None:
    """``[mcp_servers.stoprule]`` (``required = true``) appended to the project's Codex config;
    an existing ``stoprule`` server is kept (a note when it is not required)."""
    snippet = CODEX_MCP.format(command=json.dumps(server["command"]), args=json.dumps(server["args"]))
    old = ""
    try:
        if os.path.exists(path):
            with open(path, encoding="utf-8") as fh:
                old = fh.read()
        servers = _toml_tables(old, "mcp_servers")
    except (OSError, UnicodeDecodeError, ValueError) as exc:  # tomllib.TOMLDecodeError is a ValueError
        stderr.write(f"stoprule: cannot use {path}: {exc}; MCP server not registered; add:\n{snippet}")
        return
    if "stoprule" in servers:
        entry = servers["stoprule"]
        stdout.write(f"{path}: the stoprule MCP server is already there; unchanged\n")
        if not (isinstance(entry, dict) and entry.get("required") is True):
            stdout.write(
                f"note: add `required = true` to [mcp_servers.stoprule] in {path}: without it `codex exec` "
                "may send its first request before the blocker tools are up\n"
            )
        return
    text = old + ("\n" if old and not old.endswith("\n") else "") + ("\n" if old.strip() else "") + snippet
    _toml_tables(text, "mcp_servers")  # still one valid document
    if dry_run:
        stdout.write(f"would add to {path}:\n{snippet}")
        return
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    if old and path not in backed:
        shutil.copy2(path, path + ".bak")
        stdout.write(f"backed up {path} to {path}.bak\n")
    backed.add(path)
    atomic_write(path, text, keep_mode=True)
    stdout.write(
        f"registered the blocker tools' MCP server (stoprule mcp, required) in {path}\n"
        "note: Codex reads a project's .codex/config.toml only once the project is trusted\n"
    )


def _write_config(state_dir: str, dry_run: bool, triage: bool, stdout: IO[str]) -> None:
    """``.stoprule/config.yaml`` (and its ``.gitignore``) when missing."""
    cfg = os.path.join(state_dir, "config.yaml")
    text = config_template(permission_triage=triage)
    if os.path.exists(cfg):
        stdout.write(f"{cfg}: exists; unchanged\n")
        if triage:
            stdout.write(f"note: set `hook.permission_triage: true` in {cfg} to turn the permission triage on\n")
    elif dry_run:
        stdout.write(f"would create {cfg}:\n{text}")
    else:
        atomic_write(cfg, text, exclusive=True)
        gi = os.path.join(state_dir, ".gitignore")
        atomic_write(gi, GITIGNORE, exclusive=True)  # kept when there is one
        stdout.write(f"created {cfg} (hook settings) and {gi}\n")


def _load(path: str) -> dict[str, Any]:
    if not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    if not text.strip():
        return {}
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError("it does not hold a JSON object")
    return data


def _init_opencode(args: argparse.Namespace, root: str, stdout: IO[str], stderr: IO[str], backed: set[str]) -> int:
    """The generated plugin and the MCP server in ``opencode.json`` (project, or ``--user``)."""
    base = os.path.expanduser("~") if args.user else root
    if args.command:  # how to run stoprule (a trailing `hook opencode` is dropped)
        argv = shlex.split(args.command)
        if argv[-2:] == ["hook", "opencode"]:
            argv = argv[:-2]
    else:
        argv = stoprule_argv()
    plugin = os.path.join(base, OPENCODE_PLUGIN[1 if args.user else 0])
    if getattr(args, "no_guard", False):
        guard: list[str] = []
    elif args.command:
        guard = [*argv, "guard", "opencode"]
    else:
        guard = guard_argv("opencode")
    text = opencode_plugin(argv, guard)
    old = None
    if os.path.exists(plugin):
        with open(plugin, encoding="utf-8") as fh:
            old = fh.read()
    if old == text:
        stdout.write(f"{plugin}: the stoprule plugin is already there; unchanged\n")
    elif args.dry_run:
        stdout.write(f"would write {plugin} (the stoprule plugin, running {' '.join(argv)})\n")
    else:
        atomic_write(plugin, text, keep_mode=True)
        stdout.write(f"{'updated' if old else 'wrote'} {plugin} (idle -> `{' '.join(argv)} hook opencode`)\n")
    if args.no_mcp:
        return 0
    path = os.path.join(base, OPENCODE_CONFIG[1 if args.user else 0])
    try:
        config = _load(path)
        servers = config.setdefault("mcp", {})
        if not isinstance(servers, dict):
            raise ValueError("its 'mcp' is not an object")
    except (OSError, ValueError) as exc:
        stderr.write(f"stoprule: cannot use {path}: {exc}; MCP server not registered\n")
        return 0
    if "stoprule" in servers:
        stdout.write(f"{path}: the stoprule MCP server is already there; unchanged\n")
        return 0
    server = mcp_server()
    servers["stoprule"] = {"type": "local", "command": [server["command"], *server["args"]], "enabled": True}
    _write_json(path, config, args.dry_run, "registered the blocker tools' MCP server (stoprule mcp)", stdout, backed)
    stdout.write(
        "note: under plain `opencode run` the session ends before the plugin's continuation lands: "
        "run `opencode serve` (or the TUI) for stop decisions to reach the agent (docs/agents.md)\n"
    )
    return 0


def run(args: argparse.Namespace, stdin: object, stdout: IO[str], stderr: IO[str]) -> int:
    state = find_project()
    root = os.path.dirname(state) if state else os.getcwd()
    prefix = "would " if args.dry_run else ""
    backed: set[str] = set()
    triage = getattr(args, "permission_triage", False)
    if args.harness == "opencode":
        _init_opencode(args, root, stdout, stderr, backed)
        _write_config(state or os.path.join(root, STATE_DIR), args.dry_run, triage, stdout)
        _offer_plugin(args.harness, stdout)
        stdout.write(f"{prefix}use: `stoprule doctor` checks the wiring and runs one synthetic stop\n")
        return 0
    t = TARGETS[args.harness]
    path = t.path(root, args.user)
    command = args.command or default_command(args.harness)
    wants_guard = not getattr(args, "no_guard", False)
    guard = guard_command(args.harness, args.command) if wants_guard else None
    if getattr(args, "managed", False):
        if args.harness != "claude-code":
            raise CommandError("--managed is for Claude Code (its managed-settings file)")
        text = json.dumps(managed_settings(command, guard), indent=2)
        stdout.write(f"{text}\n")
        stderr.write("install it (as an administrator) at one of:\n" + "".join(f"  {p}\n" for p in MANAGED_PATHS))
        return 0
    events = {k: v for k, v in EXTRA_EVENTS.get(args.harness, {}).items() if k != "permission" or triage}
    try:
        config = _load(path)
        changed = add_entry(config, t, command)
        added = [
            f"its {name} hook" for ev, name in events.items() if add_entry(config, t, f"{command} --event {ev}", name)
        ]
        if guard is not None:
            guarded = [
                name
                for name, matcher in GUARD_EVENTS.get(args.harness, ())
                if add_entry(config, t, guard, name, matcher, guard=True)
            ]
            denied = add_deny_rules(config) if args.harness == "claude-code" else 0
            if guarded:
                added.append(f"the guard on {', '.join(guarded)}")
            if denied:
                added.append(f"{denied} permissions.deny rules")
    except (OSError, ValueError) as exc:
        raise CommandError(f"cannot use {path}: {exc}; nothing written") from None
    state_dir = state or os.path.join(root, STATE_DIR)
    if not changed and not added:
        stdout.write(f"{path}: stoprule's {t.event} hook is already there; unchanged\n")
    else:
        what = f"added `{command}` as a {t.event} hook" if changed else f"kept stoprule's {t.event} hook"
        if added:
            what += f" (and {', '.join(added)})"
        _write_json(path, config, args.dry_run, what, stdout, backed)
    if not args.no_mcp and not args.user:
        _wire_mcp(args.harness, root, args.dry_run, stdout, stderr, backed)
    _write_config(state_dir, args.dry_run, triage, stdout)
    if args.harness == "codex":
        toml = os.path.join(os.path.dirname(path), "config.toml")
        if os.path.exists(toml):
            with open(toml, encoding="utf-8", errors="replace") as fh:
                if "[hooks" in fh.read():
                    stdout.write(f"note: {toml} also declares hooks; Codex merges both forms (with a warning)\n")
        stdout.write("note: Codex runs a new or edited hook only after you trust it (/hooks in Codex)\n")
    if args.harness == "cursor":
        stdout.write("note: restart Cursor to load an edited hooks.json\n")
    _offer_plugin(args.harness, stdout)
    exe = shlex.split(command)[0]
    if not shutil.which(exe) and not os.path.exists(exe):
        stderr.write(f"stoprule: warning: {exe} is not on this PATH; the harness may not find it\n")
    stdout.write(f"{prefix}use: `stoprule doctor` checks the wiring and runs one synthetic stop\n")
    return 0
