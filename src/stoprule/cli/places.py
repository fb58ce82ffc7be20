"""Where ``init`` wires a project and how a harness finds stoprule (``init`` and ``doctor``).

``git_root``: the repository's top level (init wires it, doctor checks it, from any sub-folder).
``harness_env``: the environment of a harness started outside this venv (from a desktop or
another shell): the PATH a hook's command must resolve on.
"""

from __future__ import annotations

import os
import subprocess
import sys

__all__ = ["git_root", "harness_env"]


def git_root(start: str) -> str | None:
    """The top level of the git work tree holding ``start``, or None (not in one, or no git)."""
    try:
        p = subprocess.run(
            ["git", "-C", start, "rev-parse", "--show-toplevel"], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return os.path.abspath(p.stdout.strip()) if p.returncode == 0 and p.stdout.strip() else None


def harness_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a harness started outside this venv: ``PATH`` without this venv's
    ``bin`` (nor ``$VIRTUAL_ENV/bin``), no ``VIRTUAL_ENV``."""
    env = dict(os.environ if env is None else env)
    drop = set()
    if sys.prefix != sys.base_prefix:
        drop.add(os.path.normpath(os.path.dirname(sys.executable)))
    venv = env.pop("VIRTUAL_ENV", None)
    if venv:
        drop.add(os.path.normpath(os.path.join(venv, "bin")))
    kept = [p for p in env.get("PATH", "").split(os.pathsep) if p and os.path.normpath(p) not in drop]
    env["PATH"] = os.pathsep.join(kept)
    return env
