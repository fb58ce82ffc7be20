"""The real harness programs, pinned, and how each one runs headless against a scripted model.

The canary, ``STOPRULE_HARNESS_LATEST=1``, runs the same sessions against each harness's newest
npm release instead (installed on first use) and ends with a report of what changed.

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
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from model_servers import Call, Script, Turn, serve

__all__ = [
    "DRIVERS",
    "ClaudeCode",
    "Gemini",
    "OpenCode",
    "PINNED",
    "Driver",
    "Session",
    "binary",
    "cache_dir",
    "latest_mode",
    "make_project",
    "run_session",
    "version",
]

# harness -> (npm package, pinned version, executable); the versions the tier was verified with
PINNED: dict[str, tuple[str, str, str]] = {
    "claude-code": ("@anthropic-ai/claude-code", "2.1.332", "claude"),
    "codex": ("@openai/codex", "0.171.0", "codex"),
    "gemini": ("@google/gemini-cli", "0.61.0", "gemini"),
    "opencode": ("opencode-ai", "1.18.33", "opencode"),
    "copilot": ("@github/copilot", "1.0.102", "copilot"),
}
TIMEOUT_S = 120


def cache_dir() -> Path:
    return Path(os.environ.get("STOPRULE_HARNESS_CACHE") or Path.home() / ".cache" / "stoprule-harnesses")


def latest_mode() -> bool:
    """The canary (``STOPRULE_HARNESS_LATEST=1``): each harness's newest npm release, not the pin."""
    return os.environ.get("STOPRULE_HARNESS_LATEST") == "1"


_LATEST: dict[str, str] = {}


def version(harness: str) -> str:
    """The version this run tests: the pinned one, or in the canary the newest on npm (asked once
    per run with ``npm view PACKAGE version``; the pin when npm cannot say)."""
    package, pinned, _ = PINNED[harness]
    if not latest_mode():
        return pinned
    if harness not in _LATEST:
        npm = shutil.which("npm")
        found = ""
        if npm:
            p = subprocess.run([npm, "view", package, "version"], capture_output=True, text=True, timeout=60)
            found = p.stdout.strip().splitlines()[-1] if p.returncode == 0 and p.stdout.strip() else ""
        _LATEST[harness] = found or pinned
    return _LATEST[harness]


def install_dir(harness: str) -> Path:
    return cache_dir() / f"{harness}-{version(harness)}"


def binary(harness: str) -> Path:
    return install_dir(harness) / "node_modules" / ".bin" / PINNED[harness][2]


def install(harness: str) -> None:
    """``npm install --prefix DIR package@version`` (nothing when already there)."""
    if binary(harness).exists():
        return
    package = PINNED[harness][0]
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError("npm is not on PATH")
    subprocess.run(
        [
            npm,
            "install",
            "--prefix",
            str(install_dir(harness)),
            "--no-audit",
            "--no-fund",
            f"{package}@{version(harness)}",
        ],
        check=True,
    )


def stoprule_exe() -> str:
    """The console script of this install (what init writes into the harness configs)."""
    return shutil.which("stoprule", path=os.path.dirname(sys.executable)) or shutil.which("stoprule") or "stoprule"


def require(harness: str) -> None:
    """Skip (fail in CI) when the harness or node is missing; the canary installs the newest release."""
    if latest_mode() and not binary(harness).exists() and shutil.which("npm"):
        install(harness)
    missing = [
        what
        for what, ok in (("node", shutil.which("node")), (str(binary(harness)), binary(harness).exists()))
        if not ok
    ]
    if missing:
        why = f"{harness}: not installed ({', '.join(missing)}); run python tests/harness/install.py"
        if os.environ.get("STOPRULE_REQUIRE_HARNESSES") == "1":
            pytest.fail(why)
        pytest.skip(why)


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
        entries = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line.strip()]
        return [e for e in entries if e.get("event") in ("stop", "subagent-stop") and "decision" in e]

    def git(self, *args: str) -> str:
        return subprocess.run(["git", *args], cwd=self.project, capture_output=True, text=True, check=True).stdout

    def transcript(self, width: int = 160) -> list[str]:
        """The session as the model and the hook saw it, in order: what the model was sent,
        what it answered, each stop's decision."""
        events: list[tuple[float, str]] = []
        for r in self.script.main:
            for text in r.last_input():
                events.append((r.at, f"  -> model   {_one_line(text, width)}"))
            t = r.turn
            if t is not None:
                if t.text:
                    events.append((r.at + 1e-6, f"  <- model   {_one_line(t.text, width)}"))
                for c in t.calls:
                    events.append((r.at + 2e-6, f"  <- model   call {c.name} {_one_line(json.dumps(c.args), width)}"))
        for e in self.stops():
            d, v = e["decision"], e.get("verdict") or {}
            what = (
                f"block: {d['message']}"
                if d["block"]
                else "allow" + (f" (notice: {d['notice']})" if d["notice"] else "")
            )
            events.append((e["ts"], f"  stop      {v.get('verdict')}/{v.get('reason')} -> {_one_line(what, width)}"))
        return [line for _, line in sorted(events, key=lambda x: x[0])]

    def describe(self) -> str:
        """What happened, for an assertion message."""
        out = self.result.stdout[-1500:] if self.result else ""
        err = self.result.stderr[-1500:] if self.result else ""
        decisions = [(s.get("verdict", {}).get("reason"), s.get("decision"), s.get("error")) for s in self.stops()]
        return f"stdout: {out}\nstderr: {err}\nstops: {decisions}\nrequests: {len(self.script.main)} main"


def _one_line(text: str, width: int) -> str:
    text = " ".join(text.split())
    if text.startswith("<system-reminder>"):  # Claude Code wraps hook output: its end is what matters
        text = text.removeprefix("<system-reminder>").removesuffix("</system-reminder>").strip()
        return text if len(text) <= width else "…" + text[-(width - 1) :]
    return text if len(text) <= width else text[: width - 1] + "…"


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

    def run(self, s: Session, prompt: str) -> subprocess.CompletedProcess[str]:
        """Run the harness to its end (headless, one prompt)."""
        return subprocess.run(
            self.command(s, prompt),
            cwd=s.project,
            env=s.env,
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )


class ClaudeCode(Driver):
    """``claude -p`` with ``ANTHROPIC_BASE_URL``; MCP tools are deferred behind ``ToolSearch``."""

    name = "claude-code"
    shell_tool = "Bash"

    def shell(self, command: str) -> Turn:
        return Turn(calls=[Call("Bash", {"command": command, "description": "run"})])

    def mcp(self, tool: str, args: dict[str, Any]) -> list[Turn]:
        full = f"mcp__stoprule__{tool}"
        return [
            Turn(calls=[Call("ToolSearch", {"query": f"select:{full}", "max_results": 5})]),
            Turn(calls=[Call(full, args)]),
        ]

    def environment(self, s: Session) -> dict[str, str]:
        return {
            "ANTHROPIC_BASE_URL": s.url,
            "ANTHROPIC_API_KEY": "sk-ant-test-dummy",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "CLAUDE_CODE_ENABLE_TODO_TOOLS": "1",
            "CLAUDE_CONFIG_DIR": str(s.home / ".claude"),
        }

    def command(self, s: Session, prompt: str) -> list[str]:
        return [
            str(binary(self.name)),
            "-p",
            prompt,
            "--output-format",
            "json",
            "--allowedTools",
            "Bash",
            "mcp__stoprule",
        ]


class Codex(Driver):
    """``codex exec`` with a custom provider (Responses API) in ``$CODEX_HOME/config.toml``;
    ``--dangerously-bypass-hook-trust`` stands in for trusting the project hook with ``/hooks``."""

    name = "codex"
    shell_tool = "exec_command"

    def shell(self, command: str) -> Turn:
        return Turn(calls=[Call("exec_command", {"cmd": command})])

    def mcp(self, tool: str, args: dict[str, Any]) -> list[Turn]:
        return [Turn(calls=[Call(tool, args, namespace="mcp__stoprule")])]

    def configure(self, s: Session) -> None:
        codex_home = s.home / ".codex"
        codex_home.mkdir(parents=True, exist_ok=True)
        with open(codex_home / "config.toml", "a", encoding="utf-8") as fh:
            fh.write(
                f'model = "scripted"\nmodel_provider = "scripted"\n\n[model_providers.scripted]\n'
                f'name = "scripted"\nbase_url = "{s.url}/v1"\nwire_api = "responses"\n'
                f'env_key = "SCRIPTED_API_KEY"\n\n[projects."{s.project}"]\ntrust_level = "trusted"\n'
            )
            # the blocker tools' MCP server comes from the project's .codex/config.toml (stoprule init),
            # which Codex reads because the project is trusted

    def environment(self, s: Session) -> dict[str, str]:
        return {"CODEX_HOME": str(s.home / ".codex"), "SCRIPTED_API_KEY": "sk-test-dummy"}

    def command(self, s: Session, prompt: str) -> list[str]:
        return [
            str(binary(self.name)),
            "exec",
            "--dangerously-bypass-approvals-and-sandbox",
            "--dangerously-bypass-hook-trust",
            "--skip-git-repo-check",
            prompt,
        ]


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


class Copilot(Driver):
    """``copilot -p`` offline with a BYOK provider (``COPILOT_PROVIDER_BASE_URL``, Chat
    Completions) and ``--trust-folder`` for the project's hooks."""

    name = "copilot"
    shell_tool = "bash"

    def shell(self, command: str) -> Turn:
        return Turn(calls=[Call("bash", {"command": command, "description": "run"})])

    def mcp(self, tool: str, args: dict[str, Any]) -> list[Turn]:
        return [Turn(calls=[Call(f"stoprule-{tool}", args)])]

    def environment(self, s: Session) -> dict[str, str]:
        return {
            "COPILOT_OFFLINE": "true",
            "COPILOT_PROVIDER_BASE_URL": f"{s.url}/v1",
            "COPILOT_PROVIDER_TYPE": "openai",
            "COPILOT_PROVIDER_API_KEY": "sk-test-dummy",
            "COPILOT_MODEL": "gpt-4.1",
            "COPILOT_HOME": str(s.home / ".copilot"),
            "COPILOT_AUTO_UPDATE": "false",
        }

    def command(self, s: Session, prompt: str) -> list[str]:
        return [
            str(binary(self.name)),
            "-p",
            prompt,
            "--allow-all-tools",
            "--trust-folder",
            "--disable-client-telemetry",
        ]


DRIVERS["copilot"] = Copilot()


class OpenCode(Driver):
    """``opencode run`` with an OpenAI-compatible provider (Chat Completions) in the user's
    ``opencode.json``; the project's plugin and MCP entry come from ``stoprule init``."""

    name = "opencode"
    shell_tool = "bash"
    port = 0  # the server's (0: any free one)

    def shell(self, command: str) -> Turn:
        return Turn(calls=[Call("bash", {"command": command, "description": "run"})])

    def mcp(self, tool: str, args: dict[str, Any]) -> list[Turn]:
        return [Turn(calls=[Call(f"stoprule_{tool}", args)])]

    def configure(self, s: Session) -> None:
        d = s.home / ".config" / "opencode"
        d.mkdir(parents=True, exist_ok=True)
        config = {"provider": {"scripted": {"npm": "@ai-sdk/openai-compatible", "name": "scripted",
                                            "options": {"baseURL": f"{s.url}/v1", "apiKey": "sk-test-dummy"},
                                            "models": {"scripted": {"name": "scripted", "tool_call": True}}}},
                  "model": "scripted/scripted", "autoupdate": False, "share": "disabled",
                  "permission": {"bash": "allow", "edit": "allow"}}  # fmt: skip
        (d / "opencode.json").write_text(json.dumps(config), encoding="utf-8")

    def environment(self, s: Session) -> dict[str, str]:
        return {
            "XDG_CONFIG_HOME": str(s.home / ".config"),
            "XDG_DATA_HOME": str(s.home / ".local" / "share"),
            # shared between runs: OpenCode installs the provider package there on first use
            "XDG_CACHE_HOME": str(install_dir(self.name) / "xdg-cache"),
            "XDG_STATE_HOME": str(s.home / ".local" / "state"),
            "OPENCODE_DISABLE_AUTOUPDATE": "1",
            "OPENCODE_DISABLE_SHARE": "1",
            "OPENCODE_DISABLE_MODELS_FETCH": "1",
            "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
            "OPENCODE_DISABLE_CLAUDE_CODE": "1",
            "OPENCODE_FAST_BOOT": "1",
            "OPENCODE_EXPERIMENTAL_DISABLE_FILEWATCHER": "1",
        }

    def command(self, s: Session, prompt: str) -> list[str]:
        return [str(binary(self.name)), "serve", "--hostname", "127.0.0.1", "--port", str(self.port), "--print-logs"]

    def run(self, s: Session, prompt: str) -> subprocess.CompletedProcess[str]:
        """``opencode run`` exits when the first answer is done, before a plugin can continue the
        session: run the headless server instead, send the prompt over its HTTP API (``/NAME
        ARGS``: the command NAME, as the TUI sends a command the user typed), and wait
        until neither the model nor the hook has been asked anything for a few seconds."""
        import time
        import urllib.request

        proc = subprocess.Popen(
            self.command(s, prompt),
            cwd=s.project,
            env=s.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            stdin=subprocess.DEVNULL,
        )
        lines: list[str] = []
        try:
            assert proc.stdout is not None
            base = None
            deadline = time.monotonic() + TIMEOUT_S
            while base is None and time.monotonic() < deadline:
                line = proc.stdout.readline()
                if not line:
                    break
                lines.append(line)
                found = re.search(r"https?://127\.0\.0\.1:\d+", line)
                base = found.group(0) if found else None
            if base is None:
                return subprocess.CompletedProcess(proc.args, 1, "".join(lines), "no server URL")
            import threading

            threading.Thread(
                target=lambda: lines.extend(proc.stdout or []), daemon=True
            ).start()  # keep the pipe drained

            def call(method: str, path: str, body: dict[str, Any] | None = None) -> Any:
                data = json.dumps(body).encode() if body is not None else None
                req = urllib.request.Request(
                    base + path, data=data, method=method, headers={"Content-Type": "application/json"}
                )
                with urllib.request.urlopen(req, timeout=TIMEOUT_S) as resp:
                    text = resp.read().decode()
                return json.loads(text) if text.strip() else None

            session = call("POST", "/session", {})
            sid = session["id"]
            if prompt.startswith("/"):  # a command, as the TUI sends what the user types
                name, _, arguments = prompt[1:].partition(" ")
                body = {"command": name, "arguments": arguments, "model": "scripted/scripted"}
                call("POST", f"/session/{sid}/command", body)
            else:
                body = {
                    "parts": [{"type": "text", "text": prompt}],
                    "model": {"providerID": "scripted", "modelID": "scripted"},
                }
                call("POST", f"/session/{sid}/message", body)
            log = s.project / ".stoprule" / "hook.log"
            quiet, seen = time.monotonic(), (-1, -1)
            while time.monotonic() < deadline and time.monotonic() - quiet < 6:  # the plugin spawns the hook
                now = (len(s.script.requests), log.stat().st_size if log.exists() else 0)
                if now != seen or _running_stoprule(proc.pid):  # a slow hook (a loaded machine) is not quiet
                    seen, quiet = now, time.monotonic()
                time.sleep(0.5)
            messages = call("GET", f"/session/{sid}/message")
            last = [m for m in messages or [] if m.get("info", {}).get("role") == "assistant"]
            text = (
                "".join(p.get("text", "") for p in (last[-1].get("parts") or []) if p.get("type") == "text")
                if last
                else ""
            )
            return subprocess.CompletedProcess(proc.args, 0, text, "".join(lines[-400:]))
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
            if proc.stdout is not None:
                proc.stdout.close()


def _running_stoprule(pid: int) -> bool:
    """Is the plugin's ``stoprule hook`` running below ``pid``? (Linux ``/proc``; the MCP server,
    running all along, is not counted)"""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as fh:
                    parents[int(entry)] = int(fh.read().rsplit(b")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    below, grew = {pid}, True
    while grew:
        more = {child for child, parent in parents.items() if parent in below} - below
        below |= more
        grew = bool(more)
    for child in below - {pid}:
        try:
            with open(f"/proc/{child}/cmdline", "rb") as fh:
                argv = fh.read().split(b"\0")
            if any(b"stoprule" in a for a in argv) and b"hook" in argv:
                return True
        except OSError:
            continue
    return False


def _opencode_supported() -> bool:
    """OpenCode joins the tier once stoprule has its adapter (and ``init`` its plugin)."""
    import importlib.util

    return importlib.util.find_spec("stoprule.agent.hook.adapters.opencode") is not None


if _opencode_supported():
    DRIVERS["opencode"] = OpenCode()

PROMPT = "Write notes.txt, then finish."


def make_project(root: Path, harness: str) -> Path:
    """A git project wired with ``stoprule init --harness H`` (run as a user would, from the
    venv), everything committed: a clean tree before the session."""
    project = root / "project"
    project.mkdir()
    git = ["git", "-c", "user.email=t@example.invalid", "-c", "user.name=t"]
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=project, check=True)
    subprocess.run(["git", "config", "user.email", "agent@example.invalid"], cwd=project, check=True)
    subprocess.run(["git", "config", "user.name", "agent"], cwd=project, check=True)
    (project / "README.md").write_text("# demo\n", encoding="utf-8")
    env = dict(os.environ, PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    env["HOME"] = str(root / "home")
    p = subprocess.run(
        [stoprule_exe(), "init", "--harness", harness], cwd=project, env=env, capture_output=True, text=True
    )
    assert p.returncode == 0, p.stderr
    subprocess.run([*git, "add", "-A"], cwd=project, check=True)
    subprocess.run([*git, "commit", "-qm", "wire stoprule"], cwd=project, check=True)
    return project


def run_session(
    harness: str,
    root: Path,
    turns: list[Turn],
    default: Turn | None = None,
    prompt: str = PROMPT,
    wire: str | None = None,
    driver: Driver | None = None,
) -> Session:
    """A headless run of ``harness`` to its end in a fresh project under ``root`` (wired by
    ``stoprule init --harness WIRE``, by default the harness itself; ``driver``: another way to run it)."""
    driver = driver or DRIVERS[harness]
    home = root / "home"
    home.mkdir(exist_ok=True)
    project = make_project(root, wire or harness)
    s = Session(harness, project, home, Script(turns, default))
    with serve(s.script) as url:
        s.url = url
        driver.configure(s)
        drop = ("STOPRULE_", "ANTHROPIC_", "OPENAI_", "GEMINI_", "GOOGLE_", "CODEX_", "COPILOT_", "CLAUDE_")
        env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
        # PWD too: OpenCode takes its directory from $PWD, not from the process's cwd
        env.update(HOME=str(home), PATH=harness_path(), NO_COLOR="1", PWD=str(project))
        env.update(driver.environment(s))
        s.env = env
        s.result = driver.run(s, prompt)
    return s
