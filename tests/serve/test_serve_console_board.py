"""The console's team board (``/console/blockers``) on PostgreSQL waits on the database no longer than
the server's own database work does (``limits.ledger_timeout_ms``): a held lock on the team's table
costs the page a 503 within the limit, not a request that never ends. Marked ``postgres``."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import psycopg
import pytest
from servehelp import TOKEN, migrate
from starlette.testclient import TestClient

from stoprule.config.serve import Limits, ServeConfig, Token, hash_token
from stoprule.serve.app import create_app

pytestmark = pytest.mark.postgres
LIMIT_MS = 1000


@pytest.mark.parametrize("page", ["/console/blockers", "/console/reports"])
def test_the_team_board_answers_within_the_limit_while_its_table_is_locked(
    tmp_path: Path, pg_url: str, page: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STOPRULE_LEDGER_KEYS", str(tmp_path / "pg.keys"))
    migrate(pg_url)
    config = ServeConfig(
        policy=str(Path(__file__).resolve().parents[2] / "policies"),
        tokens=(Token("t", hash_token(TOKEN)),),
        ledger=pg_url,
        limits=Limits(ledger_timeout_ms=LIMIT_MS),
    )
    auth = {"authorization": f"Bearer {TOKEN}"}
    answers: list[tuple[int, float]] = []
    with TestClient(create_app(config)) as c, psycopg.connect(pg_url) as holder:
        assert c.get(page, headers=auth).status_code == 200  # the board's connection is open and works
        holder.execute("LOCK TABLE team_items IN ACCESS EXCLUSIVE MODE")  # held until the rollback below

        def ask() -> None:
            t0 = time.monotonic()
            answers.append((c.get(page, headers=auth).status_code, time.monotonic() - t0))

        askers = [threading.Thread(target=ask, daemon=True) for _ in range(3)]  # the third waits for a turn
        for t in askers:
            t.start()
        for t in askers:
            t.join(LIMIT_MS / 1000 * 3 + 5)
        stuck = sum(t.is_alive() for t in askers)
        holder.rollback()  # free the table (and any request still waiting)
        assert stuck == 0, f"{stuck} request(s) to {page} still waiting on the locked table"
        assert [status for status, _ in answers] == [503] * 3, answers
        assert c.get(page, headers=auth).status_code == 200  # the board works again once the lock is gone
