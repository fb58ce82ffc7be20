"""The service with its ledger on PostgreSQL, over real processes: several workers appending to one
run, and the team's blockers from several machines. Marked ``postgres`` (tests/pgcluster.py)."""

from __future__ import annotations

import io
import json
import os
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from servehelp import TOKEN, migrate, server

from ledger_facts import CONTINUITY, OK
from stoprule.cli.main import run as cli

pytestmark = pytest.mark.postgres


def _post(url: str, path: str, body: bytes) -> tuple[int, dict]:
    req = urllib.request.Request(url + path, body, {"authorization": f"Bearer {TOKEN}"}, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return cli(list(argv), io.BytesIO(), out, err), out.getvalue(), err.getvalue()


def test_two_workers_append_to_one_run_with_nothing_lost(tmp_path: Path, pg_url: str, monkeypatch) -> None:  # noqa: ANN001
    keys = str(tmp_path / "pg.keys")
    monkeypatch.setenv("STOPRULE_LEDGER_KEYS", keys)  # the server processes inherit it
    n = 120
    migrate(pg_url)
    with server(tmp_path, workers=2, ledger=pg_url) as url:
        facts = [{**(OK if i % 3 else CONTINUITY), "i": i} for i in range(n)]
        with ThreadPoolExecutor(16) as pool:
            answers = list(pool.map(lambda f: _post(url, "/v1/evaluate?run=shared", json.dumps(f).encode()), facts))
    assert all(status == 200 for status, _ in answers), [a for a in answers if a[0] != 200][:3]
    nodes = sorted(int(a["node"][1:]) for _, a in answers)
    assert nodes == list(range(1, n + 1))  # every 200 has its own node; none lost, none twice
    code, out, err = _cli("log", "verify", "--ledger", pg_url)
    assert code == 0 and f"{n} event(s)" in out, out + err
    code, out, _ = _cli("log", "export", "--run", "shared", "--ledger", pg_url)
    by_node = {r["node"]: r["fact"]["i"] for r in map(json.loads, out.splitlines())}
    assert {a["node"]: f["i"] for (_, a), f in zip(answers, facts, strict=True)} == by_node


def test_the_teams_blockers_from_two_machines(tmp_path: Path, pg_url: str, monkeypatch) -> None:  # noqa: ANN001
    from stoprule.agent.blockers.service import open_service
    from stoprule.agent.hook.remote import Mirror, Remote

    monkeypatch.setenv("STOPRULE_LEDGER_KEYS", str(tmp_path / "pg.keys"))
    monkeypatch.setenv("STOPRULE_SERVER_TOKEN", TOKEN)
    migrate(pg_url)
    with server(tmp_path, ledger=pg_url) as url:
        for name in ("web", "api"):
            proj = tmp_path / name
            (proj / ".stoprule").mkdir(parents=True)
            (proj / ".stoprule" / "config.yaml").write_text("blockers:\n  enabled: true\n")
            service = open_service(str(proj))
            service.store.set_enabled(True)
            service.mirror = Mirror(Remote(url, TOKEN, 10), name)
            reply = service.log_blocker(
                "s1", {"category": "permission", "question": f"Need the {name} key?", "blocksProgress": True}
            )
            assert reply.ok, reply.text
        code, out, err = _cli("blockers", "list", "--server", url, "--format", "json")
        assert code == 0, err
        got = sorted((b["project"], b["question"]) for b in json.loads(out)["blockers"])
        assert got == [("api", "Need the api key?"), ("web", "Need the web key?")]
        code, out, _ = _cli("blockers", "list", "--server", url)
        assert "web@" in out and "(blocks progress)" in out
        monkeypatch.delenv("STOPRULE_SERVER_TOKEN")
        code, _, err = _cli("blockers", "list", "--server", url)
        assert code == 2 and "serve.unauthorized" in err
    assert os.path.exists(tmp_path / "web" / ".stoprule")


def test_the_blocker_commands_copy_to_the_team_server(tmp_path: Path, pg_url: str, monkeypatch) -> None:  # noqa: ANN001
    from clirunner import invoke

    monkeypatch.setenv("STOPRULE_LEDGER_KEYS", str(tmp_path / "pg.keys"))
    migrate(pg_url)
    with server(tmp_path, ledger=pg_url) as url:
        proj = tmp_path / "svc"
        (proj / ".stoprule").mkdir(parents=True)
        (proj / ".stoprule" / "config.yaml").write_text(f"blockers:\n  enabled: true\nserver:\n  url: {url}\n")
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("STOPRULE_")},
               "STOPRULE_SERVER_TOKEN": TOKEN, "HOME": str(tmp_path / "home")}  # fmt: skip
        p = invoke(
            [
                "blocker",
                "add",
                "--category",
                "permission",
                "--question",
                "Need the deploy key?",
                "--blocks-progress",
                "--format",
                "json",
            ],
            env=env,
            cwd=proj,
        )
        assert p.returncode == 0, p.stdout + p.stderr
        blocker_id = json.loads(p.stdout)["id"]

        def team_open() -> list[str]:
            q = invoke(["blockers", "list", "--server", url, "--format", "json"], env=env, cwd=proj)
            assert q.returncode == 0, q.stderr
            return [b["id"] for b in json.loads(q.stdout)["blockers"]]

        assert team_open() == [blocker_id]
        p = invoke(["blockers", "resolve", blocker_id, "--note", "granted"], env=env, cwd=proj)
        assert p.returncode == 0, p.stdout + p.stderr
        assert team_open() == []
