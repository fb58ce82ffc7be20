"""Private helpers below every layer: the few standard-library shims the cold path needs, and file helpers.

Modules::

    files     atomic replacement, exclusive locks, bounded reads, durable appends: every write goes through here
    cache     the content-keyed cache of compiled packs and validated configs
    records   ``@record``: the immutable records of the cold path
    tagged    values as JSON data and back, exactly (the compiled-pack cache's format: data, never code)
    tagged_dump   writing them (a cache miss)
    codegen   generated Python code, compiled once per source
    command   run a short command and capture its output (or start it now, collect it later)
    gcpause   batches run with the cyclic garbage collector paused
    redact    secrets become [REDACTED] before anything is written
    redact_core   what redaction and its judgements share: the mark, lazily compiled patterns, the budget
    redact_judge  redaction's judgements, loaded once its pre-scan finds a candidate
    regex     regular expressions compiled on first use, without ``re`` where their programs are kept
    text      strings safe to store
    hints     did-you-mean hints for an unknown name (error messages)
    jsonin    JSON in with the C scanner alone (no ``json``, ``re``: the stop's and the guard's start)
    jsonout   JSON out with the C encoder alone
    native    flock, poll, CRC-32 and Adler-32 from one small optional C module (else fcntl, select, zlib)
    regular   a regular file's bytes, never blocking on a FIFO (the agent-writable files)
    launcher  the start of the command as init wires it (-I -S: site only when a module needs it)
    oslite    ``os`` for the cold path, without importing ``os`` (posix's functions, environ, makedirs)
    pathlite  ``os.path`` for the cold path: the functions a stop calls, as posixpath computes them"""
