"""The real harness programs, pinned, and how each one runs headless against a scripted model.

Each harness is installed from npm at the version pinned in :data:`PINNED` into
``$STOPRULE_HARNESS_CACHE`` (default ``~/.cache/stoprule-harnesses``), one folder per
harness and version, outside the tree (``python tests/harness/install.py`` installs the
missing ones). A :class:`Driver` knows one harness: the tool names its model sees, the
user-level config it needs (model endpoint, trust), and its headless command line.

The harness runs with a temporary HOME and a PATH without this Python's venv, as a user's
harness would: the hook and MCP commands ``stoprule init`` wrote must work from there.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from model_servers import Call, Script, Turn

__all__ = ["DRIVERS", "PINNED", "Driver", "Session", "binary", "cache_dir"]

# harness -> (npm package, pinned version, executable); the versions the tier was verified with
PINNED: dict[str, tuple[str, str, str]] = {
    "claude-code": ("@anthropic-ai/claude-code", "2.1.332", "claude"),
    "codex": ("@openai/codex", "0.169.0", "codex"),
    "gemini": ("@google/gemini-cli", "0.61.0", "gemini"),
    "opencode": ("opencode-ai", "1.18.33", "opencode"),
    "copilot": ("@github/copilot", "1.0.102", "copilot"),
}
TIMEOUT_S = 120


def cache_dir() -> Path:
    return Path(os.environ.get("STOPRULE_HARNESS_CACHE") or Path.home() / ".cache" / "stoprule-harnesses")


def install_dir(harness: str) -> Path:
    package, version, _ = PINNED[harness]
    return cache_dir() / f"{harness}-{version}"


def binary(harness: str) -> Path:
    return install_dir(harness) / "node_modules" / ".bin" / PINNED[harness][2]


def install(harness: str) -> None:
    """``npm install --prefix DIR package@version`` (nothing when already there)."""
    if binary(harness).exists():
        return
    package, version, _ = PINNED[harness]
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError("npm is not on PATH")
    subprocess.run([npm, "install", "--prefix", str(install_dir(harness)), "--no-audit", "--no-fund",
                    f"{package}@{version}"], check=True)  # fmt: skip


def harness_path() -> str:
    """PATH for a harness: node, git and the system, not this Python's venv."""
    dirs = [os.path.dirname(p) for p in (shutil.which("node"), shutil.which("git")) if p]
    dirs += ["/usr/local/bin", "/usr/bin", "/bin"]
    venv = os.path.dirname(sys.executable)
    return os.pathsep.join(dict.fromkeys(d for d in dirs if d != venv))


@dataclass
class Session:
    """One headless run: the project, the harness's home, the model's script, the outcome."""

    harness: str
    project: Path
    home: Path
    script: Script
    url: str = ""
    result: subprocess.CompletedProcess[str] | None = None
    env: dict[str, str] = field(default_factory=dict)

    def stops(self) -> list[dict[str, Any]]:
        """The hook's log entries (one per stop), oldest first."""
        log = self.project / ".stoprule" / "hook.log"
        if not log.exists():
            return []
        return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line.strip()]

    def git(self, *args: str) -> str:
        return subprocess.run(["git", *args], cwd=self.project, capture_output=True, text=True, check=True).stdout

    def describe(self) -> str:
        """What happened, for an assertion message."""
        out = self.result.stdout[-1500:] if self.result else ""
        err = self.result.stderr[-1500:] if self.result else ""
        decisions = [(s.get("verdict", {}).get("reason"), s.get("decision"), s.get("error")) for s in self.stops()]
        return f"stdout: {out}\nstderr: {err}\nstops: {decisions}\nrequests: {len(self.script.main)} main"


class Driver:
    """How one harness is set up and run; the tool calls of its model."""

    name = ""
    shell_tool = ""

    def shell(self, command: str) -> Turn:
        return Turn(calls=[Call(self.shell_tool, {"command": command})])

    def mcp(self, tool: str, args: dict[str, Any]) -> list[Turn]:
        """The model turns that call the stoprule MCP server's ``tool``."""
        raise NotImplementedError

    def configure(self, s: Session) -> None:
        """The harness's user-level config (in the temporary HOME) for the scripted model."""

    def command(self, s: Session, prompt: str) -> list[str]:
        raise NotImplementedError

    def environment(self, s: Session) -> dict[str, str]:
        return {}


class ClaudeCode(Driver):
    """``claude -p`` with ``ANTHROPIC_BASE_URL``; MCP tools are deferred behind ``ToolSearch``."""

    name = "claude-code"
    shell_tool = "Bash"

    def shell(self, command: str) -> Turn:
        return Turn(calls=[Call("Bash", {"command": command, "description": "run"})])

    def mcp(self, tool: str, args: dict[str, Any]) -> list[Turn]:
        full = f"mcp__stoprule__{tool}"
        return [Turn(calls=[Call("ToolSearch", {"query": f"select:{full}", "max_results": 5})]),
                Turn(calls=[Call(full, args)])]  # fmt: skip

    def environment(self, s: Session) -> dict[str, str]:
        return {"ANTHROPIC_BASE_URL": s.url, "ANTHROPIC_API_KEY": "sk-ant-test-dummy",
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
                "CLAUDE_CONFIG_DIR": str(s.home / ".claude")}  # fmt: skip

    def command(self, s: Session, prompt: str) -> list[str]:
        return [str(binary(self.name)), "-p", prompt, "--output-format", "json",
                "--allowedTools", "Bash", "mcp__stoprule"]  # fmt: skip


class Codex(Driver):
    """``codex exec`` with a custom provider (Responses API) in ``$CODEX_HOME/config.toml``;
    ``--dangerously-bypass-hook-trust`` stands in for trusting the project hook with ``/hooks``."""

    name = "codex"
    shell_tool = "exec_command"

    def shell(self, command: str) -> Turn:
        return Turn(calls=[Call("exec_command", {"cmd": command})])

    def mcp(self, tool: str, args: dict[str, Any]) -> list[Turn]:
        return [Turn(calls=[Call(f"mcp__stoprule__{tool}", args)])]

    def configure(self, s: Session) -> None:
        codex_home = s.home / ".codex"
        codex_home.mkdir(parents=True, exist_ok=True)
        with open(codex_home / "config.toml", "a", encoding="utf-8") as fh:
            fh.write(
                f'model = "scripted"\nmodel_provider = "scripted"\n\n[model_providers.scripted]\n'
                f'name = "scripted"\nbase_url = "{s.url}/v1"\nwire_api = "responses"\n'
                f'env_key = "SCRIPTED_API_KEY"\n\n[projects."{s.project}"]\ntrust_level = "trusted"\n'
            )

    def environment(self, s: Session) -> dict[str, str]:
        return {"CODEX_HOME": str(s.home / ".codex"), "SCRIPTED_API_KEY": "sk-test-dummy"}

    def command(self, s: Session, prompt: str) -> list[str]:
        return [str(binary(self.name)), "exec", "--dangerously-bypass-approvals-and-sandbox",
                "--dangerously-bypass-hook-trust", "--skip-git-repo-check", prompt]  # fmt: skip


class Gemini(Driver):
    """``gemini -p`` with ``GOOGLE_GEMINI_BASE_URL``, an API-key auth and folder trust off."""

    name = "gemini"
    shell_tool = "run_shell_command"

    def mcp(self, tool: str, args: dict[str, Any]) -> list[Turn]:
        return [Turn(calls=[Call(f"mcp_stoprule_{tool}", args)])]

    def configure(self, s: Session) -> None:
        d = s.home / ".gemini"
        d.mkdir(parents=True, exist_ok=True)
        settings = {"security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
                    "privacy": {"usageStatisticsEnabled": False}}  # fmt: skip
        (d / "settings.json").write_text(json.dumps(settings), encoding="utf-8")

    def environment(self, s: Session) -> dict[str, str]:
        return {"GEMINI_API_KEY": "test-dummy-key", "GOOGLE_GEMINI_BASE_URL": s.url}

    def command(self, s: Session, prompt: str) -> list[str]:
        return [str(binary(self.name)), "-p", prompt, "--output-format", "json", "--yolo", "-m", "gemini-2.5-pro"]


DRIVERS: dict[str, Driver] = {d.name: d for d in (ClaudeCode(), Codex(), Gemini())}
