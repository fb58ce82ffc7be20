"""The clients against a real server process: ``eval --server``, ``hook --server`` (and its fail
modes when the server is unreachable or slow), never a hang."""

from __future__ import annotations

import io
import json
import shutil
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from servehelp import TOKEN, server

from ledger_facts import CONTINUITY, OK, REVIEW
from stoprule.agent.hook.runner import run_hook
from stoprule.cli.main import run as cli

HOOKS = Path(__file__).resolve().parents[1] / "fixtures" / "hooks"
PAYLOAD = {"session_id": "sess-1", "hook_event_name": "Stop", "stop_hook_active": False}


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with server(tmp_path_factory.mktemp("srv"), ledger=str(tmp_path_factory.mktemp("led") / "l.db")) as u:
        yield u


def _cli(argv: list[str], stdin: bytes = b"") -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli(argv, io.BytesIO(stdin), out, err)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("fmt", ["json", "pretty"])
def test_eval_server_prints_what_local_eval_prints(url: str, fmt: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STOPRULE_SERVER_TOKEN", TOKEN)
    data = "\n".join(json.dumps(f) for f in (OK, {"status": "bogus"}, CONTINUITY, REVIEW)).encode() + b"\n"
    local = _cli(["eval", "--format", fmt, "-"], data)
    remote = _cli(["eval", "--server", url, "--format", fmt, "-"], data)
    assert remote[:2] == local[:2] and local[0] == 2


def test_eval_server_records_in_the_servers_ledger(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STOPRULE_SERVER_TOKEN", TOKEN)
    code, out, _ = _cli(["eval", "--server", url, "--run", "client-run", "-"], json.dumps(OK).encode())
    assert code == 0 and json.loads(out)["run"] == "client-run"


@pytest.mark.integration
def test_eval_server_sends_a_large_input_in_requests_under_the_limits(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from stoprule.agent.hook.remote import CHUNK_FACTS

    monkeypatch.setenv("STOPRULE_SERVER_TOKEN", TOKEN)
    n = CHUNK_FACTS * 2 + 7  # three requests
    facts = [({"status": "bogus"} if i == CHUNK_FACTS + 3 else {**OK, "i": i}) for i in range(n)]
    data = "\n".join(json.dumps(f) for f in facts).encode()
    local = _cli(["eval", "--format", "json", "-"], data)
    remote = _cli(["eval", "--server", url, "--format", "json", "-"], data)
    assert remote[:2] == local[:2] and local[0] == 2 and len(remote[1].splitlines()) == n
    assert f"line {CHUNK_FACTS + 4}" in remote[2] or f'"line": {CHUNK_FACTS + 4}' in remote[1]
    good = "\n".join(json.dumps({**OK, "i": i}) for i in range(n)).encode()
    code, out, err = _cli(["eval", "--server", url, "--run", "big-run", "--format", "json", "-"], good)
    assert code == 0, err
    assert [json.loads(x)["node"] for x in out.splitlines()] == [f"n{i}" for i in range(1, n + 1)]


def test_eval_server_without_a_token_is_refused(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("STOPRULE_SERVER_TOKEN", raising=False)
    code, out, err = _cli(["eval", "--server", url, "-"], json.dumps(OK).encode())
    assert code == 2 and "serve.unauthorized" in err and out == ""


def _project(tmp: Path, config: str = "") -> Path:
    (tmp / ".stoprule").mkdir(parents=True)
    (tmp / ".stoprule" / "config.yaml").write_text(config)
    return tmp


def _hook(
    tmp: Path, harness: str, server: str | None, env: dict[str, str], transcript: bool = False
) -> tuple[dict | None, dict]:
    payload = {**PAYLOAD, "cwd": str(tmp)}
    if transcript:  # the fixture's stop payload and transcript (an open task: the stop is blocked)
        payload = {**json.loads((HOOKS / harness / "stop.json").read_text()), "cwd": str(tmp)}
        shutil.copy(HOOKS / harness / "transcript.jsonl", tmp / "t.jsonl")
        payload["transcript_path"] = str(tmp / "t.jsonl")
    res = run_hook(harness, None, json.dumps(payload).encode(), cwd=str(tmp), env=env, server=server)
    return res.output, res.entry


@pytest.mark.parametrize(
    ("harness", "transcript"),
    [
        ("claude-code", False),
        ("claude-code", True),
        pytest.param("codex", True, marks=pytest.mark.integration),
        pytest.param("gemini", True, marks=pytest.mark.integration),
        ("cursor", False),
        ("copilot", False),
    ],
)
def test_hook_server_answers_as_the_local_hook(url: str, tmp_path: Path, harness: str, transcript: bool) -> None:
    env = {"STOPRULE_SERVER_TOKEN": TOKEN, "STOPRULE_NO_CACHE": "1"}
    local, local_entry = _hook(_project(tmp_path / "a"), harness, None, env, transcript)
    remote, entry = _hook(_project(tmp_path / "b"), harness, url, env, transcript)
    assert "error" not in entry and entry["server"]["policy"].startswith("sha256:")
    assert remote == local and entry["decision"] == local_entry["decision"]
    if transcript:
        assert entry["decision"]["block"] is True  # the transcript's open task


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again when this returns: nothing listens there


@pytest.mark.parametrize(
    ("fail", "blocks"),
    [("open", False), ("closed", True)],
)
@pytest.mark.parametrize("kind", ["unreachable", "silent"])
def test_hook_server_down_or_slow_takes_the_fail_mode_without_hanging(
    tmp_path: Path, fail: str, blocks: bool, kind: str
) -> None:
    silent = socket.socket()  # accepts connections (the kernel's backlog) and never answers
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    port = silent.getsockname()[1] if kind == "silent" else _closed_port()
    cfg = f"hook:\n  fail: {fail}\nserver:\n  url: http://127.0.0.1:{port}\n  timeout_ms: 300\n"
    t0 = time.monotonic()
    try:
        out, entry = _hook(_project(tmp_path, cfg), "claude-code", None, {"STOPRULE_NO_CACHE": "1"})
    finally:
        silent.close()
    assert time.monotonic() - t0 < 5
    assert entry["fail"] == fail and ("server.timeout" if kind == "silent" else "server.unreachable") in entry["error"]
    assert entry["decision"]["block"] is blocks
    if not blocks:
        assert out is not None and "fail open" in out.get("systemMessage", "")


@pytest.mark.parametrize(
    ("config", "explicit", "env", "want"),
    [
        ("", None, {}, None),
        ("server:\n  url: http://10.0.0.1:8474\n  project: web\n", None, {}, ("http://10.0.0.1:8474", "web")),
        ("", "http://127.0.0.1:9", {}, ("http://127.0.0.1:9", "proj")),
        ("", None, {"STOPRULE_SERVER": "https://s.example"}, ("https://s.example", "proj")),
    ],
)
def test_the_mcp_server_finds_the_team_server(
    tmp_path: Path, config: str, explicit: str | None, env: dict, want: tuple | None
) -> None:
    from stoprule.agent.hook.remote import project_remote

    proj = _project(tmp_path / "proj", config)
    remote, name = project_remote(str(proj), explicit, env)
    assert (None if remote is None else (remote.url, name)) == want


def test_a_bad_server_section_is_a_config_error(tmp_path: Path) -> None:
    from stoprule.agent.hook.remote import project_remote
    from stoprule.diagnostics import ConfigError

    proj = _project(tmp_path / "proj", "server:\n  url: ftp://x\n")
    with pytest.raises(ConfigError):
        project_remote(str(proj), None, {})


def test_eval_in_a_project_with_a_server_section_asks_the_server(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    proj = _project(tmp_path / "p", f"server:\n  url: {url}\n  token_env: TEAM_TOKEN\n")
    monkeypatch.chdir(proj)
    monkeypatch.setenv("TEAM_TOKEN", TOKEN)
    monkeypatch.delenv("STOPRULE_SERVER", raising=False)
    code, out, err = _cli(["eval", "--run", "from-config", "-"], json.dumps(OK).encode())
    assert code == 0 and json.loads(out)["run"] == "from-config", err  # recorded by the server
    assert not (proj / ".stoprule" / "ledger.db").exists()
    monkeypatch.delenv("TEAM_TOKEN")
    code, _, err = _cli(["eval", "-"], json.dumps(OK).encode())
    assert code == 2 and "serve.unauthorized" in err
