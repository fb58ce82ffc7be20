"""Property-based fuzzing of the CLI (hypothesis): any bytes on stdin and any mix of flags
give an exit code of 0, 1 or 2, never a traceback, and NDJSON output keeps one line per
input record. Runs in-process through ``cli.main.run`` (the real argument parsing and
streams); a few cases also go through a real subprocess. ``-m torture`` runs it long."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stoprule.cli.main import run
from tiers import first_by_default
from torture import scaled

EXAMPLES = int(os.environ.get("STOPRULE_FUZZ_EXAMPLES") or 0)
# the default tier: a dozen examples each; `-m torture` runs every property long
QUICK = settings(max_examples=EXAMPLES or 12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
LONG = settings(max_examples=EXAMPLES or scaled(3000), deadline=None, suppress_health_check=[HealthCheck.too_slow])

FACT = json.dumps({"status": "partial"}).encode()
records = st.one_of(
    st.binary(max_size=60),
    st.sampled_from(
        [
            FACT,
            b"{}",
            b"[]",
            b"null",
            b'{"status": []}',
            b'{"a":1,"a":2}',
            b'{"turn": 1e400}',
            b'{"turn": ' + b"9" * 5000 + b"}",
            b"\xff\xfe",
            b'{"x": "\\ud800"}',
            b"{" * 200 + b"}" * 200,
            '{"s": "a\u2028b"}'.encode(),
            b"\r",
            b"\x00",
        ]
    ),
)
stdin_bytes = st.lists(records, max_size=6).map(lambda rs: b"\n".join(rs))
commands = st.sampled_from(
    [
        ["eval", "-"],
        ["eval", "--format", "pretty", "-"],
        ["eval", "--strict", "-"],
        ["explain", "-"],
        ["explain", "--format", "json", "-"],
    ]
)


def _records(data: bytes) -> int:
    lines = [ln for ln in data.split(b"\n") if ln.strip()]
    return len(lines)


def check(argv: list[str], data: bytes) -> None:
    out, err = io.StringIO(), io.StringIO()
    code = run(argv, io.BytesIO(data), out, err)
    assert code in (0, 1, 2), (argv, data, code)
    assert "Traceback" not in err.getvalue()
    if argv[:1] == ["eval"] and "pretty" not in argv:
        lines = out.getvalue().splitlines()
        for ln in lines:
            json.loads(ln)
        n = _records(data)
        assert len(lines) in (n, 1, 0) or n == 0, (data, lines)  # one per record, or one document


@QUICK
@given(commands, stdin_bytes)
def test_any_stdin(argv: list[str], data: bytes) -> None:
    check(argv, data)


FLAGS = ["--format", "json", "pretty", "--strict", "--policy", "/nonexistent", "-", "--run", "r1", "--retry", "x",
         "--checkpoint", "--parent", "n1", "--threshold", "101", "--coverage", "-V", "--help", "nope", ""]  # fmt: skip


flag_commands = st.sampled_from(["eval", "check", "explain", "test", "schema", "pack", "audit", "log", "keys", "zzz"])
flag_lists = st.lists(st.sampled_from(FLAGS), max_size=5)


@QUICK
@given(flag_commands, flag_lists)
def test_any_flags(tmp_path_factory: pytest.TempPathFactory, command: str, flags: list[str]) -> None:
    check_flags(tmp_path_factory, command, flags)


def check_flags(tmp_path_factory: pytest.TempPathFactory, command: str, flags: list[str]) -> None:
    cwd = tmp_path_factory.mktemp("cli")
    old = os.getcwd()
    os.chdir(cwd)
    try:
        out, err = io.StringIO(), io.StringIO()
        try:
            code = run([command, *flags], io.BytesIO(FACT), out, err)
        except SystemExit as exc:  # argparse's --help/--version exit through SystemExit
            code = int(exc.code or 0)
        assert code in (0, 1, 2), (command, flags, code, err.getvalue())
        assert "Traceback" not in err.getvalue()
    finally:
        os.chdir(old)


@pytest.mark.torture
@LONG
@given(commands, stdin_bytes)
def test_any_stdin_long(argv: list[str], data: bytes) -> None:
    check(argv, data)


@pytest.mark.torture
@LONG
@given(flag_commands, flag_lists)
def test_any_flags_long(tmp_path_factory: pytest.TempPathFactory, command: str, flags: list[str]) -> None:
    check_flags(tmp_path_factory, command, flags)


@pytest.mark.parametrize(
    "data", first_by_default([b"\xff\n" + FACT, b'{"status": [] }', b"{" * 5000, FACT + b"\n\xc3(\n" + FACT])
)
def test_real_subprocess_never_prints_a_traceback(tmp_path: Path, data: bytes) -> None:
    # a subprocess: the process's own stdin/stdout bytes and their encoding, not Python streams
    env = {**os.environ, "STOPRULE_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.run(
        [sys.executable, "-m", "stoprule", "eval", "-"],
        input=data,
        capture_output=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
    )
    assert proc.returncode in (0, 1, 2)
    assert b"Traceback" not in proc.stderr
    assert len(proc.stdout.splitlines()) == _records(data) or len(proc.stdout.splitlines()) == 1
