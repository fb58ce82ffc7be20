"""The console: runs, stops, blockers, reports and the policy in a browser (``stoprule console``
on a project's own ledger; ``/console`` of ``stoprule serve`` for a team).

Modules, lowest first::

    hooklog  the hook's log: which harness ran a session, each decision's provenance
    runs     runs, DAGs, decisions and chain checks, read from the ledger's public reading API
    board    blockers and blocked reports: the local project's, or a team's (given by serve)
    policy   the pack in force, its audit and coverage, the packs the ledger names and their diffs
    access   who may read and who may resolve: the local key, or the server's bearer tokens
    app      the ASGI application: pages (templates/), static files (static/), live updates

Imported only by ``stoprule console`` and ``stoprule serve``: never on the hook's path.
"""
