"""``stoprule init --harness H [--local | --shared | --user] [--dry-run] [--no-mcp] [--permission-triage]
[--no-guard] [--managed]``: wire the stop hook into a harness, with its session-start hook (the
triage instructions, the session's baseline) and, with ``--permission-triage``, its permission
hook (and ``permission_triage: true`` in a new config); beside it the blocker tools' MCP server
(``stoprule mcp``; ``--no-mcp`` skips it). OpenCode gets a generated plugin
(``.opencode/plugins/stoprule.js``) and its MCP server in ``opencode.json``.

Beside the stop hook it wires the guard (``stoprule guard HARNESS``, by its fast entry in
personal files) on every event of the harness that can veto a tool call (Claude Code
``PreToolUse`` and ``ConfigChange``, Codex and Copilot ``PreToolUse``, Gemini CLI
``BeforeTool``, Cursor ``beforeShellExecution`` and ``preToolUse``; the OpenCode plugin's
``tool.execute.before``) and, for Claude Code, ``permissions.deny`` rules; ``--no-guard`` skips
both. ``--managed`` (Claude Code) writes nothing: it prints the managed-settings file that pins
the same wiring where no project or user setting can override it (``allowManagedHooksOnly``).

Where (the scopes of :mod:`stoprule.agent.hook.wiring`), always at the git root (init run in
a sub-folder says so): ``--local`` (the default) writes this machine's absolute path of
stoprule into files only this clone has: the harness's personal file (Claude Code
``.claude/settings.local.json``), else the project's file listed in ``.git/info/exclude`` (a
file the team already tracks is refused: it is not personal). ``--shared`` writes portable
commands (``stoprule``, resolved on PATH) into the files the team commits. ``--user``
writes the harness's user-level config and creates no project file.

Existing entries are kept; stoprule's own entry is added, or its command updated, and a
second run changes nothing. A changed file's previous version is saved outside the project
(``<user state dir>/init-backups/``). In the project, ``.stoprule/config.yaml`` and
``.stoprule/.gitignore`` are created when missing. ``--dry-run`` prints what would change.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from typing import IO, Any

from stoprule._util.files import atomic_write
from stoprule.agent.hook.plugins import COMMAND_TEXT
from stoprule.agent.hook.runner import user_state_dir
from stoprule.agent.hook.wiring import (
    COMMANDS,
    EXTRA_EVENTS,
    GUARD_EVENTS,
    MCP,
    OPENCODE_PLUGIN,
    TARGETS,
    add_deny_rules,
    add_entry,
    deny_rules,
    find_entry,
    guard_argv,
    mcp_argv,
    opencode_plugin,
    parse_toml,
    remove_deny_rules,
    remove_entry,
    set_mcp,
    toml_mcp_table,
)
from stoprule.cli.places import git_root, harness_env
from stoprule.config.template import config_template
from stoprule.diagnostics import CommandError
from stoprule.project import GITIGNORE, STATE_DIR, ensure_state_dir, find_project

__all__ = ["add_arguments", "default_command", "run", "stoprule_argv"]

# the .stoprule/.gitignore files older versions of init wrote: replaced by the current one
OLD_GITIGNORES = (
    "state/\nhook.log\nhook.log.1\nledger.db\nledger.db-*\nledger.db.keys\n",
    "state/\nhook.log\nhook.log.1\nledger.db\nledger.db-*\nledger.db.keys\nledger.db.journal*\n",
)
# the block of .git/info/exclude that keeps this clone's wiring out of git
EXCLUDE_MARK = "# stoprule init --local: this clone's harness wiring (this machine's paths)"
PORTABLE = ["stoprule"]


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
    p.description = (
        "Wire `stoprule hook` and the blocker tools' MCP server into an agent harness's config, at the git "
        "root; create .stoprule/config.yaml."
    )
    p.add_argument("--harness", required=True, choices=harnesses, metavar="HARNESS", help=" | ".join(harnesses))
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "--local",
        action="store_true",
        help="this clone only (default): this machine's path of stoprule, in files kept out of git",
    )
    where.add_argument(
        "--shared",
        action="store_true",
        help="the project files the team commits, with portable commands (`stoprule` on PATH)",
    )
    where.add_argument(
        "--user",
        action="store_true",
        help="the harness's user-level config (home directory); no project file is created",
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


def guard_command(harness: str, command: str | None, scope: str = "local") -> str:
    """The guard's command: after ``--command``'s program (its ``hook H`` dropped); ``stoprule guard
    H`` in shared files (portable); else its fast entry in this install."""
    if command:
        argv = shlex.split(command)
        if argv[-2:] == ["hook", harness]:
            argv = argv[:-2]
        return shlex.join([*argv, "guard", harness])
    if scope == "shared":
        return shlex.join([*PORTABLE, "guard", harness])
    return shlex.join(guard_argv(harness))


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


# ------------------------------------------------------------------ git


class _Git:
    """The repository at ``root`` (None: not in one, or no git): what is tracked, what is ignored,
    and this clone's ``.git/info/exclude``."""

    def __init__(self, root: str | None) -> None:
        self.root = root

    def _run(self, *args: str) -> subprocess.CompletedProcess[str] | None:
        if self.root is None:
            return None
        try:
            return subprocess.run(["git", "-C", self.root, *args], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return None

    def rel(self, path: str) -> str:
        return os.path.relpath(path, self.root or ".").replace(os.sep, "/")

    def tracked(self, path: str) -> bool:
        p = self._run("ls-files", "--error-unmatch", "--", self.rel(path))
        return p is not None and p.returncode == 0

    def ignored(self, path: str) -> bool:
        p = self._run("check-ignore", "-q", "--", self.rel(path))
        return p is not None and p.returncode == 0

    def exclude_path(self) -> str | None:
        p = self._run("rev-parse", "--git-path", "info/exclude")
        if p is None or p.returncode != 0 or not p.stdout.strip():
            return None
        return os.path.join(self.root or ".", p.stdout.strip())

    def set_excluded(self, path: str, excluded: bool) -> str | None:
        """Add ``/REL`` to (or take it out of) stoprule's block of ``.git/info/exclude``: the line
        added or taken out, None when the file is left as it was."""
        exclude = self.exclude_path()
        if exclude is None:
            return None
        line = "/" + self.rel(path)
        try:
            with open(exclude, encoding="utf-8") as fh:
                lines = fh.read().splitlines()
        except FileNotFoundError:
            lines = []
        start = lines.index(EXCLUDE_MARK) + 1 if EXCLUDE_MARK in lines else None
        end = start
        while end is not None and end < len(lines) and lines[end].strip() and not lines[end].startswith("#"):
            end += 1
        block = lines[start:end] if start is not None else []
        if excluded == (line in block):
            return None
        if not excluded:
            assert start is not None and end is not None
            lines[start:end] = [x for x in block if x != line]
        elif start is None:
            lines += ["", EXCLUDE_MARK, line] if lines and lines[-1].strip() else [EXCLUDE_MARK, line]
        else:
            assert end is not None
            lines.insert(end, line)
        os.makedirs(os.path.dirname(exclude), exist_ok=True)
        with open(exclude, "w", encoding="utf-8") as fh:
            fh.write("\n".join(lines) + "\n")
        return line


# ------------------------------------------------------------------ writing


class _Writer:
    """Writes (or, dry, describes) one run's changes; keeps every file it wires for ``scope``
    where that scope wants it (out of git for ``local``, in it for ``shared``)."""

    def __init__(self, args: argparse.Namespace, root: str, git: _Git, stdout: IO[str], stderr: IO[str]) -> None:
        self.scope = "user" if args.user else ("shared" if args.shared else "local")
        self.dry = args.dry_run
        self.root, self.git, self.stdout, self.stderr = root, git, stdout, stderr
        self.backups: str | None = None
        self.written: set[str] = set()  # the files this run wrote (their first version is the one saved)

    def say(self, text: str) -> None:
        self.stdout.write(text + "\n")

    def shown(self, path: str) -> str:
        rel = os.path.relpath(path, self.root)
        return path if self.scope == "user" or rel.startswith("..") else rel

    def personal_refused(self, path: str) -> bool:
        """``--local`` cannot use a file the team already tracks in git."""
        return self.scope == "local" and self.git.root is not None and self.git.tracked(path)

    def _backup(self, path: str) -> str:
        if self.backups is None:
            stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
            self.backups = os.path.join(user_state_dir(os.environ), "init-backups", f"{stamp}-{os.getpid()}")
        target = os.path.join(self.backups, os.path.abspath(path).lstrip(os.sep))
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copy2(path, target)
        return target

    def write(self, path: str, text: str, what: str, scope: str | None = None) -> None:
        """Replace ``path`` with ``text`` atomically (its previous version saved outside the project),
        then :meth:`place` it for ``scope`` (default: the run's)."""
        if self.dry:
            self.say(f"would write {self.shown(path)}:\n{text.rstrip()}")
            return
        if os.path.exists(path) and path not in self.written:
            self.say(f"saved the previous {self.shown(path)} to {self._backup(path)}")
        atomic_write(path, text, keep_mode=True)
        self.written.add(path)
        self.say(f"{what} in {self.shown(path)}")
        self.place(path, scope)

    def place(self, path: str, scope: str | None = None) -> None:
        """``local``: keep the file out of git (unless git ignores it already); ``shared``: make sure
        this clone does not exclude it, and warn when the project's ignore rules do."""
        scope = scope or self.scope
        if self.git.root is None or scope == "user" or self.dry:
            return
        if scope == "local":
            if not self.git.ignored(path) and self.git.set_excluded(path, True):
                self.say(f"kept {self.shown(path)} out of git (.git/info/exclude): this clone's own wiring")
            return
        if self.git.set_excluded(path, False):
            self.say(f"{self.shown(path)} is no longer excluded in .git/info/exclude: commit it for the team")
        if self.git.ignored(path):
            self.stderr.write(f"stoprule: warning: git ignores {self.shown(path)}: the team will not get it\n")

    def json_file(
        self, path: str, update: Callable[[dict[str, Any]], bool], what: str, already: str, scope: str | None = None
    ) -> bool | None:
        """Apply ``update`` to the JSON object in ``path`` and write it when it changed (then
        :meth:`place` it). None (and a message) when the file cannot be used."""
        try:
            config = _load(path)
            changed = update(config)
        except (OSError, ValueError) as exc:
            raise CommandError(f"cannot use {self.shown(path)}: {exc}") from None
        if changed:
            self.write(path, json.dumps(config, indent=2, ensure_ascii=False) + "\n", what, scope)
        else:
            self.say(f"{self.shown(path)}: {already}; unchanged")
            self.place(path, scope)
        return changed


def _text(path: str) -> str:
    if not os.path.exists(path):
        return ""
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def _load(path: str) -> dict[str, Any]:
    text = _text(path)
    if not text.strip():
        return {}
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError("it does not hold a JSON object")
    return data


# ------------------------------------------------------------------ the pieces


def _portable(command: str) -> bool:
    """A command of a shared wiring (``stoprule`` resolved on PATH), not one machine's path."""
    return shlex.split(command)[:1] == PORTABLE


def _hooks(args: argparse.Namespace, w: _Writer, base: list[str]) -> None:
    t = TARGETS[args.harness]
    path = t.path(w.root, w.scope)
    command = args.command or shlex.join([*base, "hook", args.harness])
    triage = args.permission_triage
    events = {k: v for k, v in EXTRA_EVENTS.get(args.harness, {}).items() if k != "permission" or triage}
    shared = t.path(w.root, "shared")
    if w.scope == "local":
        try:
            team = find_entry(_load(shared), t)
        except (OSError, ValueError):
            team = None
        if team is not None and (shared != path or _portable(team)):
            w.say(
                f"{w.shown(shared)}: stoprule's {t.event} hook is wired there for the team (`{team}`); "
                "no personal one added (it would run twice)"
            )
            return
    if w.personal_refused(path):
        raise CommandError(
            f"{w.shown(path)} is tracked by git, so it is the team's file: a personal wiring cannot "
            "go there; use --shared (a portable command) or --user; nothing written"
        )

    guard = None if args.no_guard else guard_command(args.harness, args.command, w.scope)
    guarded = [name for name, _ in GUARD_EVENTS.get(args.harness, ())] if guard else []

    def update(config: dict[str, Any]) -> bool:
        changed = add_entry(config, t, command)
        for ev, name in events.items():
            changed |= add_entry(config, t, f"{command} --event {ev}", name)
        if guard is not None:
            for name, matcher in GUARD_EVENTS.get(args.harness, ()):
                changed |= add_entry(config, t, guard, name, matcher, guard=True)
            if args.harness == "claude-code":
                changed |= add_deny_rules(config) > 0
        return changed

    also = [f"its {name} hook" for name in events.values()]
    also += [f"the guard on {', '.join(guarded)}"] if guarded else []
    also += ["permissions.deny rules"] if guard and args.harness == "claude-code" else []
    what = f"wired `{command}` as the {t.event} hook" + (f" (and {', '.join(also)})" if also else "")
    w.json_file(path, update, what, f"stoprule's {t.event} hook is there")
    if w.scope == "shared" and t.local_file:  # the personal entries a --local run made would run beside these
        local = t.path(w.root, "local")

        def drop(config: dict[str, Any]) -> bool:
            hooks = [remove_entry(config, t, ev) for ev in (None, *EXTRA_EVENTS.get(args.harness, {}).values())]
            guards = [remove_entry(config, t, ev, guard=True) for ev, _ in GUARD_EVENTS.get(args.harness, ())]
            return any(hooks + guards) | (remove_deny_rules(config) > 0)

        if os.path.exists(local):
            w.json_file(
                local,
                drop,
                "took stoprule's personal hooks out (the shared ones replace them)",
                "no personal stoprule hook",
                scope="local",
            )
            if not w.dry and _load(local) == {}:
                os.remove(local)
                w.say(f"removed {w.shown(local)}: nothing is left in it")


def _mcp(args: argparse.Namespace, w: _Writer, base: list[str]) -> None:
    m = MCP[args.harness]
    argv = [*base, "mcp"]
    if w.scope == "user" and args.harness != "opencode":
        w.say(
            f"for the blocker tools in every project, register `{shlex.join(argv)}` as an MCP server named "
            f"stoprule in your user config ({m.path(w.root, 'user')}; docs/blockers.md)"
        )
        return
    path = m.path(w.root, w.scope)
    if w.personal_refused(path):
        how = (
            f"`claude mcp add --scope local stoprule -- {shlex.join(argv)}`"
            if args.harness == "claude-code"
            else f"register `{shlex.join(argv)}` in {m.path(w.root, 'user')}"
        )
        w.say(
            f"note: {w.shown(path)} is tracked by git (the team's file): the MCP server is not registered there; "
            f"`init --shared` registers a portable one for the team, or for yourself: {how}"
        )
        return
    what = f"registered the blocker tools' MCP server (`{shlex.join(argv)}`)"
    if w.scope == "local":
        try:
            team = mcp_argv(parse_toml(_text(path)) if m.kind == "toml" else _load(path), m.kind)
        except (OSError, ValueError):
            team = None
        if team is not None and team[:1] == PORTABLE:
            w.say(
                f"{w.shown(path)}: stoprule's MCP server is registered there for the team (`{shlex.join(team)}`); "
                "left as it is"
            )
            return
    if m.kind != "toml":
        try:
            w.json_file(path, lambda config: set_mcp(config, m.kind, argv), what, "the stoprule MCP server is there")
        except CommandError as exc:  # the hook is wired: say why the MCP server is not
            w.stderr.write(f"stoprule: {exc}: MCP server not registered\n")
        return
    try:
        text = _text(path)
        current = mcp_argv(parse_toml(text), "toml")
    except (OSError, ValueError) as exc:
        w.stderr.write(f"stoprule: cannot use {w.shown(path)}: {exc}; MCP server not registered\n")
        return
    if current == argv:
        w.say(f"{w.shown(path)}: the stoprule MCP server is there; unchanged")
        w.place(path)
    elif current is not None:
        w.say(
            f"note: {w.shown(path)} registers stoprule's MCP server as `{shlex.join(current)}`; to run this "
            f"stoprule, make its table:\n{toml_mcp_table(argv)}"
        )
    else:
        w.write(path, (text.rstrip() + "\n\n" if text.strip() else "") + toml_mcp_table(argv), what)


def _opencode(args: argparse.Namespace, w: _Writer, base: list[str]) -> None:
    """The generated plugin (project, or ``--user``): its whole text is stoprule's."""
    argv = base
    if args.command:  # how to run stoprule (a trailing `hook opencode` is dropped)
        argv = shlex.split(args.command)
        if argv[-2:] == ["hook", "opencode"]:
            argv = argv[:-2]
    rel = OPENCODE_PLUGIN[1 if w.scope == "user" else 0]
    plugin = os.path.join(os.path.expanduser("~") if w.scope == "user" else w.root, *rel.split("/"))
    if w.personal_refused(plugin):
        raise CommandError(
            f"{w.shown(plugin)} is tracked by git, so it is the team's file: use --shared "
            "(a portable command) or --user; nothing written"
        )
    guard = [] if args.no_guard else shlex.split(guard_command("opencode", args.command, w.scope))
    text = opencode_plugin(argv, guard)
    old = None
    if os.path.exists(plugin):
        with open(plugin, encoding="utf-8") as fh:
            old = fh.read()
    team = opencode_plugin(PORTABLE, [] if args.no_guard else [*PORTABLE, "guard", "opencode"])
    if w.scope == "local" and old == team and text != old:
        w.say(f"{w.shown(plugin)}: the team's stoprule plugin (running `stoprule` on PATH) is there; left as it is")
    elif old == text:
        w.say(f"{w.shown(plugin)}: the stoprule plugin is there; unchanged")
        w.place(plugin)
    else:
        w.write(
            plugin,
            text,
            f"{'updated' if old else 'wrote'} the stoprule plugin (session.idle -> `{shlex.join(argv)} hook opencode`)",
        )


def _command(args: argparse.Namespace, w: _Writer) -> None:
    """The user's ``/blockers`` command (Claude Code, Gemini CLI): read by the prompt hook wired
    beside the stop hook; its whole text is stoprule's."""
    rel = COMMANDS[args.harness][1 if w.scope == "user" else 0]
    path = os.path.join(os.path.expanduser("~") if w.scope == "user" else w.root, *rel.split("/"))
    text = COMMAND_TEXT[args.harness]
    if w.personal_refused(path):
        w.say(f"note: {w.shown(path)} is tracked by git (the team's file): the /blockers command is left as it is")
    elif _text(path) == text:
        w.say(f"{w.shown(path)}: the /blockers command is there; unchanged")
        w.place(path)
    else:
        w.write(path, text, "wrote the user's /blockers command (on|off|status|list|export, for the session)")


def _write_config(w: _Writer, state_dir: str, triage: bool) -> None:
    """``.stoprule/config.yaml`` and ``.stoprule/.gitignore`` when missing (an ignore file of an
    older init is brought up to date)."""
    cfg = os.path.join(state_dir, "config.yaml")
    gi = os.path.join(state_dir, ".gitignore")
    text = config_template(permission_triage=triage)
    if w.dry:
        if not os.path.exists(cfg):
            w.say(f"would create {w.shown(cfg)}:\n{text.rstrip()}")
        if not os.path.exists(gi):
            w.say(f"would create {w.shown(gi)}")
        return
    ensure_state_dir(state_dir)
    try:
        with open(gi, encoding="utf-8") as fh:
            old = fh.read()
    except OSError:
        old = None
    if old in OLD_GITIGNORES:
        atomic_write(gi, GITIGNORE)
        w.say(f"updated {w.shown(gi)}: only config.yaml and policies/ are committed")
    if os.path.exists(cfg):
        w.say(f"{w.shown(cfg)}: exists; unchanged")
        if triage:
            w.say(f"note: set `hook.permission_triage: true` in {w.shown(cfg)} to turn the permission triage on")
        return
    atomic_write(cfg, text, exclusive=True)
    w.say(f"created {w.shown(cfg)} (hook settings; commit it) and {w.shown(gi)} (the rest stays out of git)")


def _notes(args: argparse.Namespace, w: _Writer, base: list[str]) -> None:
    if args.harness == "codex":
        t = TARGETS["codex"]
        toml = os.path.join(os.path.dirname(t.path(w.root, w.scope)), "config.toml")
        if os.path.exists(toml):
            with open(toml, encoding="utf-8", errors="replace") as fh:
                if "[hooks" in fh.read():
                    w.say(f"note: {w.shown(toml)} also declares hooks; Codex merges both forms (with a warning)")
        w.say(
            "note: Codex reads a project's .codex/ only once the project is trusted, and runs a new or edited "
            "hook only after you trust it (/hooks in Codex)"
        )
    if args.harness == "cursor":
        w.say("note: restart Cursor to load an edited hooks.json")
    if args.harness == "antigravity":
        w.say(
            "note: Antigravity drops the whole hooks.json, silently, on one error in it: "
            "`stoprule doctor` checks every entry of it"
        )
    if args.harness == "opencode" and w.scope != "user":
        w.say("note: OpenCode loads the project's plugin and opencode.json when it starts in this directory")
    exe = shlex.split(args.command)[0] if args.command else base[0]
    if shutil.which(exe, path=harness_env()["PATH"]) is None and not os.path.isabs(exe):
        w.stderr.write(
            f"stoprule: warning: `{exe}` is not on the PATH a harness started outside this venv has: "
            "install stoprule where the harness runs (e.g. `pipx install stoprule`), or wire this "
            f"machine's path with `stoprule init --harness {args.harness} --local`\n"
        )
    elif os.path.isabs(exe) and not os.path.exists(exe):
        w.stderr.write(f"stoprule: warning: {exe} does not exist; the harness will not find it\n")


# the plugin route (stoprule.agent.hook.plugins): the same wiring, per user, no path in the project
PLUGIN_ROUTES = {
    "claude-code": "`stoprule plugin claude-code --out DIR`, then `claude plugin marketplace add DIR` "
    "and `claude plugin install stoprule@stoprule`",
    "gemini": "`stoprule plugin gemini --out DIR`, then `gemini extensions install DIR`",
    "opencode": "`stoprule plugin opencode --out DIR`, then name DIR/index.js (file://) in opencode.json's plugin list",
    # some agy versions read hooks only from plugins (docs/agents.md, where the sources conflict)
    "antigravity": "`stoprule plugin antigravity --out DIR`, then `agy plugin install DIR` "
    "(or copy DIR to .agents/plugins/stoprule), and take stoprule's hook out of .agents/hooks.json",
}


def run(args: argparse.Namespace, stdin: object, stdout: IO[str], stderr: IO[str]) -> int:
    if args.managed:  # nothing written: the file an administrator installs
        if args.harness != "claude-code":
            raise CommandError("--managed is for Claude Code (its managed-settings file)")
        command = args.command or default_command(args.harness)
        guard = None if args.no_guard else guard_command(args.harness, args.command)
        stdout.write(json.dumps(managed_settings(command, guard), indent=2) + "\n")
        stderr.write("install it (as an administrator) at one of:\n" + "".join(f"  {p}\n" for p in MANAGED_PATHS))
        return 0
    cwd = os.getcwd()
    repo = git_root(cwd)
    root = repo or os.path.dirname(find_project(cwd) or os.path.join(cwd, STATE_DIR))
    w = _Writer(args, root, _Git(repo), stdout, stderr)
    if w.scope != "user" and os.path.realpath(root) != os.path.realpath(cwd):
        w.say(f"wiring {root}: the {'git root' if repo else 'project'} (init ran in {cwd})")
    base = PORTABLE if w.scope == "shared" else stoprule_argv()
    (_opencode if args.harness == "opencode" else _hooks)(args, w, base)
    if args.harness in COMMANDS:
        _command(args, w)
    if not args.no_mcp:
        _mcp(args, w, base)
    if w.scope == "user":
        w.say("no project file written (--user): a project without .stoprule/ runs with the defaults")
    else:
        if repo is None and w.scope == "local":
            w.say("note: not in a git repository: nothing to keep out of one")
        nested = find_project(cwd)
        if nested and os.path.dirname(nested) != root and nested.startswith(root + os.sep):
            w.say(f"note: {nested} is below the root: sessions started at the root use {root}/{STATE_DIR}/")
        _write_config(w, os.path.join(root, STATE_DIR), args.permission_triage)
    _notes(args, w, base)
    if w.scope == "local":
        w.say(
            f"this wiring is personal (this machine's path); `stoprule init --harness {args.harness} --shared` "
            "wires the team with portable commands"
        )
    if args.harness in PLUGIN_ROUTES:
        w.say(f"note: or install stoprule as a {args.harness} plugin instead: {PLUGIN_ROUTES[args.harness]}")
    w.say(f"{'would ' if w.dry else ''}use: `stoprule doctor` checks the wiring and runs one synthetic stop")
    return 0
