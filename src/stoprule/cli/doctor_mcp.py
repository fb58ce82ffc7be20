"""``stoprule doctor``'s check of the blocker tools' MCP server registrations.

For each project MCP config ``stoprule init`` writes (``.mcp.json``, ``.gemini/settings.json``,
``.cursor/mcp.json``) that registers ``stoprule mcp``: the command resolves on PATH, and the
Python it runs in can import the MCP SDK (``stoprule mcp`` cannot start without it).
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
from typing import IO, Any

__all__ = ["check_mcp", "path_remedy"]

MCP_FILES = (".mcp.json", os.path.join(".gemini", "settings.json"), os.path.join(".cursor", "mcp.json"))
_PROBE = "import mcp.server.mcpserver"


def path_remedy(harness: str) -> str:
    """What to do when a hook's command resolves to nothing on PATH."""
    return (
        "install stoprule where the harness runs (e.g. `pipx install stoprule`, or start the harness with "
        f"stoprule's venv active), or run `stoprule init --harness {harness}` again from that environment "
        "(it then writes the interpreter's full path)"
    )


def _servers(path: str) -> list[tuple[str, list[str]]]:
    try:
        with open(path, encoding="utf-8") as fh:
            config = json.load(fh)
    except (OSError, ValueError):
        return []
    servers = config.get("mcpServers") if isinstance(config, dict) else None
    out = []
    for entry in (servers or {}).values() if isinstance(servers, dict) else ():
        if not isinstance(entry, dict) or not isinstance(entry.get("command"), str):
            continue
        args = [a for a in entry.get("args") or [] if isinstance(a, str)]
        words = [os.path.basename(entry["command"]), *args]
        if "mcp" in words and ("stoprule" in words or "stoprule" in words[0]):
            out.append((entry["command"], args))
    return out


def _python_of(command: str, args: list[str]) -> list[str] | None:
    """The interpreter that runs this registration (``[python]``), or None if it cannot be told."""
    exe = shutil.which(command)
    if exe is None:
        return None
    if args[:2] == ["-m", "stoprule"]:
        return [exe]
    try:
        with open(exe, "rb") as fh:
            first = fh.readline(512).decode("utf-8", "replace").strip()
    except OSError:
        return None
    if not first.startswith("#!"):
        return None
    words = first[2:].split()
    return words or None


@functools.cache
def _sdk_importable(python: tuple[str, ...]) -> bool:
    """Can this interpreter import the MCP SDK? Probed once per interpreter in a process (the
    registrations of several harnesses usually share one)."""
    try:
        return subprocess.run([*python, "-c", _PROBE], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def check_mcp(root: str, line: Any, stdout: IO[str]) -> bool:
    """One line per registration found under ``root``; False when one cannot start."""
    good = True
    for rel in MCP_FILES:
        path = os.path.join(root, rel)
        for command, args in _servers(path) if os.path.exists(path) else ():
            shown = " ".join([command, *args])
            python = _python_of(command, args)
            if shutil.which(command) is None:
                what = f"MCP server in {rel}: {command} resolves to nothing on PATH: "
                good &= line(stdout, False, what + "install stoprule there, or run `stoprule init` again from its venv")
                continue
            if python is None:
                line(stdout, True, f"MCP server in {rel}: {shown} (its interpreter cannot be told; not probed)")
                continue
            if _sdk_importable(tuple(python)):
                line(stdout, True, f"MCP server in {rel}: {shown} (MCP SDK importable)")
            else:
                good &= line(
                    stdout,
                    False,
                    f"MCP server in {rel}: {shown} cannot start: the MCP SDK is not "
                    f"installed for {python[-1]}: install it with "
                    f"`{python[-1]} -m pip install 'stoprule[mcp]'`",
                )
    return good
