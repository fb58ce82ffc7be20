"""A worker's database threads (``stoprule.serve.database``) on their own: single decisions waiting
together are run as one group, one group at a time; a group the database refuses is run again part
by part, so the part it refused fails alone; a job past its time limit answers 503."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

from stoprule.ledger.errors import LedgerError
from stoprule.serve.database import Database


def _groups(tmp_path: Path, fn: Any, items: list[Any], *, timeout_ms: int = 10_000) -> list[Any]:
    db = Database(str(tmp_path / "l.db"), size=4, timeout_ms=timeout_ms)

    async def main() -> list[Any]:
        return await asyncio.gather(*(db.grouped(fn, i) for i in items), return_exceptions=True)

    try:
        return asyncio.run(main())
    finally:
        db.close()


def test_parts_waiting_together_run_as_groups_one_at_a_time(tmp_path: Path) -> None:
    seen: list[list[int]] = []
    running = threading.Semaphore(1)

    def fn(session: Any, items: list[int]) -> list[int]:
        assert running.acquire(blocking=False), "two groups ran at once"
        try:
            seen.append(list(items))
            time.sleep(0.02)  # a commit: what arrives meanwhile waits for the next group
            return [i * 10 for i in items]
        finally:
            running.release()

    assert _groups(tmp_path, fn, list(range(40))) == [i * 10 for i in range(40)]
    assert sorted(i for group in seen for i in group) == list(range(40))
    assert len(seen) < 40 and max(len(g) for g in seen) > 1


def test_a_group_the_database_refuses_is_run_again_part_by_part(tmp_path: Path) -> None:
    def fn(session: Any, items: list[int]) -> list[int]:
        time.sleep(0.01)
        if 3 in items:  # the database refuses any transaction holding part 3
            raise LedgerError("ledger.error", "refused")
        return [i + 1 for i in items]

    got = _groups(tmp_path, fn, list(range(8)))
    assert [g for i, g in enumerate(got) if i != 3] == [i + 1 for i in range(8) if i != 3]
    assert isinstance(got[3], LedgerError) and got[3].code == "ledger.error"


def test_a_part_past_its_time_is_answered_503(tmp_path: Path) -> None:
    def fn(session: Any, items: list[int]) -> list[int]:
        time.sleep(1.0)
        return items

    t0 = time.monotonic()
    (got,) = _groups(tmp_path, fn, [1], timeout_ms=200)
    assert isinstance(got, LedgerError) and got.code == "ledger.unavailable"
    assert time.monotonic() - t0 < 0.9
