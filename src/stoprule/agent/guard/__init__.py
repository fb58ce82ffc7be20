"""The guard: the agent's tool calls that would switch the stop gate off, refused before they run.

The agent runs as the same OS user with write and shell tools, so whatever it can write or run
is untrusted. Where a harness lets a hook veto a tool call (Claude Code ``PreToolUse`` and
``ConfigChange``, Codex and Copilot ``PreToolUse``, Gemini CLI ``BeforeTool``, Cursor
``beforeShellExecution``, the OpenCode plugin's ``tool.execute.before``), ``stoprule guard
HARNESS`` reads the call and refuses, with a reason naming the path or command, the agent's
writes to stoprule's files and to the harness's hook and MCP wiring, settings changes that
drop or alter stoprule's hooks, and runs of stoprule's mutating commands. Every refusal is
written to the session's attempts journal; the next stop names it to the user.

Modules, lowest first::

    commands         stoprule's mutating commands (one table: the guard and the CLI read it)
    paths            what is protected: stoprule's files, the harnesses' wiring
    shell            a shell command line as simple commands (argv, redirections), nested ones too
    rules            one tool call -> the refusal's reason, or None
    settings         a harness settings file as the gate sees it; which changes of it are refused
    calls            each harness's pre-tool payload -> a tool call; the harness's deny answer
    journal          the session's attempts journal (append-only JSON lines)
    session          is this process inside an agent's session (its linked ancestry)?
    run              one guard call: payload in, the harness's answer out
    __main__         the guard's own fast entry (``python -S -I .../guard/__main__.py HARNESS``)

The guard runs before every tool call: it imports no engine, no pydantic, no YAML (its cold
start is measured in ``benchmarks/bench_guard.py``). String matching is best effort: what it
cannot see (a path built at run time) the frozen session and the observed facts still catch
at the next stop, and docs/agents.md ("Threat model") says what stays out of reach.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""
