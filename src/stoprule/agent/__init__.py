"""The agent surface: stoprule inside a harness's session (stop hooks, blockers, MCP).

Packages::

    guard/           the guard: the agent's tool calls that would switch the gate off, refused before they run
    blockers/        the blockers record, blocked reports, their facts, the shared operations, MCP
    hook/            the stop hook: events, adapters, providers, transcripts, runner, lifecycle, replay

Its settings and the table of fact field names it writes are in :mod:`stoprule.config`.
Nothing here imports the CLI or the ledger: ``stoprule hook`` (``cli/hook_cmd.py``) passes
a recording function in. See ``docs/agents.md`` and ``docs/blockers.md``.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""
