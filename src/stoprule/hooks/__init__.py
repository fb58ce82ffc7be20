"""Agent hooks: stoprule as the stop hook of Claude Code, Codex, Gemini CLI, Cursor and Copilot.

Layers, lowest first (each imports only those above it and the core: project, packs,
evaluator, config)::

    event       HookEvent (what any harness's stop payload says) and Decision (what to answer)
    adapters/   one module per harness: parse(payload) -> HookEvent, render(decision) -> dict | None
    config      HookSettings / ProviderSettings (pydantic) and a cached, pydantic-free loader
    state       .stoprule/state/: declared facts (set_facts/clear_facts/read_facts), session counters
    transcripts reading Claude Code / Codex / Gemini transcripts from the end, incrementally
    providers/  hook, state, blockers, closure, transcript, git: partial facts with provenance, merged in order
    runner      one stop: settings, providers, evaluate, loop guard, fail/observe policy, log

Nothing here imports the CLI or the ledger: ``stoprule hook`` (``cli/hook_cmd.py``) passes
a recording function in. See ``docs/agents.md``.
"""
