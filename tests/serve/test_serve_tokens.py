"""Bearer tokens: the scheme in any case, scopes per token (evaluate, record, blockers, metrics),
the token that recorded each decision named in the ledger, and no database named in any answer.
In process, over starlette's TestClient and a SQLite ledger."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from ledger_facts import CONTINUITY, FIXED, OK
from stoprule.cli.main import run as cli
from stoprule.config.serve import Limits, ServeConfig, Token, hash_token, load_serve_config
from stoprule.diagnostics import ConfigError
from stoprule.serve.app import create_app

REPO = Path(__file__).resolve().parents[2]
PACK = REPO / "policies"
TOKENS = {  # name: scopes
    "all": ("*",),
    "eval": ("evaluate",),
    "ci": ("evaluate", "record:ci-*"),
    "own": ("record:own",),
    "own2": ("record:own",),
    "web": ("blockers:web", "evaluate"),
    "ops": ("metrics",),
}


def _auth(name: str, scheme: str = "Bearer") -> dict[str, str]:
    return {"authorization": f"{scheme} secret-of-{name}"}


def _client(tmp_path: Path, ledger: str | None = None) -> TestClient:
    tokens = tuple(Token(n, hash_token(f"secret-of-{n}"), s) for n, s in TOKENS.items())
    target = ledger if ledger is not None else str(tmp_path / "l.db")
    config = ServeConfig(policy=str(PACK), tokens=tokens, ledger=target, limits=Limits(ledger_timeout_ms=5000))
    return TestClient(create_app(config))


@pytest.fixture
def client(tmp_path: Path):  # noqa: ANN201
    with _client(tmp_path) as c:
        yield c


@pytest.mark.parametrize("scheme", ["Bearer", "bearer", "BEARER", "bEaReR"])
def test_the_bearer_scheme_is_matched_in_any_case(client: TestClient, scheme: str) -> None:
    r = client.post("/v1/evaluate", headers=_auth("eval", scheme), content=json.dumps(OK))
    assert r.status_code == 200 and r.json()["verdict"] == "pass"


@pytest.mark.parametrize(
    ("token", "method", "path", "body", "status"),
    [
        ("eval", "POST", "/v1/evaluate", OK, 200),
        ("eval", "POST", "/v1/evaluate?run=ci-1", OK, 403),  # deciding is not recording
        ("eval", "POST", "/v1/evaluate/batch?run=ci-1", OK, 403),
        ("eval", "GET", "/metrics", None, 403),
        ("eval", "GET", "/v1/policy", None, 200),
        ("ci", "POST", "/v1/evaluate?run=ci-1", OK, 200),
        ("ci", "POST", "/v1/evaluate/batch?run=ci-2", OK, 200),
        ("ci", "POST", "/v1/evaluate?run=prod-1", OK, 403),  # outside its prefix
        ("own", "POST", "/v1/evaluate", OK, 403),  # recording only
        ("own", "POST", "/v1/evaluate?run=mine", OK, 200),  # a new run: its own
        ("ops", "GET", "/metrics", None, 200),
        ("ops", "POST", "/v1/evaluate", OK, 403),
        ("web", "PUT", "/v1/blockers", {"project": "api", "items": []}, 403),
        ("web", "GET", "/v1/blockers?project=api", None, 403),
        ("all", "GET", "/metrics", None, 200),
        ("all", "POST", "/v1/evaluate?run=anything", OK, 200),
    ],
)
def test_each_token_does_what_its_scopes_allow(
    client: TestClient, token: str, method: str, path: str, body: dict | None, status: int
) -> None:
    r = client.request(method, path, headers=_auth(token), content=json.dumps(body) if body is not None else None)
    assert r.status_code == status, r.text
    if status == 403:
        assert r.json()["error"]["code"] == "serve.forbidden" and token in r.json()["error"]["message"]


def test_a_hook_records_only_where_its_token_may(client: TestClient) -> None:
    hook = {"payload": {"session_id": "s"}, "fact": CONTINUITY, "run": "prod-7"}
    r = client.post("/v1/hooks/claude-code", headers=_auth("ci"), content=json.dumps(hook))
    assert (r.status_code, r.json()["error"]["code"]) == (403, "serve.forbidden")
    r = client.post("/v1/hooks/claude-code", headers=_auth("ci"), content=json.dumps({**hook, "run": "ci-7"}))
    assert r.status_code == 200 and r.json()["verdict"]["node"] == "n1"


def test_record_own_appends_only_to_runs_the_token_started(client: TestClient) -> None:
    assert client.post("/v1/evaluate?run=a", headers=_auth("own"), content=json.dumps(OK)).status_code == 200
    r = client.post("/v1/evaluate?run=a", headers=_auth("own2"), content=json.dumps(OK))
    assert (r.status_code, r.json()["error"]["code"]) == (403, "ledger.not_yours")
    assert client.post("/v1/evaluate?run=a", headers=_auth("own"), content=json.dumps(OK)).json()["node"] == "n2"
    blocked = client.post("/v1/evaluate?run=b", headers=_auth("own2"), content=json.dumps(CONTINUITY)).json()
    r = client.post(
        f"/v1/evaluate?run=b&retry={blocked['retry_token']}", headers=_auth("own"), content=json.dumps(FIXED)
    )
    assert (r.status_code, r.json()["error"]["code"]) == (403, "ledger.not_yours")


def test_every_recorded_node_names_its_token_through_export_and_import(tmp_path: Path) -> None:
    with _client(tmp_path) as c:
        c.post("/v1/evaluate?run=ci-1", headers=_auth("ci"), content=json.dumps(OK))
        blocked = c.post("/v1/evaluate?run=ci-1", headers=_auth("all"), content=json.dumps(CONTINUITY)).json()
        c.post(f"/v1/evaluate?run=ci-1&retry={blocked['retry_token']}", headers=_auth("ci"), content=json.dumps(FIXED))
        c.post("/v1/evaluate/batch?run=ci-2", headers=_auth("ci"), content=json.dumps(OK))
    out, err = io.StringIO(), io.StringIO()
    show = ["log", "show", "ci-1", "--format", "json", "--ledger", str(tmp_path / "l.db")]
    assert cli(show, io.BytesIO(), out, err) == 0
    assert [n["by"] for n in json.loads(out.getvalue())["nodes"]] == ["ci", "all", "ci"]
    out = io.StringIO()
    assert cli(["log", "export", "--ledger", str(tmp_path / "l.db")], io.BytesIO(), out, err) == 0
    exported = out.getvalue()
    assert [json.loads(x)["by"] for x in exported.splitlines()] == ["ci", "all", "ci", "ci"]
    copy = tmp_path / "copy.db"
    assert cli(["log", "import", "--ledger", str(copy)], io.BytesIO(exported.encode()), io.StringIO(), err) == 0, (
        err.getvalue()
    )
    again = io.StringIO()
    assert cli(["log", "export", "--ledger", str(copy)], io.BytesIO(), again, err) == 0
    assert again.getvalue() == exported  # the author is part of each hashed event: it moves with it
    assert cli(["log", "verify", "--ledger", str(copy)], io.BytesIO(), io.StringIO(), err) == 0


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("tokens: [{name: a, sha256: 'SHA', scopes: [evaluate, 'record:*x']}]", "tokens[0].scopes[1]"),
        ("tokens: [{name: a, sha256: 'SHA', scopes: [teleport]}]", "tokens[0].scopes[0]"),
        ("tokens: [{name: a, sha256: 'SHA', scopes: []}]", "tokens[0].scopes"),
        ("tokens: [{name: a, sha256: 'SHA'}, {name: a, sha256: 'SHA'}]", "tokens[1].name"),
    ],
)
def test_bad_token_entries_name_the_field(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "serve.yaml"
    path.write_text(text.replace("SHA", hash_token("x")))
    with pytest.raises(ConfigError, match=problem.replace("[", r"\[").replace("]", r"\]")):
        load_serve_config(str(path))


def test_new_token_prints_its_scopes_and_a_config_reads_them(tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    code = cli(
        ["serve", "--new-token", "--name", "ci", "--scope", "evaluate", "--scope", "record:ci-*"],
        io.BytesIO(),
        out,
        err,
    )
    assert code == 0, err.getvalue()
    token = out.getvalue().split()[1]
    (tmp_path / "serve.yaml").write_text("tokens:\n" + out.getvalue().split("under tokens:\n", 1)[1])
    cfg = load_serve_config(str(tmp_path / "serve.yaml"))
    found = cfg.token(f"bearer {token}")
    assert found is not None and found.name == "ci" and found.scopes == ("evaluate", "record:ci-*")
    assert cli(["serve", "--new-token", "--scope", "record:x*y"], io.BytesIO(), io.StringIO(), err) == 2
    assert "not a scope" in err.getvalue()


def test_answers_never_name_the_database(tmp_path: Path) -> None:
    """A ledger that cannot be reached and a run that does not exist: neither answer names the URL,
    the host, the database or the file."""
    url = "postgresql://svc:hunter2@127.0.0.1:1/secretdb"
    with _client(tmp_path, ledger=url) as c:
        r = c.post("/v1/evaluate?run=r", headers=_auth("all"), content=json.dumps(OK))
        assert (r.status_code, r.json()["error"]["code"]) == (503, "ledger.unavailable")
        assert not any(s in r.text for s in ("127.0.0.1", "secretdb", "hunter2", "svc", ":1"))
        r = c.put("/v1/blockers", headers=_auth("all"), content=json.dumps({"project": "p", "items": []}))
        assert r.status_code == 503 and "secretdb" not in r.text and "127.0.0.1" not in r.text
    with _client(tmp_path) as c:
        c.post("/v1/evaluate?run=r", headers=_auth("all"), content=json.dumps(OK))
        r = c.post("/v1/evaluate?run=r&parent=n9", headers=_auth("all"), content=json.dumps(OK))
        assert (r.status_code, r.json()["error"]["code"]) == (404, "ledger.unknown_node")
        r = c.post("/v1/evaluate?run=nope&parent=n1", headers=_auth("all"), content=json.dumps(OK))
        assert r.json()["error"]["code"] == "ledger.unknown_run" and str(tmp_path) not in r.text
