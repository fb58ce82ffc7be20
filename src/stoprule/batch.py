"""Large NDJSON inputs spread over processes, results in input order.

The helpers are generic: :func:`split_ndjson` cuts NDJSON bytes into chunks at line
boundaries (each with the number of its first line), :func:`ndjson_items` parses one chunk
exactly as :func:`stoprule.factio.parse_facts` parses NDJSON, and :func:`map_ordered` runs a
function over chunks in N worker processes and yields the results in chunk order. ``eval
--jobs`` uses them; ``audit --corpus`` and ``replay`` can too (a worker gets its pack once,
through the initializer).

Only NDJSON is split: one (possibly pretty-printed) JSON document is a single fact.
"""

from __future__ import annotations

import os

from .factio import complete_line, ndjson_items

__all__ = [
    "MIN_PARALLEL_LINES",
    "SEQUENTIAL_CHUNK_LINES",
    "map_ordered",
    "ndjson_items",
    "resolve_jobs",
    "split_ndjson",
]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence
    from typing import Any, TypeVar

    T = TypeVar("T")
    R = TypeVar("R")

MIN_PARALLEL_LINES = 2_000  # below this, starting workers costs more than it saves
SEQUENTIAL_CHUNK_LINES = 5_000  # one process reads large NDJSON in chunks of this many lines
CHUNKS_PER_JOB = 4  # several chunks per worker: a slow chunk does not hold the others back


def resolve_jobs(jobs: int) -> int:
    """``--jobs`` as a worker count: 0 means one per CPU."""
    return max(1, jobs if jobs > 0 else (os.cpu_count() or 1))


def split_ndjson(data: bytes, parts: int, min_lines: int = MIN_PARALLEL_LINES) -> list[tuple[int, bytes]] | None:
    """``data`` cut at line boundaries into about ``parts`` chunks of ``(first line number, bytes)``,
    or None when it should not be split: not NDJSON (its first non-blank line is not a JSON
    value on its own) or fewer than ``min_lines`` lines."""
    lines = data.split(b"\n")
    if parts < 2 or len(lines) < min_lines:
        return None
    first = next((ln for ln in lines if ln.strip()), b"")
    if not complete_line(first):  # the first non-blank line decides, as in parse_facts
        return None
    per = -(-len(lines) // parts)
    return [(i + 1, b"\n".join(lines[i : i + per])) for i in range(0, len(lines), per)]


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
    the platform can (no re-import, nothing pickled but tasks and results): fork before the
    parent creates engine handles.
    """
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=_init, initargs=(setup, setup_args)) as pool:
        yield from pool.map(_call, [(fn, t) for t in tasks])
