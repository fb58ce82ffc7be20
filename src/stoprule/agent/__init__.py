"""The agent surface: stoprule inside a harness's session (stop hooks, blockers, MCP).

Packages and modules, lowest first (each imports only those above it, and the engine below)::

    fields           the one table of fact field names the agent surface writes
    config           .stoprule/config.yaml: its sections (hook_config, blocker_config, ledger_config,
                     server_config) and loader; defaults, settings (the hook's, cached), session
    redact           secrets become [REDACTED] before anything is written
    blockers/        the blockers record, blocked reports, their facts, the shared operations, MCP
    hook/            the stop hook: events, adapters, providers, transcripts, runner, lifecycle, replay

Nothing here imports the CLI or the ledger: ``stoprule hook`` (``cli/hook_cmd.py``) passes
a recording function in. See ``docs/agents.md`` and ``docs/blockers.md``.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""
