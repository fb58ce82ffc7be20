"""Record real transcripts and stop payloads into tests/fixtures/hooks/<harness>/recorded/.

    python tests/harness/record_fixtures.py [HARNESS ...]

Runs each installed harness (pinned in harnesses.py) headless against the scripted model:
a todo list, a command that fails, text, a stop that stoprule blocks (uncommitted work),
a commit, a stop that is allowed. The hook command is wrapped so each stop payload is
kept (``payloads.jsonl``); the transcript the harness wrote is copied as it is, with the
temporary paths replaced by ``/tmp/project`` and ``/tmp/home``. Not a test: the fixtures
it writes are committed and read by the transcript and adapter tests.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from harnesses import DRIVERS, PINNED, Session, harness_path, make_project  # noqa: E402
from model_servers import Call, Script, Turn, serve  # noqa: E402

FIXTURES = HERE.parent / "fixtures" / "hooks"
STOP_EVENTS = ("Stop", "SubagentStop", "AfterAgent", "agentStop", "subagentStop", "stop")


def todo_turn(harness: str, done: bool = False) -> Turn:
    first, second = ("completed", "completed") if done else ("in_progress", "pending")
    if harness == "claude-code":
        return Turn(calls=[Call("TodoWrite", {"todos": [
            {"content": "Write notes", "status": first, "activeForm": "Writing notes"},
            {"content": "Commit notes", "status": second, "activeForm": "Committing notes"}]})])  # fmt: skip
    if harness == "copilot":  # no todo tool in prompt mode
        return DRIVERS[harness].shell("true")
    if harness == "codex":
        return Turn(
            calls=[
                Call(
                    "update_plan",
                    {"plan": [{"step": "Write notes", "status": first}, {"step": "Commit notes", "status": second}]},
                )
            ]
        )
    return Turn(calls=[Call("write_todos", {"todos": [
        {"description": "Write notes", "status": first},
        {"description": "Commit notes", "status": second}]})])  # fmt: skip


def transcript_of(harness: str, home: Path) -> Path | None:
    pattern = {
        "claude-code": ".claude/projects/*/*.jsonl",
        "codex": ".codex/sessions/*/*/*/rollout-*.jsonl",
        "gemini": ".gemini/tmp/*/chats/session-*.jsonl",
        "copilot": ".copilot/session-state/*/events.jsonl",
    }[harness]
    found = sorted(home.glob(pattern))
    return found[-1] if found else None


def wrap_hook(project: Path, harness: str, log: Path) -> None:
    """Keep every stop payload: ``tee`` stdin to ``log`` before stoprule reads it."""
    for rel in (".claude/settings.json", ".codex/hooks.json", ".gemini/settings.json", ".github/hooks/stoprule.json"):
        path = project / rel
        if not path.exists():
            continue
        text = path.read_text(encoding="utf-8")
        config = json.loads(text)
        for event, groups in config.get("hooks", {}).items():
            if event not in STOP_EVENTS:  # the session-start and guard hooks: not recorded
                continue
            for group in groups:
                for h in group.get("hooks", [group]):
                    for key in ("command", "bash"):
                        if "stoprule" in h.get(key, ""):
                            h[key] = f"{{ cat; echo; }} | tee -a {shlex.quote(str(log))} | {h[key]}"
        path.write_text(json.dumps(config, indent=2), encoding="utf-8")


def record(harness: str) -> None:
    d = DRIVERS[harness]
    root = Path(tempfile.mkdtemp(prefix="stoprule-record-"))
    home = root / "home"
    home.mkdir()
    project = make_project(root, harness)
    log = root / "payloads.jsonl"
    wrap_hook(project, harness, log)
    subprocess.run(["git", "commit", "-qam", "record payloads", "--allow-empty"], cwd=project, check=True)
    turns = [
        todo_turn(harness),
        d.shell("echo hello > notes.txt"),
        d.shell("ls /nonexistent-dir-for-the-fixture"),
        Turn("Wrote notes.txt; the listing failed.\n\nstoprule: closure=waiting_user"),
        d.shell("git add notes.txt && git commit -qm 'add notes'"),
        todo_turn(harness, done=True),
        Turn("Committed notes.txt."),
    ]
    s = Session(harness, project, home, Script(turns))
    with serve(s.script) as url:
        s.url = url
        d.configure(s)
        env = {
            k: v for k, v in os.environ.items() if not k.startswith(("STOPRULE_", "ANTHROPIC_", "CODEX_", "COPILOT_"))
        }
        env.update(HOME=str(home), PATH=harness_path(), NO_COLOR="1", PWD=str(project), **d.environment(s))
        s.env = env
        s.result = subprocess.run(
            d.command(s, "Write notes.txt and commit it."),
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
            stdin=subprocess.DEVNULL,
        )
    out = FIXTURES / harness / "recorded"
    out.mkdir(parents=True, exist_ok=True)
    transcript = transcript_of(harness, home)
    if transcript is None:
        print(f"{harness}: no transcript found\n{s.describe()}")
        return

    def scrub(text: str) -> str:
        return text.replace(str(project), "/tmp/project").replace(str(home), "/tmp/home").replace(str(root), "/tmp")

    (out / "transcript.jsonl").write_text(scrub(transcript.read_text(encoding="utf-8")), encoding="utf-8")
    payloads = [line for line in log.read_text(encoding="utf-8").splitlines() if line.strip()] if log.exists() else []
    (out / "payloads.jsonl").write_text(scrub("\n".join(payloads) + "\n"), encoding="utf-8")
    package, version, _ = PINNED[harness]
    (out / "SOURCE.md").write_text(
        f"Recorded from the real {package} {version} by tests/harness/record_fixtures.py: a headless\n"
        "session against the scripted model (todo list, `echo hello > notes.txt`, a failing `ls`, text\n"
        "with a closure trailer, stop blocked for uncommitted work, commit, stop allowed).\n"
        "`transcript.jsonl` is the file the harness wrote; `payloads.jsonl` holds the stop payloads\n"
        "the hook received. Temporary paths are replaced by /tmp/project and /tmp/home.\n",
        encoding="utf-8",
    )
    print(
        f"{harness}: {len(payloads)} payloads, transcript {transcript.name}; "
        f"stops {[(e['decision']['block'], e.get('verdict', {}).get('reason')) for e in s.stops()]}"
    )


if __name__ == "__main__":
    for name in sys.argv[1:] or list(DRIVERS):
        record(name)
