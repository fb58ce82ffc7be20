"""``stoprule serve`` in process: starlette's TestClient over the real application and pack."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from ledger_facts import CONTINUITY, FIXED, OK, REVIEW
from stoprule.config.serve import Limits, ServeConfig, Token, hash_token, load_serve_config, new_token
from stoprule.serve.app import create_app

REPO = Path(__file__).resolve().parents[2]
PACK = REPO / "policies"
TOKEN = "srv1_test-token"
AUTH = {"authorization": f"Bearer {TOKEN}"}


def _client(tmp_path: Path, *, ledger: bool = False, limits: Limits | None = None, pack: Path = PACK) -> TestClient:
    config = ServeConfig(
        policy=str(pack),
        tokens=(Token("t", hash_token(TOKEN)),),
        ledger=str(tmp_path / "ledger.db") if ledger else None,
        limits=limits or Limits(ledger_timeout_ms=10_000),  # no request timed out because the machine is busy
        reload_interval_ms=50,
    )
    return TestClient(create_app(config))


@pytest.fixture
def client(tmp_path: Path):  # noqa: ANN201
    with _client(tmp_path) as c:
        yield c


@pytest.mark.parametrize(
    ("method", "path", "headers"),
    [
        ("POST", "/v1/evaluate", {}),
        ("POST", "/v1/evaluate", {"authorization": "Bearer wrong"}),
        ("POST", "/v1/evaluate", {"authorization": TOKEN}),  # no "Bearer"
        ("POST", "/v1/evaluate/batch", {}),
        ("POST", "/v1/hooks/claude-code", {}),
        ("GET", "/v1/policy", {}),
        ("GET", "/metrics", {}),
    ],
)
def test_no_valid_token_is_401_and_nothing_is_decided(
    client: TestClient, method: str, path: str, headers: dict
) -> None:
    r = client.request(method, path, headers=headers, content=json.dumps(OK))
    assert r.status_code == 401
    assert r.json()["error"]["code"] == "serve.unauthorized"
    assert r.headers["stoprule-policy"].startswith("sha256:")
    metrics = client.get("/metrics", headers=AUTH).text
    assert "stoprule_decisions_total{" not in metrics


@pytest.mark.parametrize("header", [None, "Bearer wrong", f"Bearer {TOKEN}x", f"Basic {TOKEN}"])
def test_no_valid_token_records_nothing_in_the_ledger(tmp_path: Path, header: str | None) -> None:
    headers = {"authorization": header} if header else {}
    hook = json.dumps({"payload": {"session_id": "s"}, "fact": CONTINUITY, "run": "r1"})
    with _client(tmp_path, ledger=True) as c:
        for path, body in (
            ("/v1/evaluate?run=r1", json.dumps(CONTINUITY)),
            ("/v1/evaluate/batch?run=r1", f"{json.dumps(OK)}\n{json.dumps(REVIEW)}\n"),
            ("/v1/hooks/claude-code", hook),
        ):
            r = c.post(path, headers=headers, content=body)
            assert (r.status_code, r.json()["error"]["code"]) == (401, "serve.unauthorized")
        assert not (tmp_path / "ledger.db").exists()  # the ledger was not even opened
        r = c.post("/v1/evaluate?run=r1", headers=AUTH, content=json.dumps(OK))  # a valid token does record
        assert r.status_code == 200 and r.json()["node"] == "n1"


def test_healthz_needs_no_token(client: TestClient) -> None:
    r = client.get("/healthz")
    assert r.status_code == 200 and r.json()["ok"] is True
    assert r.json()["policy"] == r.headers["stoprule-policy"]


@pytest.mark.parametrize(
    ("fact", "status", "field", "value"),
    [
        (OK, 200, "verdict", "pass"),
        (CONTINUITY, 200, "verdict", "continuity_failure"),
        (REVIEW, 200, "verdict", "user_review"),
        ({"status": "no-such-status"}, 422, "code", "fact.enum"),
        ({"turn": "eight"}, 422, "code", "fact.type"),
    ],
)
def test_evaluate_gives_the_cli_envelope_or_its_error(
    client: TestClient, fact: dict, status: int, field: str, value: str
) -> None:
    from stoprule.engine.packs import load_policy

    r = client.post("/v1/evaluate", headers=AUTH, content=json.dumps(fact))
    assert r.status_code == status
    body = r.json()
    if status == 200:
        assert body == load_policy(str(PACK)).evaluate(fact).to_dict()  # exactly what `stoprule eval` prints
        assert body[field] == value
    else:
        assert body["error"][field] == value and body["policy"] == r.headers["stoprule-policy"]
        assert "Traceback" not in r.text


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        (b"{not json", 422, "fact.not_json"),
        (b"", 422, "fact.empty"),
        (b'{"status": "implemented"}\n{"status": "implemented"}\n', 400, "serve.one_fact"),
    ],
)
def test_bad_bodies_get_json_errors(client: TestClient, body: bytes, status: int, code: str) -> None:
    r = client.post("/v1/evaluate", headers=AUTH, content=body)
    assert (r.status_code, r.json()["error"]["code"]) == (status, code)


def test_unknown_routes_and_methods_are_json(client: TestClient) -> None:
    r = client.get("/v1/nothing", headers=AUTH)
    assert (r.status_code, r.json()["error"]["code"]) == (404, "serve.not_found")
    r = client.get("/v1/evaluate", headers=AUTH)
    assert (r.status_code, r.json()["error"]["code"]) == (405, "serve.method")


def test_batch_keeps_order_and_answers_every_line(client: TestClient) -> None:
    lines = [OK, {"status": "bogus"}, CONTINUITY, "not an object", REVIEW]
    body = "\n".join(json.dumps(x) for x in lines) + "\n"
    r = client.post("/v1/evaluate/batch", headers=AUTH, content=body)
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/x-ndjson")
    out = [json.loads(x) for x in r.text.splitlines()]
    assert [o.get("verdict") or o["error"]["code"] for o in out] == [
        "pass",
        "fact.enum",
        "continuity_failure",
        "fact.not_object",
        "user_review",
    ]
    assert out[1]["error"]["line"] == 2


@pytest.mark.parametrize(
    ("limits", "body", "status", "code"),
    [
        (Limits(max_body_bytes=100), json.dumps({**OK, "pad": "x" * 200}), 413, "serve.too_large"),
        (Limits(max_batch=2), "\n".join([json.dumps(OK)] * 3), 413, "serve.batch_too_large"),
    ],
)
def test_limits_are_clear_4xx(tmp_path: Path, limits: Limits, body: str, status: int, code: str) -> None:
    with _client(tmp_path, limits=limits) as c:
        path = "/v1/evaluate/batch" if "\n" in body else "/v1/evaluate"
        r = c.post(path, headers=AUTH, content=body)
        assert (r.status_code, r.json()["error"]["code"]) == (status, code)


def test_a_spent_time_limit_answers_the_rest_of_a_batch_with_timeout(tmp_path: Path) -> None:
    with _client(tmp_path, limits=Limits(timeout_ms=1)) as c:
        body = "\n".join([json.dumps(OK)] * 2000)
        out = [json.loads(x) for x in c.post("/v1/evaluate/batch", headers=AUTH, content=body).text.splitlines()]
        assert len(out) == 2000
        assert out[-1]["error"]["code"] == "serve.timeout" and out[-1]["error"]["line"] == 2000


def test_policy_names_the_pack(client: TestClient) -> None:
    r = client.get("/v1/policy", headers=AUTH).json()
    assert r["digest"] == r["policy"] and r["refused"] is None
    assert "schema.yaml" in r["files"] and r["compiled_at"].endswith("Z")


def test_metrics_count_decisions_errors_and_latency(client: TestClient) -> None:
    client.post("/v1/evaluate", headers=AUTH, content=json.dumps(OK))
    client.post("/v1/evaluate", headers=AUTH, content=json.dumps(OK))
    client.post("/v1/evaluate", headers=AUTH, content=json.dumps({"status": "bogus"}))
    text = client.get("/metrics", headers=AUTH).text
    lines = text.splitlines()
    assert any(ln.startswith("stoprule_decisions_total{") and 'verdict="pass"} 2' in ln for ln in lines)
    assert any('code="fact.enum"} 1' in ln for ln in lines)
    assert any(ln.startswith("stoprule_request_seconds_bucket{") and 'le="+Inf"} 3' in ln for ln in lines)
    assert "stoprule_policy_refused" in text


@pytest.mark.parametrize("harness", ["claude-code", "codex", "gemini", "cursor", "copilot"])
def test_hook_answers_as_the_hook_prints(client: TestClient, harness: str) -> None:
    from stoprule.agent.hook.adapters import adapter
    from stoprule.agent.hook.runner import decision_of
    from stoprule.engine.packs import load_policy

    payload = {"session_id": "s1", "hook_event_name": "Stop", "stop_hook_active": False}
    r = client.post(f"/v1/hooks/{harness}", headers=AUTH, content=json.dumps({"payload": payload, "fact": CONTINUITY}))
    assert r.status_code == 200
    mod = adapter(harness)
    want = mod.render(decision_of(load_policy(str(PACK)).evaluate(CONTINUITY)), mod.parse(payload, None))
    assert r.json()["output"] == want and r.json()["decision"]["block"] is True


def test_hook_with_a_run_on_a_server_without_a_ledger_just_decides(client: TestClient) -> None:
    body = {"payload": {"session_id": "s"}, "fact": OK, "run": "s"}
    r = client.post("/v1/hooks/claude-code", headers=AUTH, content=json.dumps(body))
    assert r.status_code == 200 and "node" not in r.json()["verdict"]


def test_hook_with_a_run_records_the_stop(tmp_path: Path) -> None:
    with _client(tmp_path, ledger=True) as c:
        body = {"payload": {"session_id": "s"}, "fact": CONTINUITY, "run": "sess-9"}
        r = c.post("/v1/hooks/claude-code", headers=AUTH, content=json.dumps(body))
        assert r.status_code == 200 and (r.json()["verdict"]["run"], r.json()["verdict"]["node"]) == ("sess-9", "n1")


def test_hook_refuses_unknown_harness_and_bad_bodies(client: TestClient) -> None:
    r = client.post("/v1/hooks/emacs", headers=AUTH, content="{}")
    assert (r.status_code, r.json()["error"]["code"]) == (404, "serve.unknown_harness")
    r = client.post("/v1/hooks/codex", headers=AUTH, content='{"payload": {}}')
    assert (r.status_code, r.json()["error"]["code"]) == (400, "serve.usage")


def test_recording_retry_and_replay(tmp_path: Path) -> None:
    with _client(tmp_path, ledger=True) as c:
        blocked = c.post("/v1/evaluate?run=r1", headers=AUTH, content=json.dumps(CONTINUITY)).json()
        assert (blocked["node"], blocked["kind"], blocked["retryable"]) == ("n1", "blocked_attempt", True)
        tok = blocked["retry_token"]
        fixed = c.post(f"/v1/evaluate?run=r1&retry={tok}", headers=AUTH, content=json.dumps(FIXED)).json()
        assert (fixed["node"], fixed["parent"], fixed["ok"]) == ("n2", "n1", True)
        again = c.post(f"/v1/evaluate?run=r1&retry={tok}", headers=AUTH, content=json.dumps(FIXED)).json()
        assert again["replayed"] is True and again["node"] == "n2"
        r = c.post(f"/v1/evaluate?run=r1&retry={tok}", headers=AUTH, content=json.dumps(OK))
        assert (r.status_code, r.json()["error"]["code"]) == (409, "token.consumed")
        out = c.post("/v1/evaluate/batch?run=r2", headers=AUTH, content=f"{json.dumps(OK)}\n{json.dumps(OK)}\n")
        assert [json.loads(x)["node"] for x in out.text.splitlines()] == ["n1", "n2"]
    from stoprule.ledger.store import Ledger
    from stoprule.ledger.verification import verify

    with Ledger.open(str(tmp_path / "ledger.db"), create=False) as led:
        assert verify(led).ok and led.require("r1").decisions == 2


def test_recording_without_a_ledger_is_refused(client: TestClient) -> None:
    r = client.post("/v1/evaluate?run=r1", headers=AUTH, content=json.dumps(OK))
    assert (r.status_code, r.json()["error"]["code"]) == (400, "serve.no_ledger")


def _wait(pred, seconds: float = 10.0) -> bool:  # noqa: ANN001
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.05)
    return False


def test_hot_reload_swaps_a_good_pack_and_refuses_a_bad_one(tmp_path: Path) -> None:
    pack = tmp_path / "pack"
    shutil.copytree(PACK, pack)
    with _client(tmp_path, pack=pack) as c:
        first = c.get("/v1/policy", headers=AUTH).json()["digest"]
        rules = pack / "schema.yaml"
        rules.write_text(rules.read_text().replace('version: "1"', 'version: "2"', 1))
        assert _wait(lambda: c.get("/v1/policy", headers=AUTH).json()["digest"] != first)
        second = c.get("/v1/policy", headers=AUTH).json()["digest"]
        rules.write_text(rules.read_text() + "\nthis: is: not yaml: [\n")
        assert _wait(lambda: c.get("/v1/policy", headers=AUTH).json()["refused"] is not None)
        r = c.post("/v1/evaluate", headers=AUTH, content=json.dumps(OK))
        assert r.status_code == 200 and r.json()["policy"] == second == r.headers["stoprule-policy"]
        assert "stoprule_policy_refused{" in (m := c.get("/metrics", headers=AUTH).text)
        assert any(ln.startswith("stoprule_policy_refused{") and ln.endswith(" 1") for ln in m.splitlines())


@pytest.mark.parametrize(
    ("text", "line", "path"),
    [
        ("tokens: [{name: a, sha256: nope}]", 1, "tokens[0].sha256"),
        ("limits: {max_batch: 0}", 1, "limits.max_batch"),
        ("policy: p\nlimits:\n  bogus: 1", 3, "limits.bogus"),
        ("colour: blue", 1, "colour"),
        ("- a list", 1, ""),
    ],
)
def test_bad_configs_name_the_line_and_field(tmp_path: Path, text: str, line: int, path: str) -> None:
    from stoprule.diagnostics import ConfigError

    file = tmp_path / "serve.yaml"
    file.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_serve_config(str(file))
    [diag] = caught.value.diagnostics
    assert (diag.file, diag.line, diag.path) == (str(file), line, path)


def test_new_token_verifies_and_a_config_reads_it(tmp_path: Path) -> None:
    token, digest = new_token()
    path = tmp_path / "serve.yaml"
    path.write_text(f"policy: pack\ntokens: [{{name: ci, sha256: '{digest}'}}]\nledger: l.db\n")
    cfg = load_serve_config(str(path))
    assert cfg.token(f"Bearer {token}").name == "ci" and cfg.token(f"Bearer {token}x") is None
    assert cfg.policy == str(tmp_path / "pack") and cfg.ledger == str(tmp_path / "l.db")
