"""Blockers and blocked reports (seeds 003 and 001): one store under ``.stoprule/``.

- :mod:`.config`: the ``blockers`` section of ``.stoprule/config.yaml``.
- :mod:`.redact`: secrets become ``[REDACTED]`` before anything is written.
- :mod:`.store`: the append-only record, ``blockers.md``, dedupe, limit, rotation.
- :mod:`.reports`: blocked reports judged by the pack, saved per task, rendered.
- :mod:`.session`: the one adapter to the session state the hook's ``state`` provider reads.
- :mod:`.provider`: :func:`~.provider.blockers_facts`, the ``blockers`` fact provider.
- :mod:`.service`: the operations the MCP server and the CLI share.
- :mod:`.mcp_server`: ``stoprule mcp`` (imports the ``mcp`` SDK; only on that path).
"""
