"""Reading agent transcripts, incrementally: each harness's session transcript, one module a format.

Modules::

    scan          records, Scan, scan_file, detect, observations: what every stop reads
    _common       ScanState (what a scan keeps between stops) and what the formats' readers share
    claude        Claude Code's JSONL
    codex         Codex's rollout JSONL
    gemini        Gemini CLI's JSONL chats, ``.json`` chats, checkpoints and ``/chat share`` exports
    copilot       Copilot CLI's ``events.jsonl``
    cursor        Cursor's agent transcripts (JSONL)
    antigravity   Antigravity's ``transcript.jsonl``

A format's module has ``wanted(scan, line)`` (the byte prefilter of a compact line) and
``read(scan, record)``; a stop imports only the one of its transcript's format. Each is checked
against transcripts the real harnesses wrote (tests/fixtures/hooks/*/recorded/) and public ones
(tests/fixtures/sessions/transcripts/); its docstring names the versions. Adding a format is
one module here, its name in ``scan.FORMATS`` and its import in ``scan.reader``.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""
