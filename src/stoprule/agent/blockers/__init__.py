"""Blockers and blocked reports: what the agent logs instead of stopping, and what the stop sees.

Modules, lowest first::

    store            the blockers record (append-only JSONL), blockers.md, dedupe, limit, rotation
    reports          blocked reports judged by the pack, saved per task, rendered
    session          the facts the blocker tools declare for a session (in the hook's state)
    facts            what the stop check sees of blockers and reports (the ``blockers`` provider)
    service          the blocker operations the MCP server and the CLI share
    procs            which session an MCP server serves (the harness process links it)
    mcp              ``stoprule mcp`` (imports the ``mcp`` SDK; only on that path)
"""
