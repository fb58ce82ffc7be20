"""``stoprule mcp`` answers every request: raw JSON-RPC lines with a lone surrogate or a NUL in a
tool's arguments reach the tool (cleaned), and an argument the tool refuses is named by field
and kind, never by its value. The raw protocol on the real server's stdio (the process boundary
is the point: what the SDK's parser sees)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from blocker_helpers import DEFAULT_PACK

pytest.importorskip("mcp")

CALLS: list[tuple[int, str, str]] = [  # id, raw arguments JSON (as a client could send it), what the answer holds
    (
        2,
        '{"category": "question", "question": "Which DB? \\ud800", "context": "x\\u0000y", "blocksProgress": true}',
        "Blocker logged",
    ),
    (
        3,
        '{"category": "question", "question": "\\udfff\\udfff", "context": "c", "blocksProgress": false}',
        "Blocker logged",
    ),
    (
        4,
        '{"category": "question", "question": "q", "context": "c", "blocksProgress": "hunter2-s3cret"}',
        "blocksProgress",
    ),
    (5, '{"all_sessions": "AKIAIOSFODNN7EXAMPLE"}', "all_sessions"),
]


def _request(rid: int, method: str, params: dict[str, Any] | str) -> str:
    body = params if isinstance(params, str) else json.dumps(params)
    return f'{{"jsonrpc": "2.0", "id": {rid}, "method": "{method}", "params": {body}}}\n'


@pytest.mark.integration
def test_every_request_is_answered_and_no_rejected_value_is_echoed(tmp_path: Path) -> None:
    (tmp_path / ".stoprule").mkdir()
    env = {**os.environ, "STOPRULE_POLICY": str(DEFAULT_PACK), "STOPRULE_SESSION": "mcp-raw",
           "STOPRULE_CACHE_DIR": str(tmp_path / "cache")}  # fmt: skip
    proc = subprocess.Popen(
        [sys.executable, "-m", "stoprule", "mcp"],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    answers: dict[int, dict[str, Any]] = {}
    done = threading.Event()

    def read() -> None:
        assert proc.stdout is not None
        for raw in proc.stdout:
            msg = json.loads(raw)
            if "id" in msg:
                answers[msg["id"]] = msg
            if len(answers) == 1 + len(CALLS):
                done.set()
                return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    assert proc.stdin is not None
    init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    proc.stdin.write(_request(1, "initialize", init).encode())
    proc.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
    for rid, args, _ in CALLS:
        tool = "blockers_list" if rid == 5 else "blocker"
        proc.stdin.write(_request(rid, "tools/call", f'{{"name": "{tool}", "arguments": {args}}}').encode())
    proc.stdin.flush()
    try:
        assert done.wait(60), f"unanswered: {sorted({1, *(r for r, _, _ in CALLS)} - set(answers))}"
    finally:
        proc.stdin.close()
        proc.wait(30)
        reader.join(30)
        if proc.stdout is not None:
            proc.stdout.close()
    for rid, _, expected in CALLS:
        text = json.dumps(answers[rid]["result"])
        assert expected in text, (rid, text)
        assert "hunter2" not in text and "AKIA" not in text
    assert answers[4]["result"]["isError"] and answers[5]["result"]["isError"]
    md = (tmp_path / ".stoprule" / "blockers.md").read_text(encoding="utf-8")
    assert "Which DB? \ufffd" in md and "\x00" not in md
