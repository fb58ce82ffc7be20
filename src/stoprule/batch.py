"""Large NDJSON inputs spread over processes, results in input order.

The helpers are generic: :func:`split_ndjson` cuts NDJSON bytes into chunks at line
boundaries (offsets, each with the number of its first line), :func:`chunk_items` parses one
chunk exactly as :func:`stoprule.factio.parse_facts` parses NDJSON, and :func:`map_ordered`
runs a function over chunks in N worker processes and yields the results in chunk order.
``eval --jobs`` and ``audit --corpus`` use them: a worker gets its pack and the input once,
through the initializer (inherited, not copied, where workers are forked), and a task is
three numbers.

Only NDJSON is split: one (possibly pretty-printed) JSON document is a single fact.
"""

from __future__ import annotations

import os
from contextlib import contextmanager

from .factio import complete_line, ndjson_items

__all__ = [
    "MIN_PARALLEL_LINES",
    "CHUNK_LINES",
    "chunk_items",
    "map_ordered",
    "ndjson_items",
    "parallel_chunks",
    "resolve_jobs",
    "sequential_chunks",
    "split_ndjson",
    "started_map",
]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence
    from typing import Any, TypeVar

    T = TypeVar("T")
    R = TypeVar("R")

Chunk = tuple[int, int, int]  # (first line number, start offset, end offset)

MIN_PARALLEL_LINES = 2_000  # below this, starting workers costs more than it saves
CHUNK_LINES = 2_500  # large NDJSON is read in chunks of about this many lines (less memory live at once)
CHUNKS_PER_JOB = 4  # at least this many chunks per worker: a slow chunk does not hold the others back


def resolve_jobs(jobs: int) -> int:
    """``--jobs`` as a worker count: 0 means one per CPU."""
    return max(1, jobs if jobs > 0 else (os.cpu_count() or 1))


def split_ndjson(data: bytes, parts: int, min_lines: int = MIN_PARALLEL_LINES) -> list[Chunk] | None:
    """``data`` cut at line boundaries into about ``parts`` chunks of about equal size, as
    ``(first line number, start, end)`` (the chunk is ``data[start:end]``: see :func:`chunk_items`),
    or None when it should not be split: not NDJSON (its first non-blank line is not a JSON
    value on its own) or fewer than ``min_lines`` lines. Nothing is copied."""
    if parts < 2 or data.count(b"\n") + 1 < min_lines:
        return None
    first = b""
    pos = 0
    while pos <= len(data):  # the first non-blank line decides, as in parse_facts
        nl = data.find(b"\n", pos)
        line = data[pos:] if nl < 0 else data[pos:nl]
        if line.strip():
            first = line
            break
        pos = len(data) + 1 if nl < 0 else nl + 1
    if not complete_line(first):
        return None
    size = len(data)
    out: list[Chunk] = []
    start, line_no = 0, 1
    for k in range(1, parts + 1):
        end = size if k == parts else data.find(b"\n", max(start, size * k // parts))
        if end < 0:
            end = size
        out.append((line_no, start, end))
        if end >= size:
            break
        line_no += data.count(b"\n", start, end) + 1
        start = end + 1
    return out


def parallel_chunks(data: bytes, jobs: int) -> list[Chunk] | None:
    """``data`` cut for ``jobs`` workers (None: not worth it, or not NDJSON): at least
    :data:`CHUNKS_PER_JOB` chunks per worker, of at most about :data:`CHUNK_LINES` lines."""
    if jobs < 2:
        return None
    return split_ndjson(data, max(jobs * CHUNKS_PER_JOB, data.count(b"\n") // CHUNK_LINES + 1))


def sequential_chunks(data: bytes) -> list[Chunk] | None:
    """``data`` cut for one process into chunks of about :data:`CHUNK_LINES` lines (None: not
    NDJSON, or small): fewer objects live at once, less memory."""
    return split_ndjson(data, data.count(b"\n") // CHUNK_LINES + 1)


def chunk_items(data: bytes, chunk: Chunk) -> list[tuple[int, Any]]:
    """The parsed lines of one chunk of ``data`` (see :func:`split_ndjson`)."""
    first, start, end = chunk
    return ndjson_items(data[start:end], first)


_STATE: dict[str, Any] = {}


def _init(setup: Callable[..., Any], args: tuple[Any, ...]) -> None:
    _STATE["context"] = setup(*args)


def _call(task: tuple[Callable[..., Any], Any]) -> Any:
    fn, arg = task
    return fn(_STATE["context"], arg)


def map_ordered(
    fn: Callable[[Any, T], R],
    tasks: Sequence[T],
    jobs: int,
    setup: Callable[..., Any],
    setup_args: tuple[Any, ...] = (),
) -> Iterator[R]:
    """``fn(context, task)`` for every task in ``jobs`` worker processes, results in task order.

    ``setup(*setup_args)`` runs once in each worker and gives its ``context`` (e.g. the
    evaluator). ``fn`` and ``setup`` must be module-level functions. Workers are forked where
    the platform can (no re-import, and ``setup_args`` are inherited: nothing is pickled but
    tasks and results): fork before the parent creates engine handles.
    """
    with started_map(fn, tasks, jobs, setup, setup_args) as results:
        yield from results


@contextmanager
def started_map(
    fn: Callable[[Any, T], R],
    tasks: Sequence[T],
    jobs: int,
    setup: Callable[..., Any],
    setup_args: tuple[Any, ...] = (),
) -> Iterator[Iterator[R]]:
    """:func:`map_ordered`, with every task handed to the workers on entry: the caller can do
    other work before it reads the results. Leaving the block drops the tasks not yet started
    and waits for the workers."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=_init, initargs=(setup, setup_args))
    try:
        yield pool.map(_call, [(fn, t) for t in tasks])
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
