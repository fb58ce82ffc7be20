"""The batch layer: chunks cut for the workers, and tasks mapped over worker processes in order."""

from __future__ import annotations

import itertools
import json
import os
import time

import pytest

from stoprule.facts.batch import CHUNK_LINES, chunk_items, map_ordered, parallel_chunks, started_map
from stoprule.facts.parse import parse_facts


@pytest.mark.integration
def test_parallel_chunks_are_cut_as_taken_and_shrink_towards_the_end() -> None:
    """The workers' chunks cover the input in order with the right line numbers; they are made
    one at a time (a worker starts before the rest is cut) and the last ones are smaller, so
    the workers finish together. Small or non-NDJSON input is not split."""
    lines = [json.dumps({"status": "implemented", "pad": "x" * (i % 50), "n": i}) for i in range(30_000)]
    lines[7], lines[12_345] = "not json", ""
    data = ("\n".join(lines) + "\n").encode()
    chunks = parallel_chunks(data, 2)
    assert chunks is not None and iter(chunks) is chunks  # a generator: cut as the workers take them
    cut = list(chunks)
    assert cut[0][1] == 0 and cut[-1][2] == len(data)
    assert all(b[1] == a[2] + 1 for a, b in itertools.pairwise(cut))  # contiguous, each cut on a newline
    whole = [(n, repr(x)) for n, x in parse_facts(data)]
    assert [(n, repr(x)) for c in cut for n, x in chunk_items(data, c)] == whole
    sizes = [c[2] - c[1] for c in cut]
    assert len(sizes) >= 8 and sizes[-2] < sizes[0] // 4  # the tail is cut finer than the body
    longest = max(len(line) for line in lines) + 1
    assert all(b <= a + longest for a, b in itertools.pairwise(sizes))  # never larger (a cut ends on a line end)
    assert max(data.count(b"\n", a, b) for _, a, b in cut) <= CHUNK_LINES * 1.2
    assert parallel_chunks(data, 1) is None
    assert parallel_chunks(b"{}\n" * 1998 + b"{}", 2) is None  # 1999 lines: not worth it
    assert parallel_chunks(b'{\n"a": 1\n}\n' * 1000, 2) is None  # one pretty-printed document


def _setup(base: int) -> int:
    return base


def _work(base: int, task: tuple[int, float]) -> tuple[int, int]:
    n, pause = task
    time.sleep(pause)
    if n < 0:
        raise ValueError(f"task {n} fails")
    return base + n, os.getpid()


def _tasks(n: int, taken: list[int]):
    for i in range(n):
        taken.append(i)
        yield i, (0.02 if i % 3 == 0 else 0.0)  # uneven: later tasks finish before earlier ones


def test_map_ordered_keeps_order_and_takes_tasks_as_it_goes() -> None:
    taken: list[int] = []
    results = map_ordered(_work, _tasks(40, taken), 2, _setup, (1000,), ahead=4)
    first = next(results)
    assert first[0] == 1000
    assert len(taken) <= 4 + 1  # a few ahead of the result waited for, not all forty
    rest = list(results)
    assert [r[0] for r in [first, *rest]] == [1000 + i for i in range(40)]
    assert os.getpid() not in {pid for _, pid in [first, *rest]}  # done in the workers


def test_without_ahead_every_task_is_handed_out_on_entry() -> None:
    taken: list[int] = []
    with started_map(_work, _tasks(12, taken), 2, _setup, (0,)) as results:
        assert taken == list(range(12))  # the workers have them all while the caller does other work
        assert [r[0] for r in results] == list(range(12))
    taken.clear()
    results = map_ordered(_work, _tasks(12, taken), 2, _setup, (0,))
    assert next(results)[0] == 0 and taken == list(range(12))  # a slow task holds nothing back
    assert [r[0] for r in results] == list(range(1, 12))


def test_a_failing_task_raises_where_its_result_is_due() -> None:
    tasks = [(0, 0.0), (1, 0.0), (-1, 0.0), *((i, 0.01) for i in range(3, 60))]
    got = []
    with pytest.raises(ValueError, match="task -1 fails"):
        for r in map_ordered(_work, tasks, 2, _setup, (0,)):
            got.append(r[0])
    assert got == [0, 1]
