"""The agent surface: stoprule inside a harness's session (stop hooks, blockers, MCP).

Layers, lowest first (each imports only those above it, and the engine below)::

    event            HookEvent (what any harness's stop payload says) and Decision (what to answer)
    adapters/        one module per harness: parse(payload) -> HookEvent, render(decision) -> dict | None
    fields           the one table of fact field names the agent surface writes
    config           .stoprule/config.yaml: its sections (hook_config, blocker_config) and loader
    settings         the hook's settings without pydantic, cached per file content
    redact           secrets become [REDACTED] before anything is written
    state, session   .stoprule/state/: declared facts, the hook's counters
    blocker_store    the blockers record, blockers.md, dedupe, limit, rotation
    reports          blocked reports judged by the pack, saved per task, rendered
    blocker_facts    what the stop check sees of blockers and reports
    blocker_service  the blocker operations the MCP server and the CLI share
    transcripts      reading Claude Code / Codex / Gemini transcripts from the end, incrementally
    providers/       hook, state, blockers, closure, transcript, git: partial facts with provenance
    runner           one stop: settings, providers, evaluate, loop guard, fail/observe policy, log
    replay, wiring   a recorded transcript replayed stop by stop; where each harness keeps its hooks
    mcp_server       ``stoprule mcp`` (imports the ``mcp`` SDK; only on that path)

Nothing here imports the CLI or the ledger: ``stoprule hook`` (``cli/hook_cmd.py``) passes
a recording function in. See ``docs/agents.md`` and ``docs/blockers.md``.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""
