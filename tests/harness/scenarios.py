"""The scenarios of the real-harness tier: each a list of model turns (and the turn played
once they run out), written once for every harness through its driver's tool calls."""

from __future__ import annotations

from harnesses import Driver
from model_servers import Turn

__all__ = ["AWS_KEY", "QUESTION", "SCENARIOS", "SECRET", "blocker", "commit", "never_complies", "report_status"]

SECRET = "hunter2-s3cret"
AWS_KEY = "AKIAIOSFODNN7EXAMPLE"
QUESTION = "Which staging database should the migration use?"


def commit(d: Driver) -> tuple[list[Turn], Turn | None]:
    """Uncommitted work: blocked once, the agent commits, the stop is allowed."""
    return [
        d.shell("echo hello > notes.txt"),
        Turn("Done: notes.txt is written."),
        d.shell("git add notes.txt && git commit -qm 'add notes'"),
        Turn("Committed notes.txt."),
    ], None


def never_complies(d: Driver) -> tuple[list[Turn], Turn | None]:
    """The agent answers the block with words only, every time."""
    return [d.shell("echo hello > notes.txt")], Turn("Done: notes.txt is written.")


def blocker(d: Driver) -> tuple[list[Turn], Turn | None]:
    """A hard blocker logged over MCP, with secrets in its context."""
    args = {"category": "permission", "question": QUESTION,
            "context": f"config has password={SECRET} and key {AWS_KEY}", "blocksProgress": True}  # fmt: skip
    return [*d.mcp("blocker", args), Turn("Logged the blocker for the user.")], None


def report_status(d: Driver) -> tuple[list[Turn], Turn | None]:
    """A declared status decides the next stop: partial (keep going), then implemented."""
    return [
        *d.mcp("report_status", {"status": "partial"}),
        Turn("Stopping here for now."),
        *d.mcp("report_status", {"status": "implemented"}),
        Turn("All done."),
    ], None


SCENARIOS = {"commit": commit, "never_complies": never_complies, "blocker": blocker, "report_status": report_status}
