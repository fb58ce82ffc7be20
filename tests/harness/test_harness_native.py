"""The harnesses as they are now, on the real binaries: what each one's own routes do (MCP
registration, plugins and extensions, the user's in-session ``/blockers`` command, the newer
hook events). Run alone: ``python -m pytest -m harness -n 0 -k native``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from harnesses import DRIVERS, Session, harness_path, make_project, require
from model_servers import Script, Turn, serve

pytestmark = pytest.mark.harness

CODEX_SESSIONS = 20


def _codex_tools(body: dict) -> str:
    return json.dumps(body.get("tools") or [])


def test_codex_has_the_blocker_tools_on_the_first_request_of_every_exec_session(tmp_path: Path) -> None:
    """``init`` registers ``stoprule mcp`` in the project's ``.codex/config.toml`` with
    ``required = true``: ``codex exec`` waits for it, so its first request always offers the
    blocker tools (without it 8 of 44 sessions had none). The model answers at once: each
    session is one request, without hooks (the race at its tightest)."""
    require("codex")
    d = DRIVERS["codex"]
    home = tmp_path / "home"
    home.mkdir()
    project = make_project(tmp_path, "codex")
    text = (project / ".codex" / "config.toml").read_text(encoding="utf-8")
    assert "[mcp_servers.stoprule]" in text and "required = true" in text
    # no hooks: a SessionStart hook would delay the first request and hide the race
    (project / ".codex" / "hooks.json").unlink()
    missing = []
    for i in range(CODEX_SESSIONS):
        script = Script([], Turn("Nothing to do."))
        with serve(script) as url:
            s = Session("codex", project, home / str(i), script, url)
            s.home.mkdir()
            d.configure(s)
            env = {k: v for k, v in os.environ.items() if not k.startswith(("STOPRULE_", "OPENAI_", "CODEX_"))}
            env.update(HOME=str(s.home), PATH=harness_path(), NO_COLOR="1", PWD=str(project), **d.environment(s))
            s.env = env
            s.result = d.run(s, "Say hello.")
        assert s.result.returncode == 0, s.describe()
        first = script.main[0].body if script.main else {}
        if "mcp__stoprule" not in _codex_tools(first) or "blocker" not in _codex_tools(first):
            missing.append(i)
    assert missing == [], f"sessions without the blocker tools on the first request: {missing}"
