"""``stoprule doctor``'s check of the blocker tools' MCP server, in every harness.

For each harness's MCP config (:data:`stoprule.agent.hook.wiring.MCP`: the project's file and
the user's) that registers ``stoprule mcp``: its command resolves on the PATH a harness started
outside this venv has, and the Python it runs in has the MCP SDK installed (``stoprule mcp``
cannot start without it): its server package is looked up, not imported (importing the SDK
costs that Python about a second of CPU; the lookup, a bare start). A harness whose hook is
wired but which has no such registration gets a note: its agent is told about the ``blocker`` tool and cannot call it.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
from collections.abc import Callable, Iterable
from typing import IO, Any

from stoprule.agent.hook.wiring import MCP, McpFile, mcp_argv, parse_toml

__all__ = ["check_mcp", "path_remedy"]

# the SDK's server package (what ``stoprule mcp`` imports) found on that Python's path, none of it run
_PROBE = (
    "import importlib.util as u, os, sys; s = u.find_spec('mcp'); "
    "sys.exit(0 if s and any(os.path.isdir(os.path.join(p, 'server', 'mcpserver')) "
    "for p in s.submodule_search_locations or ()) else 1)"
)


def path_remedy(harness: str) -> str:
    """What to do when a hook's command resolves to nothing on PATH."""
    return (
        "install stoprule where the harness runs (e.g. `pipx install stoprule`, or start the harness with "
        f"stoprule's venv active), or run `stoprule init --harness {harness} --local` from that environment "
        "(it writes this machine's full path)"
    )


def _read(path: str, kind: str) -> Any:
    with open(path, encoding="utf-8") as fh:
        text = fh.read(1 << 20)
    if kind == "toml":
        return parse_toml(text)
    return json.loads(text) if text.strip() else {}


def _launcher(args: list[str]) -> bool:
    """Whether ``args`` (after the interpreter) run stoprule's launcher, as ``init --local`` wires it
    (``-I -S /path/to/stoprule/launch.py``): its imports are the interpreter's (it runs ``site``'s
    start on a miss), so the interpreter is the one to probe."""
    rest = args[:]
    while rest and rest[0].startswith("-") and rest[0] not in ("-m", "-c"):
        rest.pop(0)
    return bool(rest) and rest[0].replace(os.sep, "/").endswith("stoprule/launch.py")


def _python_of(argv: list[str], path: str) -> list[str] | None:
    """The interpreter that runs this registration (``[python]``), or None if it cannot be told."""
    exe = shutil.which(argv[0], path=path)
    if exe is None:
        return None
    if argv[1:3] == ["-m", "stoprule"] or _launcher(argv[1:]):
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
def _sdk_installed(python: tuple[str, ...]) -> bool:
    """Has this interpreter the MCP SDK? Probed once per interpreter in a process (the
    registrations of several harnesses usually share one)."""
    try:
        return subprocess.run([*python, "-c", _PROBE], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _registrations(m: McpFile, root: str) -> Iterable[tuple[str, list[str] | None, str | None]]:
    """``(shown path, argv or None, error or None)`` for each of the harness's MCP configs that exists."""
    for scope in ("shared", "user"):
        path = m.path(root, scope)
        if not os.path.isfile(path):
            continue
        shown = m.project_file if scope == "shared" else path
        try:
            argv = mcp_argv(_read(path, m.kind), m.kind, root)
        except (OSError, ValueError) as exc:
            yield shown, None, f"unreadable: {exc}"
            continue
        if argv:
            yield shown, argv, None


def check_mcp(
    root: str, wired: set[str], search_path: str, line: Callable[[IO[str], bool, str], bool], stdout: IO[str]
) -> bool:
    """One line per registration of every harness (``wired``: the harnesses whose hook was found;
    ``search_path``: the PATH a harness has); False when one cannot start."""
    good = True
    for harness, m in MCP.items():
        found = False
        for shown, argv, error in _registrations(m, root):
            if error is not None or argv is None:
                good &= line(stdout, False, f"{harness}: MCP config {shown} {error}")
                continue
            found = True
            text = " ".join(argv)
            python = _python_of(argv, search_path)
            if shutil.which(argv[0], path=search_path) is None:
                good &= line(
                    stdout,
                    False,
                    f"{harness}: MCP server in {shown}: {argv[0]} resolves to nothing on a "
                    f"PATH without this venv: {path_remedy(harness)}",
                )
            elif python is None:
                line(
                    stdout,
                    True,
                    f"{harness}: MCP server in {shown}: {text} (its interpreter cannot be told; not probed)",
                )
            elif _sdk_installed(tuple(python)):
                line(stdout, True, f"{harness}: MCP server in {shown}: {text} (MCP SDK installed)")
            else:
                good &= line(
                    stdout,
                    False,
                    f"{harness}: MCP server in {shown}: {text} cannot start: the MCP SDK is "
                    f"not installed for {python[-1]}: install it with "
                    f"`{python[-1]} -m pip install 'stoprule[mcp]'`",
                )
        if not found and harness in wired:
            stdout.write(
                f"note {harness}: no MCP server for the blocker tools in {m.project_file} or "
                f"{m.path(root, 'user')}: the agent cannot call `blocker` (`stoprule init --harness "
                f"{harness}` registers it)\n"
            )
    return good
