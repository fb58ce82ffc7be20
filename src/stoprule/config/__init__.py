"""Configuration: ``.stoprule/config.yaml`` and the ``stoprule serve --config`` file, in one place.

Modules, lowest first::

    defaults   every default, written once, as plain data (the providers' order too)
    fields     the default pack's field names: what the providers observe, what the blocker tools write
    source     a config file's bytes, read bounded
    freeze     a session's frozen copy of the config (the session is decided with it)
    reader     the hook's fast reader: settings as plain dicts, cached by the file's bytes
    sections   one pydantic model per section of config.yaml (hook, providers, blockers, server, ledger)
    loader     the one loader: YAML validated against the models, mistakes named by file, line and key
    serve      the serve file's model, the server's config record, bearer token hashes
    template   the config ``stoprule init`` writes, generated from the defaults

Every mistake is a :class:`~stoprule.diagnostics.ConfigError`. Layer: above ``language``
(the loader reads YAML with source locations), below ``agent``, ``serve`` and the CLI.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy; ``defaults``,
``fields``, ``source``, ``reader`` and ``freeze`` are on it, the pydantic models are not.
"""
