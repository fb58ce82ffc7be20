"""A command that changes what a stop decides, run inside an agent's session: refused, and the
attempt written where the next stop shows it to the user (:mod:`stoprule.agent.guard`)."""

from __future__ import annotations

from stoprule.agent.guard.commands import HARNESS_RUNS, MUTATING, USER_WAY, mutating
from stoprule.agent.guard.journal import record_attempt
from stoprule.agent.guard.session import inside_session
from stoprule.diagnostics import CommandError

__all__ = ["refuse_in_session"]


def refuse_in_session(argv: list[str]) -> None:
    """A command that changes what a stop decides, run inside an agent's session (its process
    ancestry says so): refused (a CommandError saying how the user does it) and written to the
    session's attempts."""
    what = mutating(argv) if argv[0] in MUTATING else None
    if what is None or what.split()[0] in HARNESS_RUNS:
        return
    found = inside_session()
    if found is None:
        return
    home, link = found
    record_attempt(
        home,
        link.get("session"),
        {
            "via": "cli",
            "harness": link.get("harness"),
            "kind": "command",
            "what": f"ran `stoprule {what}` inside the session",
        },
    )
    raise CommandError(
        f"`stoprule {what}` refused: it runs inside an agent's session ({link.get('harness')} session "
        f"{link.get('session')}), and only the user changes what a stop decides. To do it, {USER_WAY}. "
        "This attempt is shown to the user at the next stop."
    )
