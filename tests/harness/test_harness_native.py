"""The harnesses as they are now, on the real binaries: what each one's own routes do (MCP
registration, plugins and extensions, the user's in-session ``/blockers`` command, the newer
hook events). Run alone: ``python -m pytest -m harness -n 0 -k native``.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pty
import re
import select
import signal
import struct
import subprocess
import termios
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from harnesses import (
    DRIVERS,
    ClaudeCode,
    Codex,
    Driver,
    Gemini,
    OpenCode,
    Session,
    binary,
    harness_path,
    make_project,
    require,
    run_session,
    stoprule_exe,
)
from model_servers import Call, Script, Turn, serve
from scenarios import SCENARIOS

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

    def session(i: int) -> bool:
        """Session ``i`` (its own home and model server): were the blocker tools on its first request?"""
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
        return "mcp__stoprule" in _codex_tools(first) and "blocker" in _codex_tools(first)

    with ThreadPoolExecutor(2) as pool:  # two at a time: a loaded machine starts the server later
        missing = [i for i, ok in enumerate(pool.map(session, range(CODEX_SESSIONS))) if not ok]
    assert missing == [], f"sessions without the blocker tools on the first request: {missing}"


class ClaudeCodePlugin(ClaudeCode):
    """Claude Code with stoprule installed as a plugin, not wired by ``init``: the project keeps
    only init's ``.stoprule/`` (its config: loop cap 3); ``stoprule plugin claude-code`` writes a
    local marketplace and the binary's own ``plugin marketplace add`` / ``plugin install`` install
    it into the session's config directory. Claude Code names a plugin's MCP server
    ``plugin:stoprule:stoprule``: its tools are ``mcp__plugin_stoprule_stoprule__*``."""

    tools = "mcp__plugin_stoprule_stoprule"

    def mcp(self, tool: str, args: dict[str, Any]) -> list[Turn]:
        full = f"{self.tools}__{tool}"
        return [
            Turn(calls=[Call("ToolSearch", {"query": f"select:{full}", "max_results": 5})]),
            Turn(calls=[Call(full, args)]),
        ]

    def command(self, s: Session, prompt: str) -> list[str]:
        return [*super().command(s, prompt), self.tools]

    def configure(self, s: Session) -> None:
        for wired in (".claude/settings.json", ".claude/settings.local.json", ".mcp.json"):  # shared or personal
            (s.project / wired).unlink(missing_ok=True)
        s.git("add", "-A")
        s.git("commit", "-qm", "stoprule as a plugin, not wired", "--allow-empty")
        market = s.home / "marketplace"
        exe = stoprule_exe()
        p = subprocess.run([exe, "plugin", "claude-code", "--out", str(market)], capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        env = dict(os.environ, HOME=str(s.home), CLAUDE_CONFIG_DIR=str(s.home / ".claude"))
        for argv in (["plugin", "marketplace", "add", str(market)], ["plugin", "install", "stoprule@stoprule"]):
            p = subprocess.run(
                [str(binary("claude-code")), *argv], env=env, capture_output=True, text=True, timeout=120
            )
            assert p.returncode == 0, p.stdout + p.stderr


def _decided(s: Session) -> list[tuple[str, bool, bool]]:
    return [(e["verdict"]["reason"], e["decision"]["block"], e["loop"]["capped"]) for e in s.stops()]


@pytest.mark.parametrize("scenario", ["commit", "never_complies", "report_status"])
def test_the_claude_code_plugin_decides_the_sessions_init_wiring_decides(scenario: str, tmp_path: Path) -> None:
    """The same scripted session under ``init`` wiring and under the installed plugin: the same
    stops, decided the same way, the same requests to the model (each continuation reached it)."""
    require("claude-code")
    (tmp_path / "wired").mkdir()
    (tmp_path / "plugin").mkdir()
    turns, default = SCENARIOS[scenario](DRIVERS["claude-code"])
    wired = run_session("claude-code", tmp_path / "wired", turns, default)
    turns, default = SCENARIOS[scenario](ClaudeCodePlugin())
    plugin = run_session("claude-code", tmp_path / "plugin", turns, default, driver=ClaudeCodePlugin())
    for s in (wired, plugin):
        assert s.result is not None and s.result.returncode == 0, s.describe()
    assert _decided(plugin) == _decided(wired) and _decided(wired), (plugin.describe(), wired.describe())
    assert len(plugin.script.main) == len(wired.script.main), plugin.describe()
    if scenario == "commit":
        assert "add notes" in plugin.git("log", "--format=%s")


ASKS = "The migration script is ready. Should I apply it to the staging database?"


def test_blockers_off_typed_by_the_user_stops_diverting_in_that_session_only(tmp_path: Path) -> None:
    """Claude Code with the plugin: the user types ``/stoprule:blockers off`` (``claude -p``
    offers a plugin's commands by their qualified name); the UserPromptSubmit hook reads the
    typed line, the agent is told to ask the user directly, and its question ends the session
    without a push-back. A second session in the same project, without the command, asks the
    same and is pushed back (the switch is that session's, not the project's)."""
    require("claude-code")
    d = ClaudeCodePlugin()
    off = run_session("claude-code", tmp_path, [Turn(ASKS)], Turn("ok."), prompt="/stoprule:blockers off", driver=d)
    assert off.result is not None and off.result.returncode == 0, off.describe()
    first = off.script.main[0].text
    assert "ask them directly" in first and "/stoprule:blockers" in first, first[-1500:]
    assert [(e["verdict"]["reason"], e["decision"]["block"]) for e in off.stops()] == [("ok", False)], off.describe()
    assert off.stops()[0]["fact"]["blockersOff"] is True
    before = off.stops()  # (the project's hook log: the next session's stops are appended)
    # the next session of the same project: the triage is on again
    script = Script([Turn(ASKS)], Turn("Logged it for the user."))
    with serve(script) as url:
        s = Session("claude-code", off.project, off.home, script, url)
        s.env = dict(off.env, **d.environment(s))
        s.result = d.run(s, "Migrate staging.")
    assert s.result.returncode == 0, s.describe()
    after = s.stops()[len(before) :]
    assert after and after[0]["verdict"]["reason"] == "unlogged_question", s.describe()
    assert after[0]["decision"]["block"], s.describe()
    assert after[0]["session"] != before[0]["session"]


def test_task_completed_refuses_marking_a_task_done_over_uncommitted_work(tmp_path: Path) -> None:
    """Claude Code's TaskCompleted, wired by ``init``: the agent writes a file and marks its task
    done; the policy refuses (uncommitted work, the fact saying ``stopEvent: task-completed``) and
    the binary returns the reason as the tool's result ("TaskCompleted hook feedback"); after the
    commit the task is marked done. Other tasks remaining is no reason to refuse."""
    require("claude-code")
    d = DRIVERS["claude-code"]
    tools = Turn(calls=[Call("ToolSearch", {"query": "select:TaskCreate,TaskUpdate", "max_results": 5})])
    create = [Turn(calls=[Call("TaskCreate", {"subject": s, "description": s})]) for s in ("Write notes", "Docs")]
    done = Turn(calls=[Call("TaskUpdate", {"taskId": "1", "status": "completed"})])
    turns = [tools, *create, d.shell("echo hello > notes.txt"), done]
    turns += [d.shell("git add notes.txt && git commit -qm 'add notes'"), done, Turn("Notes written; Docs next time.")]
    s = run_session("claude-code", tmp_path, turns, Turn("Stopping."))
    assert s.result is not None and s.result.returncode == 0, s.describe()
    log = [json.loads(x) for x in (s.project / ".stoprule" / "hook.log").read_text().splitlines()]
    asked = [e for e in log if e.get("event") == "task-completed" and "decision" in e]
    assert [(e["verdict"]["reason"], e["decision"]["block"]) for e in asked] == [
        ("uncommitted_work", True),
        ("ok", False),
    ], s.describe()
    assert asked[0]["fact"]["stopEvent"] == "task-completed" and asked[1]["fact"]["availableTasks"]
    refused = s.script.first_seeing("TaskCompleted hook feedback")
    assert refused is not None and "notes.txt" in s.script.main[refused].text, s.describe()


class OpenCodePackage(OpenCode):
    """OpenCode with stoprule's plugin package (``stoprule plugin opencode --out DIR``) named by
    its local path in the project's ``opencode.json`` ``plugin`` list, instead of the plugin file
    ``init`` writes into ``.opencode/plugins/`` (removed here; init's MCP entry and config stay)."""

    def configure(self, s: Session) -> None:
        super().configure(s)
        (s.project / ".opencode" / "plugins" / "stoprule.js").unlink()
        package = s.home / "stoprule-opencode"
        p = subprocess.run(
            [stoprule_exe(), "plugin", "opencode", "--out", str(package)], capture_output=True, text=True
        )
        assert p.returncode == 0, p.stderr
        config = json.loads((s.project / "opencode.json").read_text(encoding="utf-8"))
        config["plugin"] = [f"file://{package / 'index.js'}"]
        (s.project / "opencode.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
        s.git("add", "-A")
        s.git("commit", "-qm", "stoprule as a plugin package, not init's file", "--allow-empty")


@pytest.mark.parametrize("scenario", ["commit", "never_complies"])
def test_the_opencode_plugin_package_decides_the_sessions_init_wiring_decides(scenario: str, tmp_path: Path) -> None:
    require("opencode")
    (tmp_path / "wired").mkdir()
    (tmp_path / "package").mkdir()
    wired = run_session("opencode", tmp_path / "wired", *SCENARIOS[scenario](DRIVERS["opencode"]))
    package = run_session(
        "opencode", tmp_path / "package", *SCENARIOS[scenario](DRIVERS["opencode"]), driver=OpenCodePackage()
    )
    for s in (wired, package):
        assert s.result is not None and s.result.returncode == 0, s.describe()
    assert _decided(package) == _decided(wired) and _decided(wired), (package.describe(), wired.describe())
    assert len(package.script.main) == len(wired.script.main), package.describe()


class GeminiExtension(Gemini):
    """Gemini CLI with stoprule installed as an extension (``stoprule plugin gemini --out DIR``,
    then the binary's own ``gemini extensions install DIR``, answering its folder-trust question),
    not wired by ``init`` (the project's ``.gemini/settings.json`` removed; ``.stoprule/`` stays)."""

    def configure(self, s: Session) -> None:
        super().configure(s)
        (s.project / ".gemini" / "settings.json").unlink(missing_ok=True)
        s.git("add", "-A")
        s.git("commit", "-qm", "stoprule as an extension, not wired", "--allow-empty")
        ext = s.home / "stoprule-extension"
        p = subprocess.run([stoprule_exe(), "plugin", "gemini", "--out", str(ext)], capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        env = dict(os.environ, HOME=str(s.home))
        argv = [str(binary("gemini")), "extensions", "install", str(ext), "--consent"]
        p = subprocess.run(argv, env=env, input="y\n", capture_output=True, text=True, timeout=120, cwd=s.home)
        assert p.returncode == 0 and "installed successfully" in p.stdout + p.stderr, p.stdout + p.stderr


@pytest.mark.parametrize("scenario", ["commit", "never_complies", "report_status"])
def test_the_gemini_extension_decides_the_sessions_init_wiring_decides(scenario: str, tmp_path: Path) -> None:
    require("gemini")
    (tmp_path / "wired").mkdir()
    (tmp_path / "extension").mkdir()
    wired = run_session("gemini", tmp_path / "wired", *SCENARIOS[scenario](DRIVERS["gemini"]))
    ext = run_session(
        "gemini", tmp_path / "extension", *SCENARIOS[scenario](DRIVERS["gemini"]), driver=GeminiExtension()
    )
    for s in (wired, ext):
        assert s.result is not None and s.result.returncode == 0, s.describe()
    assert _decided(ext) == _decided(wired) and _decided(wired), (ext.describe(), wired.describe())
    assert len(ext.script.main) == len(wired.script.main), ext.describe()


class GeminiAutonomous(Gemini):
    """Gemini CLI with the project's sessions declared autonomous (``session.mode``): nobody
    answers a question there, so an unlogged one is pushed back (Gemini says nothing of it)."""

    def configure(self, s: Session) -> None:
        super().configure(s)
        with open(s.project / ".stoprule" / "config.yaml", "a", encoding="utf-8") as fh:
            fh.write("\nsession:\n  mode: autonomous\n")


def test_gemini_blockers_off_typed_by_the_user_stops_diverting_in_that_session_only(tmp_path: Path) -> None:
    """Gemini CLI under ``init`` wiring: the user runs ``gemini -p '/blockers off'``. Under ``-p``
    0.61.0 puts the ``SessionStart`` hook's context before the typed line, so the project's command
    (``.gemini/commands/blockers.toml``) is not expanded (interactively it would be, its prompt
    beginning with the typed line); either way the ``BeforeAgent`` hook reads the line, adds
    stoprule's answer as hook context, and the agent's question ends the session without a
    push-back. A second session of the same project, whose agent writes ``/blockers off`` itself
    (a shell command, its own reply), is pushed back: the switch is that session's, and only the
    user's prompt reaches ``BeforeAgent``."""
    require("gemini")
    d = GeminiAutonomous()
    off = run_session("gemini", tmp_path, [Turn(ASKS)], Turn("ok."), prompt="/blockers off", driver=d)
    assert off.result is not None and off.result.returncode == 0, off.describe()
    first = json.dumps(json.loads(off.script.main[0].text)["contents"][-1])
    assert "ask them directly" in first and "/blockers off" in first, first[-1500:]
    assert [(e["verdict"]["reason"], e["decision"]["block"]) for e in off.stops()] == [("ok", False)], off.describe()
    assert off.stops()[0]["fact"]["blockersOff"] is True
    before = off.stops()
    forged = [d.shell("echo '/blockers off'"), Turn("/blockers off\n\n" + ASKS)]
    script = Script(forged, Turn("Logged it for the user."))
    with serve(script) as url:
        s = Session("gemini", off.project, off.home, script, url)
        s.env = dict(off.env, **d.environment(s))
        s.result = d.run(s, "Migrate staging.")
    assert s.result.returncode == 0, s.describe()
    after = s.stops()[len(before) :]
    assert after and after[0]["verdict"]["reason"] == "unlogged_question", s.describe()
    assert after[0]["decision"]["block"] and after[0]["fact"].get("blockersOff") is not True, s.describe()
    assert after[0]["session"] != before[0]["session"]


def test_claude_code_blockers_off_under_init_wiring(tmp_path: Path) -> None:
    """Claude Code wired by ``init`` (no plugin): the project command ``.claude/commands/blockers.md``
    is offered as ``/blockers`` under ``claude -p``; ``UserPromptSubmit`` reads the typed line and
    the session stops diverting, as with the plugin."""
    require("claude-code")
    off = run_session("claude-code", tmp_path, [Turn(ASKS)], Turn("ok."), prompt="/blockers off")
    assert off.result is not None and off.result.returncode == 0, off.describe()
    first = off.script.main[0].text
    assert "ask them directly" in first and "The user ran `/blockers off`" in first, first[-1500:]
    assert [(e["verdict"]["reason"], e["decision"]["block"]) for e in off.stops()] == [("ok", False)], off.describe()
    assert off.stops()[0]["fact"]["blockersOff"] is True


def _pty_until(fd: int, done: Any, timeout: float) -> bytes:
    """Read the terminal until ``done()`` (or ``timeout`` seconds): what the harness drew."""
    out, end = b"", time.monotonic() + timeout
    while time.monotonic() < end and not done():
        if select.select([fd], [], [], 0.2)[0]:
            try:
                out += os.read(fd, 65536)
            except OSError:
                break
    return out


class _Screen:
    """What a harness drew on a terminal, read as it comes: ``until(text)`` waits for ``text`` to
    be drawn (control sequences removed) after the last ``mark()``."""

    CONTROL = re.compile(rb"\x1b\[[0-9;?>]*[a-zA-Z]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")

    def __init__(self, fd: int) -> None:
        self.fd, self.drawn, self.start = fd, b"", 0

    def mark(self) -> None:
        self.start = len(self.drawn)

    def text(self) -> str:
        return self.CONTROL.sub(b"", self.drawn[self.start :]).decode("utf-8", "replace")

    def until(self, text: str, timeout: float) -> bool:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if text in self.text():
                return True
            self.drawn += _pty_until(self.fd, lambda: False, 0.2)
        return False


def _logged(project: Path, event: str) -> bool:
    log = project / ".stoprule" / "hook.log"
    return log.exists() and f'"event": "{event}"' in log.read_text(encoding="utf-8")


@contextlib.contextmanager
def _terminal(s: Session, args: list[str]) -> Iterator[tuple[_Screen, int]]:
    """``s``'s harness run with ``args`` in a terminal of 40 rows and 120 columns (its model served,
    its user config written): what it draws, and the terminal to type into. At the end the
    terminal's session goes (the harness and the processes it relaunches itself in)."""
    d = DRIVERS[s.harness]
    with serve(s.script) as url:
        s.url = url
        d.configure(s)
        drop = ("STOPRULE_", "ANTHROPIC_", "OPENAI_", "GEMINI_", "GOOGLE_", "CODEX_", "COPILOT_", "CLAUDE_")
        # and the CI markers: Gemini CLI (the is-in-ci package) will not start its interactive
        # screen when CI, CONTINUOUS_INTEGRATION or any CI_* variable is set, as on a CI machine
        ci = ("CI", "CONTINUOUS_INTEGRATION")
        env = {k: v for k, v in os.environ.items() if not k.startswith((*drop, "CI_")) and k not in ci}
        env.update(HOME=str(s.home), PATH=harness_path(), PWD=str(s.project), TERM="xterm-256color")
        env.update(d.environment(s))
        exe = str(binary(s.harness))
        pid, fd = pty.fork()
        if pid == 0:  # the child: the harness in its terminal
            fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
            os.chdir(s.project)
            os.execve(exe, [exe, *args], env)
        try:
            yield _Screen(fd), fd
        finally:
            os.killpg(pid, signal.SIGTERM)
            _pty_until(fd, lambda: False, 1)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(fd)


def _type(fd: int, text: str) -> None:
    for ch in text:
        os.write(fd, ch.encode())
        time.sleep(0.05)


def test_gemini_blockers_off_in_the_interactive_terminal_expands_the_command(tmp_path: Path) -> None:
    """The interactive route (a terminal, the user typing ``/blockers off`` and Enter): Gemini CLI
    0.61.0 expands the project's command there; the request's user message is the session-start
    context, the command's text (beginning with the typed line) and the ``BeforeAgent`` hook's
    answer; the session's switch is off."""
    require("gemini")
    home = tmp_path / "home"
    home.mkdir()
    project = make_project(tmp_path, "gemini")
    s = Session("gemini", project, home, Script([Turn("Noted.")], Turn("ok.")))
    with _terminal(s, ["--yolo", "-m", "gemini-2.5-pro"]) as (screen, fd):
        # the input box is drawn, the typed line offers the project's command, then Enter
        assert screen.until("Type your message", 90), screen.text()[-3000:]
        _pty_until(fd, lambda: _logged(project, "session-start"), 60)
        assert screen.until("MCP server", 30), screen.text()[-3000:]
        screen.mark()
        _type(fd, "/blockers off")
        assert screen.until("blocker triage", 30), screen.text()[-3000:]
        os.write(fd, b"\r")
        _pty_until(fd, lambda: _logged(project, "stop"), 90)
    assert s.script.main, "no request reached the model"
    parts = [p.get("text", "") for p in json.loads(s.script.main[0].text)["contents"][-1]["parts"]]
    typed = [i for i, t in enumerate(parts) if t.startswith("/blockers off\n\n(The user ran stoprule's /blockers")]
    assert typed and "ask them directly" in parts[typed[0] + 1], parts
    switches = list((project / ".stoprule" / "state" / "blockers").glob("*.json"))
    assert [json.loads(p.read_text())["enabled"] for p in switches] == [False]


def _set_config(s: Session, **values: Any) -> None:
    """Set ``.stoprule/config.yaml``'s ``SECTION__KEY`` settings and commit."""
    import yaml

    cfg = s.project / ".stoprule" / "config.yaml"
    config = yaml.safe_load(cfg.read_text(encoding="utf-8"))
    for name, value in values.items():
        section, key = name.split("__")
        config.setdefault(section, {})[key] = value
    cfg.write_text(yaml.safe_dump(config), encoding="utf-8")
    s.git("commit", "-qam", "stoprule settings")


class OpenCodeAutonomous(OpenCode):
    """OpenCode in a project whose stoprule config says nobody answers (``session.mode:
    autonomous``; the plugin's sessions are interactive otherwise); ``package``: stoprule as the
    plugin package, not init's plugin file."""

    def __init__(self, package: bool = False) -> None:
        self.package = package

    def configure(self, s: Session) -> None:
        (OpenCodePackage() if self.package else OpenCode()).configure(s)
        _set_config(s, session__mode="autonomous")


@pytest.mark.parametrize("route", ["init", "package"])
def test_blockers_off_typed_in_opencode_stops_diverting_in_that_session_only(route: str, tmp_path: Path) -> None:
    """OpenCode (init's plugin file, or the plugin package): the user types ``/blockers off`` (the
    command the plugin registers, sent as the TUI sends a command); ``command.execute.before``
    replaces its text with stoprule's answer before the model sees it, and the agent's question
    ends the session without a push-back. A second session of the same project asks the same and
    is pushed back (the switch is that session's)."""
    require("opencode")
    d = OpenCodeAutonomous(package=route == "package")
    off = run_session("opencode", tmp_path, [Turn(ASKS)], Turn("ok."), prompt="/blockers off", driver=d)
    assert off.result is not None and off.result.returncode == 0, off.describe()
    first = off.script.main[0].text
    assert "ask them directly" in first and "did not answer" not in first, first[-1500:]
    assert [(e["verdict"]["reason"], e["decision"]["block"]) for e in off.stops()] == [("ok", False)], off.describe()
    assert off.stops()[0]["fact"]["blockersOff"] is True
    before = off.stops()
    script = Script([Turn(ASKS)], Turn("Logged it for the user."))
    with serve(script) as url:
        s = Session("opencode", off.project, off.home, script, url)
        OpenCode().configure(s)  # the user's config names the new model server; the project is as it was
        s.env = dict(off.env, **d.environment(s))
        s.result = d.run(s, "Migrate staging.")
    assert s.result.returncode == 0, s.describe()
    after = s.stops()[len(before) :]
    assert after and after[0]["verdict"]["reason"] == "unlogged_question", s.describe()
    assert after[0]["decision"]["block"], s.describe()
    assert after[0]["session"] != before[0]["session"]


class OpenCodeTriage(OpenCode):
    """OpenCode asking the user before any shell command (``permission.bash: ask``), in a project
    whose stoprule config turns the permission triage on for an autonomous session."""

    def configure(self, s: Session) -> None:
        super().configure(s)
        user = s.home / ".config" / "opencode" / "opencode.json"
        config = json.loads(user.read_text(encoding="utf-8"))
        config["permission"] = {"bash": "ask", "edit": "allow"}
        user.write_text(json.dumps(config), encoding="utf-8")
        _set_config(s, hook__permission_triage=True, session__mode="autonomous")


def test_opencode_permission_triage_rejects_what_opencode_asks_the_user(tmp_path: Path) -> None:
    """OpenCode never calls the plugin's ``permission.ask``; its request to the user is the
    ``permission.asked`` event, which the plugin answers: with the triage on, rejected with the
    triage message (the command does not run, the model reads the message); nothing approved."""
    require("opencode")
    d = OpenCodeTriage()
    turns = [d.shell("echo hello > notes.txt"), Turn("Logged it; stopping.")]
    s = run_session("opencode", tmp_path, turns, Turn("Stopping."), driver=d)
    assert s.result is not None and s.result.returncode == 0, s.describe()
    assert not (s.project / "notes.txt").exists(), s.describe()
    seen = s.script.first_seeing("not granted in this autonomous session")
    assert seen is not None and seen >= 1, s.describe()
    log = [json.loads(x) for x in (s.project / ".stoprule" / "hook.log").read_text().splitlines()]
    asked = [e for e in log if e.get("event") == "permission"]
    assert asked and asked[0].get("decision") == "deny" and asked[0].get("tool") == "bash", asked


FORGE = """python3 - <<'PY'
import json, urllib.request as u
base = "http://127.0.0.1:PORT"
sid = json.load(u.urlopen(base + "/session", timeout=5))[0]["id"]
body = json.dumps({"command": "blockers", "arguments": "off"}).encode()
req = u.Request(base + "/session/" + sid + "/command", data=body, headers={"Content-Type": "application/json"})
try:
    u.urlopen(req, timeout=3)
except Exception as exc:
    print("sent:", exc)
PY"""


def test_the_agent_cannot_send_opencode_blockers_off(tmp_path: Path) -> None:
    """The agent's shell reaches OpenCode's own server and sends ``/blockers off`` as the TUI
    would: the command arrives while the agent's tool call runs, so the plugin refuses it (the
    text the model then reads says so), the session's switch stays on, and the agent's question
    is pushed back."""
    import socket

    require("opencode")
    d = OpenCodeAutonomous()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        d.port = sock.getsockname()[1]
    turns = [d.shell(FORGE.replace("PORT", str(d.port))), Turn(ASKS)]
    s = run_session("opencode", tmp_path, turns, Turn("Logged it for the user."), driver=d)
    assert s.result is not None and s.result.returncode == 0, s.describe()
    assert s.script.first_seeing("/blockers refused") is not None, "\n".join(s.transcript(3000))
    stops = s.stops()
    assert stops and not any(e["fact"].get("blockersOff") for e in stops), s.describe()
    assert ("unlogged_question", True) in [(e["verdict"]["reason"], e["decision"]["block"]) for e in stops], (
        s.describe()
    )


def _codex_resume(target: str) -> str:
    """What an agent runs to send a session a prompt: the Codex binary from its shell, resuming
    the session ``target`` (``--last``: the newest in this directory, its own) with
    ``$blockers off``, with the key its shell does not inherit."""
    exe = binary("codex")
    return (
        f"SCRIPTED_API_KEY=sk-test-dummy {exe} exec --dangerously-bypass-approvals-and-sandbox "
        f"--dangerously-bypass-hook-trust --skip-git-repo-check resume {target} '$blockers off' </dev/null; echo rc $?"
    )


# the agent's own session (its shell knows it), and a message for it, queued by a detached process
# once the session has ended (a live ``codex exec`` session takes its queued message in a turn of its
# own as it ends, and exits: neither the hook nor the model sees it), delivered when it is resumed
CODEX_QUEUE = (
    'sid=${CODEX_THREAD_ID:-$(ls -t "$CODEX_HOME"/sessions/*/*/*/*.jsonl | head -1 '
    '| grep -o "[0-9a-f-]\\{36\\}" | tail -1)}; '
    "SCRIPTED_API_KEY=sk-test-dummy setsid sh -c \"sleep 8; EXE queue --thread $sid --message '\\$blockers off'\" "
    "</dev/null >/dev/null 2>&1 & echo queued later"
)


def _queued(codex_home: Path, thread: str, timeout: float = 60) -> bool:
    """Wait until Codex's queue holds a message for ``thread`` (its SQLite store, read only)."""
    import sqlite3

    end = time.monotonic() + timeout
    while time.monotonic() < end:
        for db in codex_home.glob("queue_*.sqlite"):
            conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
            with contextlib.closing(conn), contextlib.suppress(sqlite3.Error):
                if conn.execute("select 1 from queued_items where thread_id = ?", (thread,)).fetchone():
                    return True
        time.sleep(0.5)
    return False


class CodexResume(Codex):
    """``codex exec resume SESSION PROMPT``: the user picking a session up again."""

    def __init__(self, session: str) -> None:
        self.session = session

    def command(self, s: Session, prompt: str) -> list[str]:
        first = super().command(s, prompt)
        return [*first[:-1], "resume", self.session, prompt]


def _codex_again(off: Session, script: Script, driver: Driver, prompt: str) -> Session:
    """Codex run again in ``off``'s project and home (its sessions), the user's config naming a
    new model server that answers from ``script``."""
    with serve(script) as url:
        s = Session("codex", off.project, off.home, script, url)
        (s.home / ".codex" / "config.toml").unlink()
        DRIVERS["codex"].configure(s)
        s.env = dict(off.env, **DRIVERS["codex"].environment(s))
        s.result = driver.run(s, prompt)
    return s


def test_codex_blockers_off_under_init_wiring(tmp_path: Path) -> None:
    """Codex wired by ``init``: 0.171.0 has no custom slash commands (its terminal answers
    "Unrecognized command" to ``/blockers``), so ``init`` writes the project skill
    ``.agents/skills/blockers/SKILL.md`` and the user types ``$blockers off``; ``UserPromptSubmit``
    carries the typed line, the hook's ``additionalContext`` reaches the model, and the agent's
    question ends the session without a push-back (``blockersOff``). A second session of the same
    project is pushed back: its agent runs Codex from its shell to send ``$blockers off`` to its
    own session (Codex refuses to resume a session another process is writing) and to the first
    one, now idle (stoprule's hook refuses it: the Codex that sent it runs inside a session; the
    model is told and the attempt written down), and queues it for its own session with ``codex
    queue`` from a detached process: when the user resumes that session, Codex delivers the message
    as a prompt before the user's, and the hook refuses it (the rollout says ``queue`` started the
    turn); the switch stays on and the next stop shows the attempt to the user."""
    require("codex")
    off = run_session("codex", tmp_path, [Turn(ASKS)], Turn("ok."), prompt="$blockers off")
    assert off.result is not None and off.result.returncode == 0, off.describe()
    assert (off.project / ".agents" / "skills" / "blockers" / "SKILL.md").is_file()
    first = off.script.main[0].text
    assert "ask them directly" in first and "$blockers off" in first, first[-1500:]
    assert [(e["verdict"]["reason"], e["decision"]["block"]) for e in off.stops()] == [("ok", False)], off.describe()
    assert off.stops()[0]["fact"]["blockersOff"] is True
    before = off.stops()
    first_session = before[0]["session"]
    d = DRIVERS["codex"]
    queue = CODEX_QUEUE.replace("EXE", str(binary("codex")))
    attack = f"{queue}; {_codex_resume('--last')}; {_codex_resume(first_session)}"
    forged = [Turn(calls=[Call("exec_command", {"cmd": attack, "yield_time_ms": 120000})]), Turn("ok."), Turn(ASKS)]
    script = Script(forged, Turn("Logged it for the user."))
    s = _codex_again(off, script, d, "Migrate staging.")
    assert s.result.returncode == 0, s.describe()
    story = "\n".join(s.transcript(3000))
    assert s.script.first_seeing("/blockers refused") is not None, story
    after = [e for e in s.stops()[len(before) :] if e["session"] != first_session]
    assert after and not any(e["fact"].get("blockersOff") for e in after), story
    assert ("unlogged_question", True) in [(e["verdict"]["reason"], e["decision"]["block"]) for e in after], story
    from stoprule.agent.guard.journal import read_attempts

    attempts = read_attempts(str(off.project / ".stoprule"), first_session)  # the stop shows them
    refused = [a["what"] for a in attempts if a["via"] == "/blockers"]
    assert len(refused) == 1 and "$blockers off" in refused[0] and "inside a codex session" in refused[0], attempts
    # the user resumes the second session: the queued message arrives first, as a prompt
    second = after[0]["session"]
    assert _queued(off.home / ".codex", second), "the agent's message was not queued"
    script = Script([Turn(ASKS)], Turn("Logged it for the user."))
    resume = CodexResume(second)
    r = _codex_again(off, script, resume, "Go on with the migration.")
    assert r.result.returncode == 0, r.describe()
    story = "\n".join(r.transcript(3000))
    assert script.first_seeing("/blockers refused") is not None and script.first_seeing("`queue`") is not None, story
    later = [e for e in r.stops() if e["session"] == second][len([e for e in after if e["session"] == second]) :]
    assert later and not any(e["fact"].get("blockersOff") for e in later), story
    # the pack shows the refused attempt to the user at the next stop (user review)
    assert later[0]["verdict"]["reason"] == "tamper_attempts" and "`queue`" in later[0]["decision"]["notice"], story
    queued = [a["what"] for a in read_attempts(str(off.project / ".stoprule"), second) if a["via"] == "/blockers"]
    assert any("`queue`" in w for w in queued), queued


def test_codex_blockers_off_in_the_interactive_terminal_mentions_the_skill(tmp_path: Path) -> None:
    """The interactive route (a terminal, the user typing ``$blockers off`` and Enter): Codex
    0.171.0 offers the project's skill in its ``$`` mention menu; ``UserPromptSubmit`` gets the
    line as typed, and the request to the model holds that line, stoprule's answer (a developer
    message: ask the user directly) and the skill's text; the session's switch is off."""
    require("codex")
    home = tmp_path / "home"
    home.mkdir()
    project = make_project(tmp_path, "codex")
    s = Session("codex", project, home, Script([Turn("Noted.")], Turn("ok.")))
    args = ["--dangerously-bypass-hook-trust", "--dangerously-bypass-approvals-and-sandbox"]
    with _terminal(s, args) as (screen, fd):
        # the input box is drawn, `$blockers` offers the project's skill, then the action and Enter
        assert screen.until("Ask Codex", 90), screen.text()[-3000:]
        screen.mark()
        _type(fd, "$blockers")
        assert screen.until("blocker triage", 30), screen.text()[-3000:]
        _type(fd, " off")
        time.sleep(0.5)
        os.write(fd, b"\r")
        _pty_until(fd, lambda: _logged(project, "stop"), 90)
    assert s.script.main, "no request reached the model: " + screen.text()[-3000:]
    items = s.script.main[0].body["input"]
    texts = [(m.get("role"), "".join(c.get("text", "") for c in m.get("content") or [])) for m in items]
    typed = [i for i, (role, t) in enumerate(texts) if role == "user" and t == "$blockers off"]
    assert typed, texts[-4:]
    role, answer = texts[typed[0] + 1]
    assert role == "developer" and "ask them directly" in answer, texts[-4:]
    assert any(t.startswith("<skill>") and "stoprule's blocker triage" in t for _, t in texts[typed[0] :]), texts[-4:]
    switches = list((project / ".stoprule" / "state" / "blockers").glob("*.json"))
    assert [json.loads(p.read_text())["enabled"] for p in switches] == [False]
