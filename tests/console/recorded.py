"""A project whose ledger was recorded by real hook runs: ``stoprule hook HARNESS`` in process
(tests/clirunner.py) on scripted payloads and transcripts, facts declared with ``stoprule facts
set``, blockers logged with ``stoprule blocker add``, a blocked report filed through the blocker
service (what the MCP ``blocked_report`` tool calls). The console's tests read it.

Session ``cc-console-1`` (claude-code): open todos keep the agent working (a step); near its
turn limit without a blocked report it is blocked (escape hatch, retryable); it files the report
and stops again (the block's retry); a hard blocker it logged then stops it for the user
(terminal). Session ``cx-console-2`` (codex): a stop with nothing left (a step). The blocker
question and the report carry HTML and script, as an agent may write them.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from clirunner import invoke
from stoprule.ledger import Ledger

SESSION = "cc-console-1"
OTHER = "cx-console-2"
XSS = '<img src=x onerror="document.title=\'pwned\'"><script>document.title="pwned"</script>'
QUESTION = f"Which database should the cache use? {XSS}"
SOFT_QUESTION = "Name the cache module: cache.py or store.py?"
REPORT = {
    "blocking_issues": [{"issue": f"No database credentials {XSS}", "category": "external_dependency",
                         "details": "The cache needs a database the sandbox cannot reach", "location": "cache.py:12"}],
    "attempts_made": [{"turn": 7, "action": "Used an in-memory fake", "result": "Failed",
                       "why_failed": "The integration test needs the real driver"},
                      {"turn": 8, "action": "Wrote the adapter layer", "result": "Success"}],
    "suggested_alternatives": ["Provide test credentials", "Split the cache into its own task"],
    "human_action_required": "Give the sandbox a database URL in .env.test, or approve splitting the task.",
}  # fmt: skip


def _todos(done: bool) -> list[dict[str, str]]:
    status = "completed" if done else "pending"
    return [
        {"content": "Write the cache", "status": "completed", "activeForm": "Writing the cache"},
        {"content": "Write the cache tests", "status": status, "activeForm": "Writing the cache tests"},
    ]


def _transcript(path: Path, session: str, done: bool, text: str) -> None:
    lines = [
        {"type": "user", "sessionId": session, "uuid": "u1", "parentUuid": None,
         "message": {"role": "user", "content": "Add a cache in front of the database"}},
        {"type": "assistant", "sessionId": session, "uuid": "u2", "parentUuid": "u1",
         "message": {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "TodoWrite",
                                                      "input": {"todos": _todos(done)}}]}},
        {"type": "user", "sessionId": session, "uuid": "u3", "parentUuid": "u2",
         "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]}},
        {"type": "assistant", "sessionId": session, "uuid": "u4", "parentUuid": "u3",
         "message": {"role": "assistant", "content": [{"type": "text", "text": text}]}},
    ]  # fmt: skip
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")


class Project:
    """A project under ``root`` with the ledger on, and the CLI run in it with ``env``."""

    def __init__(self, root: Path, env: dict[str, str]) -> None:
        self.root, self.env = root, env
        (root / ".stoprule").mkdir(parents=True, exist_ok=True)
        (root / ".stoprule" / "config.yaml").write_text(
            # the turn comes from the declared facts (the transcript's count of turns is not mapped: an
            # observation would win over the declaration)
            "hook:\n  ledger: true\nproviders:\n  enabled: [hook, state, blockers, transcript, closure]\n"
            "  fields:\n    transcript.turns: null\n",
            encoding="utf-8",
        )

    def cli(self, *argv: str, input: str | None = None) -> subprocess.CompletedProcess:
        return invoke(list(argv), input=input, env=self.env, cwd=self.root)

    def stop(self, harness: str, session: str, transcript: Path, message: str) -> dict[str, Any]:
        """One stop: the harness's payload to ``stoprule hook HARNESS``; its answer."""
        payload = {"session_id": session, "transcript_path": str(transcript), "cwd": str(self.root),
                   "hook_event_name": "Stop", "stop_hook_active": False, "last_assistant_message": message}  # fmt: skip
        if harness == "codex":
            payload.update(turn_id="turn-1", model="gpt-5")
        p = self.cli("hook", harness, input=json.dumps(payload))
        assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
        return json.loads(p.stdout) if p.stdout.strip() else {}

    def facts(self, session: str, *fields: str) -> None:
        p = self.cli("facts", "set", "--session", session, *fields)
        assert p.returncode == 0, p.stderr

    def file_report(self, session: str, task: str, report: dict[str, Any]) -> None:
        from clirunner import process_env
        from stoprule.agent.blockers.service import open_service

        with process_env(self.env, self.root):
            reply = open_service(str(self.root)).file_report(session, {"task_id": task, **report})
        assert reply.ok, reply.text

    def ledger(self) -> Path:
        """The ledger file, with the stops the hook journaled beside it folded in (as the next
        command that opens it folds them: stoprule.ledger.folding), for a test that reads it raw."""
        path = self.root / ".stoprule" / "ledger.db"
        Ledger.open(str(path)).close()
        return path


def record(root: Path, env: dict[str, str], progress: Callable[[str], None] = lambda s: None) -> Project:
    """Record the sessions described in the module docstring; returns the project."""
    pr = Project(root, env)
    t1 = root / "cc-transcript.jsonl"
    _transcript(t1, SESSION, False, "The cache is written.")
    out = pr.stop("claude-code", SESSION, t1, "The cache is written.")  # n1: open todo -> keep working (a step)
    assert out.get("decision") == "block", out
    pr.facts(SESSION, "turn=8", "max_turns=10", "status=partial", "task_id=CACHE-1")
    _transcript(t1, SESSION, True, "Tests written; the integration test cannot run here.")
    out = pr.stop("claude-code", SESSION, t1, "Tests written.")  # n2: escape hatch, no report: blocked (retryable)
    assert out.get("decision") == "block", out
    pr.file_report(SESSION, "CACHE-1", REPORT)
    out = pr.stop("claude-code", SESSION, t1, "Filed the blocked report.")  # n3: the retry of n2
    p = pr.cli(
        "blocker",
        "add",
        "--session",
        SESSION,
        "--category",
        "question",
        "--question",
        QUESTION,
        "--context",
        "Choosing the cache backend <b>now</b>",
        "--blocks-progress",
    )
    assert p.returncode == 0, p.stderr
    p = pr.cli(
        "blocker",
        "add",
        "--session",
        SESSION,
        "--category",
        "naming",
        "--question",
        SOFT_QUESTION,
        "--no-blocks-progress",
        "--option",
        "cache.py",
        "--option",
        "store.py",
        "--chosen-option",
        "cache.py",
        "--chosen-reasoning",
        "Matches the module it wraps",
    )
    assert p.returncode == 0, p.stderr
    pr.facts(SESSION, "status=implemented")
    out = pr.stop("claude-code", SESSION, t1, "Waiting for the database decision.")  # n4: open blocker: terminal
    t2 = root / "cx-transcript.jsonl"
    t2.write_text("", encoding="utf-8")
    pr.stop("codex", OTHER, t2, "All done.")
    return pr
