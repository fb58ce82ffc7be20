"""Command-line interface: a thin layer of argparse wiring over plain functions.

``main`` holds the table of commands (``parsing``: argparse's parser of a command line that
is not its command's usual one; ``in_session``: a mutating command refused inside an agent's
session); each ``<name>_cmd`` module is one command with its
``add_arguments`` and ``run`` (``check_cmd``, ``eval_cmd``, ``explain_cmd``, ``test_cmd``,
``audit_cmd``, ``diff_cmd``, ``fmt_cmd``, ``inspect_cmd``, ``schema_cmd``, ``pack_cmd``,
``log_cmd``, ``keys_cmd``, ``hook_cmd``, ``guard_cmd``, ``init_cmd``, ``plugin_cmd`` and ``doctor_cmd``
(with ``doctor_mcp``; both with ``places``: the git root, a harness's PATH),
``replay_cmd``, ``facts_cmd``, ``blocker_cmd``, ``blockers_cmd``, ``report_cmd``, ``mcp_cmd``,
``serve_cmd``, ``console_cmd``, ``completion_cmd``, ``resident_cmd``). What they share: ``common`` (errors,
the ledger a command opens), ``flags`` (the shared flags), ``output`` (the pretty verdict, NDJSON
lines), ``style`` (colour and tables), ``progress`` (a bar on standard error), ``watch``
(``--watch``), ``resident`` (the resident process's client: ``stoprule hook`` asks it) and
``resident_wire`` (how the client and the process talk and check each other).

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""
