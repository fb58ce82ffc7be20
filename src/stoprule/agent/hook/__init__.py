"""The stop hook: one harness event in, the harness's own answer out.

Modules, lowest first::

    event            HookEvent (what any harness's stop payload says) and Decision (what to answer)
    adapters/        one module per harness: parse(payload) -> HookEvent, render(decision) -> dict | None
    pack_data        the agent-facing data a pack ships beside its rules (triage, instructions)
    state            .stoprule/state/: declared facts, the hook's counters
    declare          writing declared facts (``stoprule facts``, the blocker tools; the stop only reads)
    transcripts/     reading each harness's transcript from the end, incrementally (one module a format)
    question_patterns  the pack's question patterns read for the words every match holds (a cache miss)
    questions        does the last message hand a question to the user (the pack's patterns)
    mode             the session's mode: autonomous or interactive, and who said so
    providers/       hook, state, blockers, closure, transcript, git, guard: partial facts with provenance
    frozen           the session frozen at its start (config, pack copy, wiring, ...): changes named at stops
    freezing         freezing it at session start: the record made, the pack copied, the wiring keyed
    runner           one stop: settings, providers, evaluate, loop guard, fail/observe policy, log
    lifecycle        the events besides the stop: session start, permission requests
    controls         the user's in-session /blockers on|off|status|list|export (the typed prompt)
    remote           the client of ``stoprule serve`` (the hook asks a server instead of deciding)
    replay           a recorded transcript replayed stop by stop, through the providers' fact path
    wiring           where each harness keeps its hooks (``init`` and ``doctor``); opencode_plugin.js
    plugins          the harness-native packages: a Claude Code plugin and its local marketplace
    agy_hooks        Antigravity's hooks.json checked as it loads it (one error drops the whole file)

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""
