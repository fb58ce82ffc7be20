"""Harness-native packages of stoprule: the files of a Claude Code plugin and of the local
marketplace that lists it (``stoprule plugin claude-code --out DIR``), and an OpenCode plugin
package (``stoprule plugin opencode --out DIR``), and a Gemini CLI extension
(``stoprule plugin gemini --out DIR``: ``gemini-extension.json``, ``hooks/hooks.json`` with
``${extensionPath}``, the user's ``/blockers`` command, the same script; ``gemini extensions
install DIR``), and an Antigravity CLI plugin (``stoprule plugin antigravity --out DIR``: below).

The plugin carries the same wiring as ``stoprule init`` (the stop hook, the session-start hook,
the guard on the events that can veto a tool call, the blocker tools' MCP server) and the
user's ``/blockers`` command (read by the ``UserPromptSubmit`` hook), every command run
through ``${CLAUDE_PLUGIN_ROOT}/bin/stoprule``: a small script holding this machine's
interpreter (the plugin is generated per machine and installed per user, so no absolute path
lands in a file a team commits). The harness installs
it with its own commands (``claude plugin marketplace add DIR``, ``claude plugin install
stoprule@stoprule``); Claude Code copies the plugin into its own cache, so the script is run
through ``sh`` (no executable bit needed).
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from typing import Any

from stoprule.agent.hook.wiring import EXTRA_EVENTS, GUARD_EVENTS, guard_argv, opencode_plugin

__all__ = [
    "AGY_SCRIPT",
    "COMMAND_TEXT",
    "MARKETPLACE",
    "PLUGIN",
    "antigravity_plugin",
    "claude_code_plugin",
    "gemini_extension",
    "opencode_package",
]

PLUGIN = "stoprule"  # the plugin's name
MARKETPLACE = "stoprule"  # the local marketplace's name: install as stoprule@stoprule
RUN = 'sh "${CLAUDE_PLUGIN_ROOT}/bin/stoprule"'  # how the plugin's hooks run stoprule
ABOUT = "Decides whether the agent may stop, keeps it on known work, logs its blockers"


# the user's /blockers command: Claude Code expands it into a prompt after the UserPromptSubmit
# hook (``--event prompt``) has read the typed line and acted on it (nothing the agent runs
# reaches that hook)
BLOCKERS_COMMAND = """---
description: stoprule's blocker triage for this session (on, off, status, list, export)
argument-hint: on | off | status | list | export
---
The user ran `/blockers $ARGUMENTS`. stoprule has already handled it; its answer is in your
context. Acknowledge it in one line and carry on as it says.
"""


# Gemini CLI's: in its terminal a custom command expands into a prompt before any hook sees it,
# beginning with the typed line, which the ``BeforeAgent`` hook (``--event prompt``) reads (under
# ``gemini -p`` 0.61.0 the line is not expanded: the session-start context comes first, skipped
# by stoprule.agent.hook.controls). That hook fires once per user prompt (and on stoprule's own
# retries), never on the agent's tool calls or replies (measured on 0.61.0).
GEMINI_BLOCKERS_COMMAND = """description = "stoprule's blocker triage for this session (on, off, status, list, export)"
prompt = \"\"\"/blockers {{args}}

(The user ran stoprule's /blockers command. stoprule has already handled it; its answer is in
your context. Acknowledge it in one line and carry on as it says.)\"\"\"
"""

# harness -> its /blockers command file's text (stoprule.agent.hook.wiring.COMMANDS: where)
COMMAND_TEXT = {"claude-code": BLOCKERS_COMMAND, "gemini": GEMINI_BLOCKERS_COMMAND}


def _script(python: str, launcher: str, guard: str) -> str:
    """``bin/stoprule``: this machine's stoprule (the launcher the hooks use, the guard's own
    entry for ``guard``), or ``stoprule`` on PATH where that interpreter is gone."""
    q = shlex.quote
    return (
        "#!/bin/sh\n"
        "# stoprule as `stoprule plugin` found it on this machine\n"
        f'if [ ! -x {q(python)} ]; then exec stoprule "$@"; fi\n'
        f'if [ "$1" = guard ]; then shift; exec {q(python)} -S -I {q(guard)} "$@"; fi\n'
        f'exec {q(python)} -I -S {q(launcher)} "$@"\n'
    )


def _handler(command: str) -> dict[str, Any]:
    return {"type": "command", "command": command, "timeout": 30}


def claude_code_hooks(guard: bool = True) -> dict[str, Any]:
    """``hooks/hooks.json``: init's Claude Code events, each running ``bin/stoprule``."""
    hooks: dict[str, list[dict[str, Any]]] = {"Stop": [{"hooks": [_handler(f"{RUN} hook claude-code")]}]}
    for ev, name in EXTRA_EVENTS["claude-code"].items():
        if ev != "permission":  # opt-in (init --permission-triage); not in the package
            hooks[name] = [{"hooks": [_handler(f"{RUN} hook claude-code --event {ev}")]}]
    if guard:
        for name, matcher in GUARD_EVENTS["claude-code"]:
            group: dict[str, Any] = {"hooks": [_handler(f"{RUN} guard claude-code")]}
            hooks[name] = [{**({"matcher": matcher} if matcher else {}), **group}]
    return {"description": "stoprule: the stop gate, its session start, the guard", "hooks": hooks}


def _this_script() -> str:
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    python = os.path.abspath(sys.executable)
    return _script(python, os.path.join(here, "launch.py"), os.path.join(here, "agent", "guard", "__main__.py"))


def gemini_extension(version: str, guard: bool = True) -> dict[str, str]:
    """The files of a Gemini CLI extension: init's Gemini hooks (``AfterAgent``, ``SessionStart``,
    the guard on ``BeforeTool``) and the MCP server, each running ``bin/stoprule`` by ``sh``."""
    run = 'sh "${extensionPath}/bin/stoprule"'
    t = {"type": "command", "name": "stoprule", "timeout": 30000}
    hooks: dict[str, list[dict[str, Any]]] = {"AfterAgent": [{"hooks": [{**t, "command": f"{run} hook gemini"}]}]}
    for ev, name in EXTRA_EVENTS["gemini"].items():
        hooks[name] = [{"hooks": [{**t, "command": f"{run} hook gemini --event {ev}"}]}]
    if guard:
        for name, _ in GUARD_EVENTS["gemini"]:
            hooks[name] = [{"hooks": [{**t, "name": "stoprule-guard", "command": f"{run} guard gemini"}]}]
    manifest = {
        "name": "stoprule",
        "version": version,
        "mcpServers": {"stoprule": {"command": "sh", "args": ["${extensionPath}${/}bin${/}stoprule", "mcp"]}},
    }
    return {
        "gemini-extension.json": json.dumps(manifest, indent=2) + "\n",
        "hooks/hooks.json": json.dumps({"hooks": hooks}, indent=2) + "\n",
        "commands/blockers.toml": GEMINI_BLOCKERS_COMMAND,
        "bin/stoprule": _this_script(),
    }


def claude_code_plugin(version: str, guard: bool = True) -> dict[str, str]:
    """The files of the marketplace directory (relative path -> text): the marketplace
    manifest, and under ``plugins/stoprule/`` the plugin."""
    script = _this_script()
    manifest = {
        "name": PLUGIN,
        "version": version,
        "description": ABOUT,
        "author": {"name": "stoprule"},
        "license": "MIT",
        "mcpServers": {"stoprule": {"command": "sh", "args": ["${CLAUDE_PLUGIN_ROOT}/bin/stoprule", "mcp"]}},
    }
    market = {
        "name": MARKETPLACE,
        "owner": {"name": "stoprule"},
        "description": "stoprule, generated on this machine by `stoprule plugin claude-code`",
        "plugins": [{"name": PLUGIN, "source": f"./plugins/{PLUGIN}", "description": ABOUT, "version": version}],
    }
    base = f"plugins/{PLUGIN}"

    def dump(obj: Any) -> str:
        return json.dumps(obj, indent=2) + "\n"

    return {
        ".claude-plugin/marketplace.json": dump(market),
        f"{base}/.claude-plugin/plugin.json": dump(manifest),
        f"{base}/hooks/hooks.json": dump(claude_code_hooks(guard)),
        f"{base}/commands/blockers.md": BLOCKERS_COMMAND,
        f"{base}/bin/stoprule": script,
    }


def opencode_package(version: str, argv: list[str], guard: bool = True) -> dict[str, str]:
    """An OpenCode plugin package (``package.json`` and ``index.js``: the plugin ``init`` writes
    into ``.opencode/plugins/``, running ``argv``), for ``opencode.json``'s ``plugin`` list to
    name by its local path."""
    package = {
        "name": "stoprule-opencode",
        "version": version,
        "description": "stoprule for OpenCode: the stop gate, its session start, the guard",
        "type": "module",
        "main": "index.js",
        "license": "MIT",
    }
    text = opencode_plugin(argv, guard_argv("opencode") if guard else [])
    return {"package.json": json.dumps(package, indent=2) + "\n", "index.js": text}


# Antigravity CLI (``agy``): a plugin is a folder with ``plugin.json`` and, beside it, a
# ``hooks.json`` in the hooks file's own layout (a ``hooks/`` folder is not read). Antigravity
# starts a plugin's hooks in the plugin's installed folder and sets no plugin-root variable, so
# the command names the script relative to it. The script is not in ``bin/``: agy 1.3.2 puts a
# plugin's ``bin/`` on the agent's PATH. Sources: tests/fixtures/hooks/antigravity/SOURCE.md.
AGY_SCRIPT = "libexec/stoprule"


def antigravity_plugin() -> dict[str, str]:
    """The files of the Antigravity CLI plugin: the manifest (only the keys its published schema
    allows), init's ``Stop`` hook running the plugin's own script, and the script. No MCP server
    (Antigravity starts a plugin's servers outside the project, and stoprule's server finds its
    project from where it starts), no guard and no ``/blockers`` (as under ``init``)."""
    hooks = {PLUGIN: {"Stop": [_handler(f"sh ./{AGY_SCRIPT} hook antigravity")]}}
    manifest = {"name": PLUGIN, "description": "Decides whether the agent may stop"}
    return {
        "plugin.json": json.dumps(manifest, indent=2) + "\n",
        "hooks.json": json.dumps(hooks, indent=2) + "\n",
        AGY_SCRIPT: _this_script(),
    }
