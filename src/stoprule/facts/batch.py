"""Large NDJSON inputs spread over processes, results in input order.

The helpers are generic: :func:`split_ndjson` and :func:`parallel_chunks` cut NDJSON bytes
into chunks at line boundaries (offsets, each with the number of its first line; the second
as the workers take them, smaller towards the end), :func:`chunk_items` parses one
chunk exactly as :func:`stoprule.facts.parse.parse_facts` parses NDJSON, and :func:`map_ordered`
runs a function over chunks in N worker processes and yields the results in chunk order.
``eval --jobs`` and ``audit --corpus`` use them: a worker gets its pack and the input once,
through the initializer (inherited, not copied, where workers are forked), and a task is
three numbers.

Only NDJSON is split: one (possibly pretty-printed) JSON document is a single fact.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

from collections import deque
from contextlib import contextmanager
from itertools import islice

from stoprule._util import oslite as os
from stoprule.facts.parse import complete_line, ndjson_items

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
    from collections.abc import Callable, Iterable, Iterator
    from concurrent.futures import Executor, Future
    from typing import Any, TypeVar

    T = TypeVar("T")
    R = TypeVar("R")

Chunk = tuple[int, int, int]  # (first line number, start offset, end offset)

MIN_PARALLEL_LINES = 2_000  # below this, starting workers costs more than it saves
CHUNK_LINES = 2_500  # large NDJSON is read in chunks of about this many lines (less memory live at once)
SAMPLE_BYTES = 1 << 20  # the lines in this much of an input estimate the whole's (see _lines_estimate)
CHUNKS_PER_JOB = 4  # a chunk is at most 1/this of what is left per worker: the last ones are small


def resolve_jobs(jobs: int) -> int:
    """``--jobs`` as a worker count: 0 means one per CPU."""
    return max(1, jobs if jobs > 0 else (os.cpu_count() or 1))


def split_ndjson(data: bytes, parts: int, min_lines: int = MIN_PARALLEL_LINES) -> list[Chunk] | None:
    """``data`` cut at line boundaries into about ``parts`` chunks of about equal size, as
    ``(first line number, start, end)`` (the chunk is ``data[start:end]``: see :func:`chunk_items`),
    or None when it should not be split: not NDJSON (its first non-blank line is not a JSON
    value on its own) or fewer than ``min_lines`` lines. Nothing is copied."""
    if parts < 2 or not _is_ndjson(data):
        return None
    size = len(data)
    cuts = iter([size * k // parts for k in range(1, parts)])
    out = list(_cut(data, lambda _start, _left: next(cuts, size)))
    lines = out[-1][0] + data.count(b"\n", out[-1][1])  # the last chunk's first line, and its own
    return out if lines >= min_lines else None


def parallel_chunks(data: bytes, jobs: int) -> Iterator[Chunk] | None:
    """``data`` cut for ``jobs`` workers (None: not worth it, or not NDJSON), as the workers
    take the chunks: the first ones start while the rest is still being cut. Chunks hold about
    :data:`CHUNK_LINES` lines, fewer towards the end (1/``CHUNKS_PER_JOB`` of what is left per
    worker, down to 1/8 of a full chunk) so that the workers finish at about the same time."""
    if jobs < 2:
        return None
    lines = _lines_estimate(data)
    if lines < MIN_PARALLEL_LINES or not _is_ndjson(data):
        return None
    big = max(1, len(data) * CHUNK_LINES // lines)  # bytes of a chunk of CHUNK_LINES lines
    return _cut(data, lambda start, left: start + max(big // 8, min(big, left // (jobs * CHUNKS_PER_JOB))))


def sequential_chunks(data: bytes) -> list[Chunk] | None:
    """``data`` cut for one process into chunks of about :data:`CHUNK_LINES` lines (None: not
    NDJSON, or small): fewer objects live at once, less memory."""
    return split_ndjson(data, _lines_estimate(data) // CHUNK_LINES + 1)


def _is_ndjson(data: bytes) -> bool:
    """Whether :func:`~stoprule.facts.parse.parse_facts` reads ``data`` as NDJSON: its first
    non-blank line holds a JSON value by itself."""
    pos = 0
    while pos <= len(data):
        nl = data.find(b"\n", pos)
        line = data[pos:] if nl < 0 else data[pos:nl]
        if line.strip():
            return complete_line(line)
        pos = len(data) + 1 if nl < 0 else nl + 1
    return False  # blank: nothing to split


def _cut(data: bytes, cut_at: Callable[[int, int], int]) -> Iterator[Chunk]:
    """``data``'s chunks, made one at a time: each ends at the first line end at or after
    ``cut_at(start, bytes left)`` (the last one at the end of ``data``)."""
    size = len(data)
    start, line_no = 0, 1
    while True:
        end = data.find(b"\n", max(start, cut_at(start, size - start)))
        if end < 0:
            end = size
        yield (line_no, start, end)
        if end >= size:
            return
        line_no += data.count(b"\n", start, end) + 1
        start = end + 1


def _lines_estimate(data: bytes) -> int:
    """About how many lines ``data`` has, to size its chunks: counted in its first
    :data:`SAMPLE_BYTES` and scaled (exact below that). Counting them all would be one more
    pass over the input before the workers can start; the chunks count their own exactly."""
    if len(data) <= SAMPLE_BYTES:
        return data.count(b"\n") + 1
    return data.count(b"\n", 0, SAMPLE_BYTES) * len(data) // SAMPLE_BYTES + 1


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
    tasks: Iterable[T],
    jobs: int,
    setup: Callable[..., Any],
    setup_args: tuple[Any, ...] = (),
    ahead: int | None = None,
) -> Iterator[R]:
    """``fn(context, task)`` for every task in ``jobs`` worker processes, results in task order.

    ``setup(*setup_args)`` runs once in each worker and gives its ``context`` (e.g. the
    evaluator). ``fn`` and ``setup`` must be module-level functions. Workers are forked where
    the platform can (no re-import, and ``setup_args`` are inherited: nothing is pickled but
    tasks and results): fork before the parent creates engine handles.

    Every task is handed out at once, or with ``ahead``, only that many ahead of the result
    waited for: a lazy ``tasks`` (e.g. :func:`parallel_chunks`) is then made while the workers
    run rather than before they start. That suits tasks of about equal size: a slow one holds
    the others back once the workers are ``ahead`` tasks past it.
    """
    with started_map(fn, tasks, jobs, setup, setup_args, ahead) as results:
        yield from results


@contextmanager
def started_map(
    fn: Callable[[Any, T], R],
    tasks: Iterable[T],
    jobs: int,
    setup: Callable[..., Any],
    setup_args: tuple[Any, ...] = (),
    ahead: int | None = None,
) -> Iterator[Iterator[R]]:
    """:func:`map_ordered`, with every task (with ``ahead``, that many) handed to the workers
    on entry: the caller can do other work before it reads the results. Leaving the block
    drops the tasks not yet started and waits for the workers."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=_init, initargs=(setup, setup_args))
    try:
        todo = iter(tasks)
        handed = deque(pool.submit(_call, (fn, t)) for t in (todo if ahead is None else islice(todo, max(1, ahead))))
        yield _in_order(pool, fn, todo, handed)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _in_order(pool: Executor, fn: Callable[..., R], todo: Iterator[Any], handed: deque[Future[R]]) -> Iterator[R]:
    """The results of the ``handed`` futures in order, handing out one more task before each wait."""
    while handed:
        first = handed.popleft()
        for task in islice(todo, 1):
            handed.append(pool.submit(_call, (fn, task)))
        yield first.result()
