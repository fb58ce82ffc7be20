"""Both ledgers (SQLite, PostgreSQL) implement the one seam, LedgerBackend
(stoprule.ledger.protocols), and open_ledger is the one place that picks one."""

from __future__ import annotations

from pathlib import Path

import pytest

from protocolcheck import mismatches
from stoprule.ledger.backend import open_ledger
from stoprule.ledger.postgres import PgLedger
from stoprule.ledger.protocols import LedgerBackend
from stoprule.ledger.store import Ledger

IMPLEMENTATIONS = [Ledger, PgLedger]


@pytest.mark.parametrize("impl", IMPLEMENTATIONS, ids=lambda c: c.__name__)
def test_each_ledger_has_the_protocols_methods(impl: type) -> None:
    assert mismatches(impl, LedgerBackend, annotations=False) == []


def test_a_sqlite_ledger_is_a_ledger_backend(tmp_path: Path) -> None:
    with open_ledger(str(tmp_path / "l.db")) as ledger:
        assert isinstance(ledger, Ledger) and isinstance(ledger, LedgerBackend) and ledger.backend == "sqlite"


@pytest.mark.postgres
def test_a_postgres_ledger_is_a_ledger_backend(pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STOPRULE_LEDGER_KEYS", str(tmp_path / "pg.keys"))
    with open_ledger(pg_url) as ledger:
        assert isinstance(ledger, PgLedger) and isinstance(ledger, LedgerBackend) and ledger.backend == "postgresql"


def test_the_check_sees_a_ledger_without_a_method() -> None:
    class Partial:
        def close(self) -> None: ...

    assert "no method append" in mismatches(Partial, LedgerBackend, annotations=False)


def test_the_packages_verify_is_the_function_whatever_was_imported_first() -> None:
    """No module is named like a function the package exports: importing the module first (as a
    command does) cannot turn ``stoprule.ledger.verify`` into a module."""
    import subprocess
    import sys

    code = (
        "import stoprule.ledger.verification, types\nfrom stoprule.ledger import verify\n"
        "assert not isinstance(verify, types.ModuleType) and callable(verify)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
