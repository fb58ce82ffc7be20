"""stoprule's own commands that change what a stop decides: the one table the guard (an agent's
shell command) and the CLI (a command run inside an agent session) both read. No imports.
"""

from __future__ import annotations

__all__ = ["HARNESS_RUNS", "MUTATING", "USER_WAY", "mutating"]

# command -> its mutating subcommands (None: the command as a whole)
MUTATING: dict[str, frozenset[str] | None] = {
    "facts": frozenset({"set", "clear"}),
    "blockers": frozenset({"on", "off", "resolve"}),
    "pack": frozenset({"init"}),
    "init": None,
    "keys": frozenset({"rotate", "retire"}),
    "log": frozenset({"import", "upgrade"}),
    "guard": frozenset({"on", "off"}),  # the user's switch
    "hook": None,  # a stop, session start or permission answer made up by the agent
    "mcp": None,  # a blocker server of the agent's own, under a session it names
}
# what the harness itself runs (its hooks, its MCP server): the CLI cannot tell the harness's run
# from the agent's, so only the guard refuses these (from the agent's shell)
HARNESS_RUNS = frozenset({"hook", "mcp"})

# what the user does instead (the CLI's refusal says it)
USER_WAY = "run it yourself in a terminal outside the agent's session (a shell the agent did not start)"


def mutating(words: list[str]) -> str | None:
    """``"facts set"``-style name of the mutating command ``words`` (stoprule's arguments, without
    the program) run, or None when it changes nothing."""
    plain = [w for w in words if not w.startswith("-")]
    if not plain:
        return None
    command = plain[0]
    if command not in MUTATING:
        return None
    subs = MUTATING[command]
    if subs is None:
        return command
    # the subcommand, wherever options put it (an option's value is a word too: ``--session ID``)
    sub = next((w for w in plain[1:] if w in subs), None)
    return f"{command} {sub}" if sub is not None else None
