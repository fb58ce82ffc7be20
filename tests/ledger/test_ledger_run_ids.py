"""A run id is written to disk as it is (it keys the run's chain, lock and status row, and its caller
continues the run by it), so it cannot be redacted like a fact: an id holding what looks like a secret
is refused before anything is written, everywhere a run id enters (``eval --run``, the stop hook's
journal, the server), and the refusal shows it redacted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from ledger_facts import OK
from stoprule.config.serve import Limits, ServeConfig, Token, hash_token
from stoprule.ledger import journal
from stoprule.ledger.errors import LedgerError, check_run_id
from stoprule.serve.app import create_app

REPO = Path(__file__).resolve().parents[2]
# the shapes of credentials redaction hides (none of them a real one), and the part that must not show
CASES = [
    ("ghp_" + "a1B2" * 9, "a1B2a1B2a1B2"),
    ("sk-ant-api03-" + "x7Yz" * 8, "x7Yzx7Yzx7Yz"),
    ("AKIA" + "IOSFODNN7EXAMPLE", "IOSFODNN7EXAMPLE"),
    ("deploy-https://ci:hunter2hunter2@git.example.com/x", "hunter2hunter2"),
    ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", "dozjgNryP4J3"),
]
SECRETS = [run for run, _ in CASES]
CLEAN = ["3f1c2a9e-5b7d-4c1e-9a2b-0d8e7f6a5b4c", "ci-build-4711", "rollout-2025-05-07T17-24-21-5973b6c0"]


def _hidden(run: str) -> list[str]:
    """The part of ``run`` that must not appear anywhere."""
    return [part for r, part in CASES if r == run]


@pytest.mark.parametrize("run", SECRETS)
def test_a_run_id_holding_a_secret_is_refused_and_shown_redacted(run: str) -> None:
    with pytest.raises(LedgerError) as err:
        check_run_id(run)
    assert err.value.code == "ledger.bad_run_id"
    assert "[REDACTED" in err.value.message
    assert all(piece not in err.value.message for piece in _hidden(run))


@pytest.mark.parametrize("run", CLEAN)
def test_ordinary_run_ids_pass(run: str) -> None:
    assert check_run_id(run) == run


@pytest.mark.parametrize("run", SECRETS)
def test_eval_run_writes_nothing_for_such_an_id(run_cli, tmp_path: Path, run: str) -> None:
    db = tmp_path / "ledger.db"
    proc = run_cli("eval", "--run", run, "--ledger", str(db), input=json.dumps(OK))
    assert proc.returncode != 0
    assert "ledger.bad_run_id" in proc.stdout + proc.stderr
    on_disk = b"".join(p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())
    assert all(piece.encode() not in on_disk for piece in _hidden(run))
    assert all(piece not in proc.stdout + proc.stderr for piece in _hidden(run))


@pytest.mark.parametrize("run", SECRETS)
def test_the_hooks_journal_refuses_such_an_id(tmp_path: Path, run: str) -> None:
    ledger = tmp_path / "ledger.db"
    with pytest.raises(LedgerError):
        journal.append(str(ledger), run, OK, {"verdict": "ok"}, kind="step", retryable=False)
    assert not Path(journal.journal_path(str(ledger))).exists()


@pytest.mark.parametrize("route", ["/v1/evaluate?run={}", "/v1/evaluate/batch?run={}", "/v1/hooks/claude-code"])
def test_the_server_refuses_such_an_id_and_records_nothing(tmp_path: Path, route: str) -> None:
    run = SECRETS[0]
    config = ServeConfig(
        policy=str(REPO / "policies"),
        tokens=(Token("t", hash_token("t0k")),),
        ledger=str(tmp_path / "l.db"),
        limits=Limits(ledger_timeout_ms=10_000),
    )
    body = json.dumps({"payload": {"session_id": "s"}, "run": run, "fact": OK}) if "hooks" in route else json.dumps(OK)
    with TestClient(create_app(config)) as c:
        r = c.post(route.format(run), headers={"authorization": "Bearer t0k"}, content=body)
        assert (r.status_code, r.json()["error"]["code"]) == (400, "ledger.bad_run_id"), r.text
        assert run not in r.text
        ok = c.post("/v1/evaluate?run=fine", headers={"authorization": "Bearer t0k"}, content=json.dumps(OK))
        assert ok.status_code == 200
    on_disk = b"".join(p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())
    assert run.encode() not in on_disk and b"fine" in on_disk
