"""One way to report a policy error, in every command and format (docs/cli.md § Errors).

A pack that fails to compile: exit 2, nothing on stdout, each diagnostic once on stderr as
``file:line:col: code: message (at path)`` and then ``stoprule: N error(s) in PACK``.
``stoprule check``, whose product is the diagnostics, prints them on stdout instead.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

RunCli = Callable[..., subprocess.CompletedProcess]

FACT = '{"status": "implemented"}'


@pytest.fixture
def broken(tmp_path: Path, default_pack: Path) -> tuple[Path, re.Pattern[str]]:
    """A copy of the default pack with one bad enum value, and the pattern of its one diagnostic line."""
    pack = tmp_path / "broken"
    shutil.copytree(default_pack, pack, ignore=shutil.ignore_patterns("__pycache__"))
    progress = pack / "progress.yaml"
    text = progress.read_text()
    assert "when: {status: failed}" in text
    progress.write_text(text.replace("when: {status: failed}", "when: {status: exploded}"))
    line = next(i for i, ln in enumerate(progress.read_text().splitlines(), 1) if "exploded" in ln)
    return pack, re.compile(
        rf"^progress\.yaml:{line}:\d+: condition\.type: .*exploded.* \(at rules\[\d+\]\.when\.status\)$"
    )


def _commands(pack: Path, tmp: Path, good: Path) -> dict[str, list[str]]:
    fact = tmp / "fact.json"
    fact.write_text(FACT)
    p = ["--policy", str(pack)]
    return {
        "eval": ["eval", *p, str(fact)],
        "eval --run": ["eval", *p, "--run", "r", "--ledger", str(tmp / "ledger.db"), str(fact)],
        "explain": ["explain", *p, str(fact)],
        "test": ["test", *p],
        "audit": ["audit", *p],
        "diff": ["diff", str(good), str(pack)],  # the old pack compiles: the new one's error is reported
        "schema facts": ["schema", "facts", *p],
    }


FORMATS = {
    "eval": ("json", "pretty"),
    "eval --run": ("json", "pretty"),
    "explain": ("json", "pretty"),
    "test": ("json", "pretty", "junit"),
    "audit": ("json", "pretty"),
    "diff": ("json", "pretty"),
    "schema facts": (None,),
}


@pytest.mark.parametrize(
    ("command", "fmt"), [(c, f) for c, fs in FORMATS.items() for f in fs], ids=lambda v: str(v).replace(" ", "-")
)
def test_policy_error_is_reported_once_on_stderr(
    run_cli: RunCli,
    broken: tuple[Path, re.Pattern[str]],
    default_pack: Path,
    tmp_path: Path,
    command: str,
    fmt: str | None,
) -> None:
    pack, diag = broken
    argv = _commands(pack, tmp_path, default_pack)[command]
    proc = run_cli(*argv, *(["--format", fmt] if fmt else []))
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert [ln for ln in lines if diag.match(ln)] == [lines[0]], proc.stderr  # each diagnostic once, first
    assert lines[-1] == f"stoprule: 1 error(s) in {pack}", proc.stderr
    assert not (tmp_path / "ledger.db").exists()  # nothing recorded for a pack that does not compile


@pytest.mark.parametrize("fmt", ["json", "pretty"])
def test_check_prints_its_diagnostics_on_stdout(
    run_cli: RunCli, broken: tuple[Path, re.Pattern[str]], fmt: str
) -> None:
    pack, diag = broken
    proc = run_cli("check", "--policy", str(pack), "--format", fmt)
    assert proc.returncode == 2
    if fmt == "json":
        out = json.loads(proc.stdout)
        assert (out["ok"], out["pack"], out["total"]) == (False, str(pack), 1)
        assert diag.match("{file}:{line}:{column}: {code}: {message} (at {path})".format(**out["diagnostics"][0])), out
    else:
        assert [ln for ln in proc.stdout.splitlines() if diag.match(ln)] == proc.stdout.splitlines()
    assert proc.stderr == f"stoprule: 1 error(s) in {pack}\n"  # a count, not the diagnostics again
