"""``stoprule plugin claude-code|gemini|opencode|antigravity --out DIR``: write stoprule as a Claude
Code plugin in a local marketplace, a Gemini CLI extension, an OpenCode plugin package or an
Antigravity CLI plugin (:mod:`stoprule.agent.hook.plugins`), to install with the harness's own
commands or config.

Exit codes: 0 written, 1 DIR holds files this command did not write (nothing changed).
"""

from __future__ import annotations

import argparse
import json
import os
from typing import IO

from stoprule._util.files import atomic_write
from stoprule.agent.hook.plugins import (
    MARKETPLACE,
    PLUGIN,
    antigravity_plugin,
    claude_code_plugin,
    gemini_extension,
    opencode_package,
)
from stoprule.cli.init_cmd import stoprule_argv
from stoprule.diagnostics import CommandError
from stoprule.version import __version__

__all__ = ["add_arguments", "run"]

HARNESSES = ("claude-code", "gemini", "opencode", "antigravity")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = "Write stoprule as a harness plugin or extension, for the harness's own install command."
    p.add_argument("harness", choices=HARNESSES, metavar="HARNESS", help=" | ".join(HARNESSES))
    p.add_argument("--out", required=True, metavar="DIR", help="the directory to write (made if missing)")
    p.add_argument("--no-guard", action="store_true", help="leave the guard (the pre-tool hook) out of the plugin")


def run(args: argparse.Namespace, stdin: object, stdout: IO[str], stderr: IO[str]) -> int:
    if args.harness == "opencode":
        files = opencode_package(__version__, stoprule_argv(), guard=not args.no_guard)
    elif args.harness == "gemini":
        files = gemini_extension(__version__, guard=not args.no_guard)
    elif args.harness == "antigravity":
        files = antigravity_plugin()
    else:
        files = claude_code_plugin(__version__, guard=not args.no_guard)
    out = os.path.abspath(args.out)
    stray = []
    if os.path.isdir(out):
        for base, _, names in os.walk(out):
            stray += [os.path.relpath(os.path.join(base, n), out) for n in names]
        stray = [p for p in stray if p.replace(os.sep, "/") not in files]
    if stray:
        raise CommandError(
            f"{out} holds files stoprule did not write ({', '.join(sorted(stray)[:3])}); nothing written"
        )
    for rel, text in files.items():
        path = os.path.join(out, *rel.split("/"))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        atomic_write(path, text)
    if args.harness == "opencode":
        entry = "file://" + os.path.join(out, "index.js")
        stdout.write(
            f"wrote the stoprule OpenCode plugin package in {out}\n"
            f'install it: add "{entry}" to the "plugin" list of opencode.json '
            "(and the MCP server: stoprule init --harness opencode, or its mcp entry)\n"
        )
        return 0
    if args.harness == "gemini":
        stdout.write(f"wrote the stoprule Gemini CLI extension in {out}\ninstall it: gemini extensions install {out}\n")
        return 0
    if args.harness == "antigravity":
        mcp = {"mcpServers": {PLUGIN: {"command": stoprule_argv()[0], "args": [*stoprule_argv()[1:], "mcp"]}}}
        stdout.write(
            f"wrote the stoprule Antigravity CLI plugin in {out}\n"
            f"install it for your user: agy plugin install {out}\n"
            f"or for one project: copy {out} to PROJECT/.agents/plugins/{PLUGIN} (a copy: a link is not followed; "
            "it holds this machine's paths: list it in .git/info/exclude)\n"
            "the blocker tools' MCP server is not in the plugin (Antigravity starts a plugin's servers outside "
            f"the project): add {json.dumps(mcp)} to PROJECT/.agents/mcp_config.json\n"
        )
        return 0
    stdout.write(
        f"wrote the {PLUGIN} plugin and its marketplace in {out}\n"
        f"install it: claude plugin marketplace add {out} && claude plugin install {PLUGIN}@{MARKETPLACE}\n"
    )
    return 0
