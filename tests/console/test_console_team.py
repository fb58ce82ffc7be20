"""The console under ``/console`` of ``stoprule serve``: behind the server's bearer tokens,
read-only unless a token may resolve; in process over a file ledger (the team's blockers need
PostgreSQL: those tests are marked ``postgres`` and run a real server)."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from ledger_facts import CONTINUITY, OK
from stoprule.config.serve import ServeConfig, hash_token, load_serve_config
from stoprule.diagnostics import ConfigError
from stoprule.serve.app import create_app

REPO = Path(__file__).resolve().parents[2]
READER, OPS = "srv1_reader-token", "srv1_ops-token"


def _app(tmp_path: Path, **changes: object) -> TestClient:
    config = ServeConfig(policy=str(REPO / "policies"), ledger=str(tmp_path / "ledger.db"),
                         tokens=(("reader", hash_token(READER)), ("ops", hash_token(OPS))),
                         console_resolve=("ops",), **changes)  # type: ignore[arg-type]  # fmt: skip
    return TestClient(create_app(config))


def test_the_console_needs_a_token_and_the_login_form_keeps_it(tmp_path: Path) -> None:
    with _app(tmp_path) as c:
        for fact in (CONTINUITY, OK):
            assert c.post("/v1/evaluate?run=r1", json=fact, headers={"authorization": f"Bearer {READER}"}).is_success
        first = c.get("/console/", follow_redirects=False)
        assert first.status_code == 303 and first.headers["location"] == "/console/login"
        assert c.get("/console/api/graph?run=r1").status_code == 401
        assert c.post("/console/login", data={"token": "srv1_wrong"}).status_code == 401
        signed = c.post("/console/login", data={"token": READER}, follow_redirects=False)
        assert signed.status_code == 303 and "HttpOnly" in signed.headers["set-cookie"]
        assert "Path=/console" in signed.headers["set-cookie"]
        page = c.get("/console/")
        assert page.status_code == 200 and 'data-key="r1"' in page.text and "token reader · read-only" in page.text
        assert '<a href="/console/run?run=r1">' in page.text  # links stay under the mount
        graph = c.get("/console/api/graph", params={"run": "r1"}).json()
        assert [n["kind"] for n in graph["nodes"]] == ["blocked_attempt", "step"]
        assert c.get("/console/static/vendor/cytoscape.min.js").status_code == 200


def test_a_bearer_header_works_and_only_listed_tokens_may_resolve(tmp_path: Path) -> None:
    with _app(tmp_path) as c:
        reader = c.get("/console/blockers", headers={"authorization": f"Bearer {READER}"}).text
        assert "read-only" in reader and "console.resolve" in reader
        ops = c.get("/console/blockers", headers={"authorization": f"Bearer {OPS}"}).text
        assert "token ops" in ops and "read-only" not in ops
        from stoprule.console.access import csrf_of

        form = {"csrf": csrf_of(READER), "id": "b-1", "project": "p"}
        refused = c.post("/console/blockers/resolve", data=form, headers={"authorization": f"Bearer {READER}"})
        assert refused.status_code == 403 and "read-only" in refused.text


def test_without_auth_the_console_is_read_only(tmp_path: Path) -> None:
    with _app(tmp_path, auth=False) as c:
        page = c.get("/console/blockers").text
        assert "read-only" in page and "--no-auth" in page


def test_the_config_names_the_tokens_that_may_resolve(tmp_path: Path) -> None:
    cfg = tmp_path / "serve.yaml"
    cfg.write_text(f"tokens:\n  - {{name: ops, sha256: '{hash_token(OPS)}'}}\nconsole: {{resolve: [ops]}}\n")
    assert load_serve_config(str(cfg)).console_resolve == ("ops",)
    assert ServeConfig.from_env(load_serve_config(str(cfg)).to_env()).console_resolve == ("ops",)
    for bad, why in (
        ("console: {resolve: [nobody]}", "no token named nobody (at console.resolve)"),
        ("console: [ops]", "(at console)"),
        ("console: {read: [ops]}", "(at console.read)"),
    ):
        cfg.write_text(f"tokens:\n  - {{name: ops, sha256: '{hash_token(OPS)}'}}\n{bad}\n")
        with pytest.raises(ConfigError, match=re.escape(why)):
            load_serve_config(str(cfg))


@pytest.mark.postgres
def test_a_blocker_resolved_in_the_team_console_is_resolved_in_its_project(
    tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A project mirrors its blockers to the server; a token that may resolve resolves one in the
    console; the server keeps it resolved when the project mirrors it as open again, and the
    project resolves it too (its CLI then lists it resolved)."""
    import io

    from stoprule.cli.main import run as cli

    monkeypatch.setenv("STOPRULE_LEDGER_KEYS", str(tmp_path / "pg.keys"))
    proj = tmp_path / "proj"
    (proj / ".stoprule").mkdir(parents=True)
    monkeypatch.chdir(proj)

    def stoprule(*argv: str) -> tuple[int, str]:
        out, err = io.StringIO(), io.StringIO()
        return cli(list(argv), io.BytesIO(), out, err), out.getvalue() + err.getvalue()

    with _server(tmp_path, pg_url) as url:
        monkeypatch.setenv("STOPRULE_SERVER_TOKEN", READER)  # what the project's clients (and agents) hold
        (proj / ".stoprule" / "config.yaml").write_text(f"server:\n  url: {url}\n  project: web\n")
        code, out = stoprule(
            "blocker",
            "add",
            "--category",
            "question",
            "--question",
            "Which <b>DB</b>?",
            "--blocks-progress",
            "--session",
            "s1",
        )
        assert code == 0, out
        blocker_id = json.loads(stoprule("blockers", "list", "--all", "--format", "json")[1])["open"][0]["id"]
        with _Http(url) as http:
            http.login(OPS)
            page = http.get("/console/blockers")
            assert "Which &lt;b&gt;DB&lt;/b&gt;?" in page and "project web" in page.lower()
            csrf = re.search(r'name="csrf" value="([0-9a-f]+)"', page).group(1)
            done = http.post(
                "/console/blockers/resolve", {"csrf": csrf, "id": blocker_id, "project": "web", "note": "Postgres"}
            )
            assert "Resolved" in done
        code, out = stoprule("blockers", "list", "--server", url, "--all", "--format", "json")
        team = json.loads(out)["blockers"]
        assert [(b["id"], b["status"], b.get("resolved_by")) for b in team] == [(blocker_id, "resolved", "token ops")]
        code, out = stoprule("blockers", "list", "--all", "--format", "json")  # mirrors first: resolved here too
        local = json.loads(out)
        assert (
            local["open"] == []
            and "resolved in the team console by token ops: Postgres" in local["resolved"][0]["resolution"]
        )


@contextmanager
def _server(tmp: Path, ledger: str) -> Iterator[str]:
    """``stoprule serve`` (its own process: a real server) with a reader and a resolving token."""
    cfg = tmp / "serve.yaml"
    tokens = "".join(
        f"  - {{name: {name}, sha256: '{hash_token(t)}'}}\n" for name, t in (("reader", READER), ("ops", OPS))
    )
    cfg.write_text(f"policy: {REPO / 'policies'}\nledger: '{ledger}'\ntokens:\n{tokens}console: {{resolve: [ops]}}\n")
    if ledger.startswith("postgresql://"):  # the schema is made by its owner, before a server uses it
        migrate = [sys.executable, "-m", "stoprule", "serve", "migrate", "--ledger", ledger]
        subprocess.run(migrate, check=True, capture_output=True, timeout=120)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "stoprule", "serve", "--config", str(cfg), "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, "stoprule serve exited"
            try:
                with urllib.request.urlopen(url + "/healthz", timeout=1):
                    break
            except OSError:
                assert time.monotonic() < deadline, "stoprule serve did not answer"
                time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        proc.wait(15)


class _Http:
    """A cookie-keeping HTTP client (httpx) against a real server."""

    def __init__(self, url: str) -> None:
        import httpx

        self.client = httpx.Client(base_url=url, follow_redirects=True, timeout=30)

    def __enter__(self) -> _Http:
        return self

    def __exit__(self, *exc: object) -> None:
        self.client.close()

    def login(self, token: str) -> None:
        r = self.client.post("/console/login", data={"token": token})
        assert r.status_code == 200, r.text

    def get(self, path: str) -> str:
        r = self.client.get(path)
        assert r.status_code == 200, r.text
        return r.text

    def post(self, path: str, data: dict[str, str]) -> str:
        r = self.client.post(path, data=data)
        assert r.status_code == 200, r.text
        return r.text
