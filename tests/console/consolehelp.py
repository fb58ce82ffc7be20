"""The console's test helpers: a project's environment, and its console composed as
``stoprule console`` composes it (in process, without the server)."""

from __future__ import annotations

import os
from pathlib import Path

from recorded import Project

from clirunner import process_env

KEY = "test-key"
PORT = 8475


def project_env(tmp: Path, cache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STOPRULE_")}
    env.update(
        HOME=str(tmp / "home"),
        XDG_STATE_HOME=str(tmp / "xs"),
        XDG_CONFIG_HOME=str(tmp / "config"),
        STOPRULE_CACHE_DIR=str(cache),
    )
    return env


def console(pr: Project, *, read_only: str | None = None, key: str = KEY) -> object:
    """The console of ``pr`` as ``stoprule console`` composes it (without the server)."""
    from stoprule.console.access import KeyGate
    from stoprule.console.app import create_console
    from stoprule.console.board import LocalBoard
    from stoprule.console.hooklog import HookLog
    from stoprule.console.policy import PolicyView
    from stoprule.console.runs import Runs
    from stoprule.engine.packs import pack_path

    state = pr.root / ".stoprule"
    with process_env(pr.env, pr.root):
        pack = pack_path(None)
    policy = PolicyView(lambda: pack, str(state), str(state / "packs"))
    return create_console(
        runs=Runs(str(state / "ledger.db"), HookLog(str(state / "hook.log"))),
        board=LocalBoard(str(pr.root)),
        policy=policy,
        gate=KeyGate(key, PORT, read_only),
        title="proj",
        project="proj",
    )
