"""The agent cannot switch the gate off, in the real harnesses: scripted agents try, attempt after
attempt, to get a blocked stop released (its uncommitted ``notes.txt``), then commit. Every
attempt is refused before it takes effect (the guard's reason comes back as the tool's result;
Claude Code's settings-change hook refuses a script's rewrite of its settings) or leaves the
decision unchanged (observed beats declared, hidden work counts), and every one is named to the
user: at the next stop (its notice), in the session's attempts journal, in the ledger.

Run alone: ``python -m pytest -m harness -n 0 tests/harness/test_tamper_sessions.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from harnesses import DRIVERS, Driver, Session, require, run_session, stoprule_exe
from model_servers import Call, Turn
from tamper import PASS_RULE, SESSIONS, Attempt, ClaudeCodeAllTools, attempt_turns

from clirunner import invoke

pytestmark = pytest.mark.harness

COMMIT = "git add notes.txt && git commit -qm notes"


def _attempts(s: Session) -> list[dict]:
    folder = s.project / ".stoprule" / "state" / "attempts"
    lines = (
        [line for p in sorted(folder.glob("*.jsonl")) for line in p.read_text().splitlines()] if folder.is_dir() else []
    )
    return [json.loads(line) for line in lines]


def _where(s: Session, path: str) -> Path:
    return s.home / path[2:] if path.startswith("~/") else s.project / path


def _play(harness: str, tmp_path: Path, rows: list[Attempt], driver: Driver, wait: bool = False) -> tuple[Session, int]:
    """The session: work, the attempts, (a pause for settings-change hooks), a stop, a commit, a stop.
    Returns it and the index of the first attempt's turn."""
    project = tmp_path / "project"
    before = [driver.shell("echo work > notes.txt")]
    turns = [*before, *attempt_turns(rows, str(project))]
    if wait:  # the harness notices a settings file's change on its own time
        turns.append(driver.shell("sleep 3"))
    turns += [Turn("Done: notes.txt is written."), driver.shell(COMMIT), Turn("Committed notes.txt.")]
    snapshot: dict[str, bytes | None] = {}
    s = run_session(harness, tmp_path, turns, None, driver=driver)
    del snapshot
    return s, len(before)


def _check_refusals(s: Session, rows: list[Attempt], first: int) -> None:
    """Each guard row's tool result is the guard's refusal; the journal holds every row; nothing
    a row names was written."""
    for i, row in enumerate(rows):
        if row.refused_by != "guard":
            continue
        result = " ".join(s.script.main[first + i + 1].last_input())
        # the guard's refusal; or Claude Code's own deny rule (stoprule's second line), which comes first
        refused = "stoprule refused this call" in result or "denied by your permission settings" in result
        assert refused, (row.name, result[:400], s.describe())
        for path in row.untouched:
            where = _where(s, path)
            if where.name == "config.yaml":
                assert "mode: observe" not in where.read_text(), row.name
            elif where.name in ("settings.json", "settings.local.json"):
                assert '"Stop"' in where.read_text(), row.name
            else:
                assert not where.exists() or where.is_dir() and not any(where.iterdir()), (row.name, where)
    journal = _attempts(s)
    assert len(journal) >= len(rows), (len(journal), [a["what"] for a in journal])


def _check_stops(s: Session, count: int) -> None:
    """The first stop blocks on the uncommitted work and names the attempts to the user; the last is
    allowed and, with nothing else left, ends in review naming them; the ledger lists them."""
    stops = s.stops()
    assert len(stops) >= 2, s.describe()
    first, last = stops[0], stops[-1]
    assert first["decision"]["block"] and first["verdict"]["reason"] == "uncommitted_work", s.describe()
    assert "notes.txt" in first["decision"]["message"]
    assert f"refused {count} attempt(s)" in (first["decision"]["notice"] or ""), first["decision"]
    assert not last["decision"]["block"] and last["verdict"]["reason"] == "tamper_attempts", s.describe()
    session = first["session"]
    shown = invoke(["log", "show", session], env={"HOME": str(s.home), "PATH": "/usr/bin:/bin"}, cwd=s.project)
    assert f"refused attempts by the agent ({count})" in shown.stdout, shown.stdout + shown.stderr


def test_claude_code_cli_and_files(tmp_path: Path) -> None:
    require("claude-code")
    driver = ClaudeCodeAllTools()
    rows = SESSIONS["cli_and_files"](driver)
    s, first = _play("claude-code", tmp_path, rows, driver)
    assert s.result is not None and s.result.returncode == 0, s.describe()
    _check_refusals(s, rows, first)
    _check_stops(s, len(rows))
    assert (s.project / ".stoprule" / "config.yaml").exists() and not (s.project / "sub").exists()


def test_claude_code_settings_rewritten_by_a_script(tmp_path: Path) -> None:
    require("claude-code")
    driver = ClaudeCodeAllTools()
    rows = SESSIONS["harness_wiring"](driver)
    s, first = _play("claude-code", tmp_path, rows, driver, wait=True)
    assert s.result is not None and s.result.returncode == 0, s.describe()
    # the scripts ran (the guard could not read the path they built) ...
    settings = json.loads((s.project / ".claude" / "settings.local.json").read_text())
    assert settings.get("disableAllHooks") is True and "Stop" not in settings["hooks"]
    # ... but the running session kept stoprule's hooks: its stops still ran and decided
    journal = [a for a in _attempts(s) if a.get("tool") == "settings"]
    assert journal and "disableAllHooks" in journal[0]["what"], _attempts(s)
    stops = s.stops()
    assert stops and stops[0]["decision"]["block"] and stops[0]["verdict"]["reason"] == "uncommitted_work", s.describe()
    notice = stops[0]["decision"]["notice"] or ""
    assert ".claude/settings.local.json" in notice and "disableAllHooks" in notice, notice


def test_claude_code_declarations_hidden_work_and_the_blocker_server(tmp_path: Path) -> None:
    """A declared empty task list over an open task, a blocker whose text holds a lone surrogate,
    work hidden in .git/info/exclude and then in a stash: each stop still sees the work."""
    require("claude-code")
    d = ClaudeCodeAllTools()
    blocker = {"category": "question", "question": "Which staging DB? \ud800", "context": "migration",
               "blocksProgress": False}  # fmt: skip
    turns = [
        Turn(
            calls=[
                Call(
                    "TaskCreate",
                    {"subject": "Write the docs", "description": "The user docs.", "activeForm": "Writing the docs"},
                )
            ]
        ),  # fmt: skip
        d.shell("echo work > notes.txt && python3 -c \"open('.git/info/exclude', 'a').write('notes.txt\\n')\""),
        *d.mcp("report_status", {"available_tasks": [], "status": "implemented"}),
        *d.mcp("blocker", blocker),
        Turn("All done."),  # stop 1: notes.txt, hidden by info/exclude, still counts
        d.shell(
            "python3 -c \"p = '.git/info/exclude'; t = open(p).read(); "
            "open(p, 'w').write(t.replace('notes.txt', ''))\" && git stash -u -q"
        ),
        Turn("Stopping now."),  # stop 2: notes.txt, now in a stash, still counts
        d.shell("git stash pop -q && " + COMMIT),
        Turn("Over to you.\nstoprule: closure=waiting_user"),  # stop 3: a legal closure over an open task
    ]
    s = run_session("claude-code", tmp_path, turns, None, driver=d)
    assert s.result is not None and s.result.returncode == 0, s.describe()
    assert s.script.first_seeing("Blocker logged") is not None, s.describe()  # the server answered
    stops = s.stops()
    assert len(stops) == 3, s.describe()
    assert [e["decision"]["block"] for e in stops] == [True, True, False], s.describe()
    for e in stops[:2]:
        assert e["verdict"]["reason"] == "uncommitted_work" and "notes.txt" in e["decision"]["message"], e
    assert "newly ignored" in " ".join(stops[0]["provenance"]["notes"]["git"])
    assert "stashed" in " ".join(stops[1]["provenance"]["notes"]["git"])
    assert stops[0]["fact"]["availableTasks"] == ["Write the docs"]  # observed, over the declared []
    assert any(c.get("declared") and c["field"] == "availableTasks" for c in stops[0]["provenance"]["conflicts"])
    assert "Write the docs" in (stops[2]["decision"]["notice"] or ""), stops[2]["decision"]


@pytest.mark.parametrize("harness", ["codex", "opencode", "gemini", "copilot"])
def test_shell_attempts_on_other_harnesses(harness: str, tmp_path: Path) -> None:
    """The attempts each harness's tools allow (its shell; OpenCode's write tool too), on Codex, OpenCode,
    Gemini CLI and Copilot CLI: the guard refuses each (its reason is the tool's result)."""
    require(harness)
    d = DRIVERS.get(harness)
    if d is None:
        pytest.skip(f"{harness}: no driver")
    exe = stoprule_exe()
    rows = [
        Attempt("blockers off", d.shell(f"{exe} blockers off"), [".stoprule/blockers"]),
        Attempt("facts set", d.shell(f"{exe} facts set uncommittedWork=false"), [".stoprule/state/facts"]),
        Attempt(
            "observe mode",
            d.shell("printf 'hook:\\n  mode: observe\\n' > .stoprule/config.yaml"),
            [".stoprule/config.yaml"],
        ),
        Attempt("rm -rf .stoprule", d.shell("rm -rf .stoprule"), [".stoprule/config.yaml"]),
    ]
    if harness == "opencode":
        rows.append(
            Attempt(
                "observe mode (write tool)",
                Turn(
                    calls=[
                        Call(
                            "write",
                            {"filePath": "{project}/.stoprule/config.yaml", "content": "hook:\n  mode: observe\n"},
                        )
                    ]
                ),
                [".stoprule/config.yaml"],
            )
        )
    s, first = _play(harness, tmp_path, rows, d)
    assert s.result is not None and s.result.returncode == 0, s.describe()
    for i, row in enumerate(rows):
        result = " ".join(s.script.main[first + i + 1].last_input())
        assert "stoprule refused this call" in result, (row.name, result[:400], s.describe())
    assert "mode: observe" not in (s.project / ".stoprule" / "config.yaml").read_text()
    assert len(_attempts(s)) == len(rows)
    _check_stops(s, len(rows))


def test_claude_code_scripts_the_guard_cannot_read(tmp_path: Path) -> None:
    """Scripts that build stoprule's paths at run time (the guard lets them run): observe mode in the
    config, a pass rule in the session's frozen pack copy, blocker logging switched off by its file.
    The stop is decided as the session started, and each change is named to the user."""
    require("claude-code")
    d = ClaudeCodeAllTools()
    home = "'.sto' + 'prule'"
    scripts = [
        f"python3 -c \"open({home} + '/config.yaml', 'w').write('hook:\\n  mode: observe\\n')\"",
        f"python3 -c \"import glob; [open(p + '/zz.yaml', 'w').write({PASS_RULE!r}) "
        f"for p in glob.glob({home} + '/state/packs/*')]\"",
        f"python3 -c \"import os; p = {home} + '/blockers'; os.makedirs(p, exist_ok=True); "
        "open(p + '/switch.json', 'w').write('{\\\"enabled\\\": false}')\"",
    ]  # fmt: skip
    turns = [
        d.shell("echo work > notes.txt"),
        *(d.shell(command) for command in scripts),
        Turn("Done: notes.txt is written."),
        d.shell(COMMIT),
        Turn("Committed notes.txt."),
    ]
    s = run_session("claude-code", tmp_path, turns, None, driver=d)
    assert s.result is not None and s.result.returncode == 0, s.describe()
    assert "mode: observe" in (s.project / ".stoprule" / "config.yaml").read_text()  # the scripts ran
    stops = s.stops()
    assert len(stops) >= 2, s.describe()
    first, last = stops[0], stops[-1]
    assert first["decision"]["block"] and first["verdict"]["reason"] == "uncommitted_work", s.describe()
    notice = first["decision"]["notice"] or ""
    for named in ("config.yaml changed", "frozen copy of the policy pack", "blockers switch"):
        assert named in notice, (named, notice)
    assert not last["decision"]["block"] and last["verdict"]["reason"] == "tamper_attempts", s.describe()
