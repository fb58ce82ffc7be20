"""Run ``stoprule hook`` as each real harness does (in process, or the installed console script
through the harness's shell form), and read its answer by that harness's rules: would the agent
stop, with which instruction, and what would the user see?"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clirunner import invoke

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "hooks"
HARNESSES = ("claude-code", "codex", "gemini", "cursor", "copilot")
# how each harness runs a command hook: through a shell, with its timeout
TIMEOUT_S = {"claude-code": 30, "codex": 30, "gemini": 30, "cursor": 30, "copilot": 30}


def stoprule_exe() -> str:
    """The installed console script (the harness runs `stoprule`, not `python -m`)."""
    here = Path(sys.executable).parent / "stoprule"
    return str(here) if here.exists() else (shutil.which("stoprule") or "stoprule")


def payload(harness: str, name: str = "stop", **changes: Any) -> dict[str, Any]:
    data = json.loads((FIXTURES / harness / f"{name}.json").read_text(encoding="utf-8"))
    data.update(changes)
    return data


@dataclass
class Outcome:
    stops: bool  # the agent stops
    instruction: str | None  # what the agent is told to do next (when it does not stop)
    user_sees: str | None  # what the harness shows the user
    raw: dict[str, Any] | None
    stdout: str
    stderr: str


def interpret(harness: str, code: int, stdout: str, stderr: str) -> Outcome:
    """Read the hook's answer as the harness would (exit 0 assumed and asserted)."""
    assert code == 0, f"a hook must exit 0 (got {code}): {stderr}"
    text = stdout.strip()
    if not text:
        assert harness in ("claude-code", "codex"), f"{harness} expects a JSON object on stdout"
        return Outcome(True, None, None, None, stdout, stderr)
    assert text.startswith("{") and "\n" not in text, f"stdout must be one JSON object: {stdout!r}"
    obj = json.loads(text)
    if harness in ("claude-code", "codex", "copilot"):
        blocked = obj.get("decision") == "block"
        return Outcome(
            not blocked, obj.get("reason") if blocked else None, obj.get("systemMessage"), obj, stdout, stderr
        )
    if harness == "gemini":
        blocked = obj.get("decision") in ("deny", "block")
        return Outcome(
            not blocked, obj.get("reason") if blocked else None, obj.get("systemMessage"), obj, stdout, stderr
        )
    follow = obj.get("followup_message")
    return Outcome(not follow, follow or None, None, obj, stdout, stderr)


def run_hook(
    harness: str,
    data: dict[str, Any] | bytes,
    cwd: Path,
    env: dict[str, str],
    extra: tuple[str, ...] = (),
    *,
    shell: bool = False,
) -> Outcome:
    """stdin JSON, the session's cwd, the harness's environment. ``shell``: the installed console
    script in a subprocess, in the harness's shell form with its timeout (where the process
    boundary is the point); otherwise ``stoprule hook`` in process."""
    raw = data if isinstance(data, bytes) else json.dumps(data).encode()
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("STOPRULE_")}
    full_env.update(env)
    if harness == "claude-code":
        full_env["CLAUDE_PROJECT_DIR"] = str(cwd)
    elif harness == "gemini":
        full_env.update(GEMINI_PROJECT_DIR=str(cwd), GEMINI_CWD=str(cwd))
    if not shell:
        p = invoke(["hook", harness, *extra], input=raw, env=full_env, cwd=cwd)
        return interpret(harness, p.returncode, p.stdout.decode(), p.stderr.decode())
    cmd = " ".join([stoprule_exe(), "hook", harness, *extra])
    p = subprocess.run(
        ["/bin/sh", "-c", cmd], input=raw, capture_output=True, cwd=cwd, env=full_env, timeout=TIMEOUT_S[harness]
    )
    return interpret(harness, p.returncode, p.stdout.decode(), p.stderr.decode())
