"""The cold path is a list: the stoprule modules a warm stop hook and a warm ``stoprule eval``
import are exactly ``COLD_PATH`` of ``tools/import_graph.py`` (kept there, in one place). A
module joins or leaves the list on purpose, in that file, with the docstring line that says so.

Fresh interpreters (subprocesses): what a process has imported when it is done is what its
cold start paid for. Each run goes twice; the first fills the compiled-pack and config caches.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from clirunner import invoke
from hookharness import FIXTURES, HARNESSES, payload
from tiers import first_by_default

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tools"))
from import_graph import COLD_PATH  # noqa: E402

# the command in a fresh interpreter; prints its exit code and the stoprule modules it imported
PROBE = (
    "import io, json, sys\n"
    "from stoprule.cli.main import run\n"
    "out, err = io.StringIO(), io.StringIO()\n"
    "code = run(sys.argv[1:], io.BytesIO(sys.stdin.buffer.read()), out, err)\n"
    "mods = sorted(m for m in sys.modules if m == 'stoprule' or m.startswith('stoprule.'))\n"
    "print(json.dumps({'code': code, 'out': out.getvalue(), 'err': err.getvalue(), 'modules': mods}))\n"
)


def _warm(argv: list[str], stdin: bytes, cwd: Path, env: dict[str, str]) -> dict:
    for _ in range(2):
        proc = subprocess.run(
            [sys.executable, "-c", PROBE, *argv], input=stdin, capture_output=True, cwd=cwd, env=env, timeout=120
        )
        assert proc.returncode == 0, proc.stderr.decode()
    result: dict = json.loads(proc.stdout)
    return result


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    home = tmp_path_factory.mktemp("home")
    full = {k: v for k, v in os.environ.items() if not k.startswith("STOPRULE_")}
    full.update(STOPRULE_CACHE_DIR=str(home / "cache"), HOME=str(home), XDG_STATE_HOME=str(home / "state"))
    return full


def _hook_modules(tmp_path: Path, env: dict[str, str]) -> set[str]:
    """A Stop in a project as ``stoprule init`` leaves it (ledger on, every provider), in a git
    repository: Claude Code's with a transcript that has an open task (the agent is told to go
    on), and each other harness's (its adapter)."""
    if shutil.which("git") is None:
        pytest.skip("no git")
    root = tmp_path / "wired"
    root.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    init = invoke(["init", "--harness", "claude-code"], cwd=root, env=env)  # in process: only the probes are fresh
    assert init.returncode == 0, init.stderr
    shutil.copy(FIXTURES / "claude-code" / "transcript.jsonl", root / "t.jsonl")
    found: set[str] = set()
    for harness in HARNESSES:
        stop = payload(harness)
        stop["cwd"] = str(root)
        if harness == "claude-code":
            stop["transcript_path"] = str(root / "t.jsonl")
        if harness == "cursor":
            stop["workspace_roots"] = [str(root)]
        extra = {"CLAUDE_PROJECT_DIR": str(root), "GEMINI_PROJECT_DIR": str(root), "GEMINI_CWD": str(root)}
        result = _warm(["hook", harness], json.dumps(stop).encode(), root, {**env, **extra})
        assert result["code"] == 0, result
        if harness == "claude-code":
            assert json.loads(result["out"])["hookSpecificOutput"]["additionalContext"], result  # it continues
        found |= set(result["modules"])
    return found


def _eval_modules(tmp_path: Path, env: dict[str, str]) -> set[str]:
    """One fact on stdin, as JSON and as text."""
    found: set[str] = set()
    for fmt in ("json", "pretty"):
        result = _warm(["eval", "--format", fmt], b'{"status": "implemented"}', tmp_path, env)
        assert result["code"] == 0, result
        found |= set(result["modules"])
    return found


def test_the_warm_hook_and_eval_import_exactly_the_cold_path(tmp_path: Path, env: dict[str, str]) -> None:
    loaded = _hook_modules(tmp_path, env) | _eval_modules(tmp_path, env)
    # the compiled engine (a C extension, no source to mark): inside the package when stoprule was
    # built with it (an install), beside it in a source tree run in place
    loaded.discard("stoprule.engine.durable_rules_engine")
    # the optional C module of flock, poll and the checksums (C, no source to mark): the stop
    # loads it instead of fcntl, select and zlib when it was built
    loaded.discard("stoprule._util._native")
    listed = set(COLD_PATH)
    assert loaded == listed, (
        f"imported but not in COLD_PATH (keep it off the cold path, or list it): {sorted(loaded - listed)}\n"
        f"in COLD_PATH but not imported (take it off the list): {sorted(listed - loaded)}"
    )


def test_the_list_is_sorted_and_unique() -> None:
    assert list(COLD_PATH) == sorted(set(COLD_PATH))


# what a stop must not import (python -X importtime): json and re (with enum, their largest part)
# cost a start more than a third of a bare interpreter's; the stop reads and writes JSON with the C
# codec alone (stoprule._util.jsonin, jsonout) and compiles its regexes from kept programs
# (stoprule._util.regex); os (with _collections_abc, its largest part) costs a tenth: the stop
# uses stoprule._util.oslite instead
NOT_ON_THE_STOP = ("json", "re", "enum", "os", "_collections_abc")
# shared libraries of the standard library (~0.3 ms each to load) the stop needs one function of
# each from: stoprule._util._native has them, when it was built
NATIVE_INSTEAD = ("fcntl", "select", "zlib")


@pytest.mark.parametrize("harness", first_by_default(["claude-code", "codex"]))
def test_the_wired_stop_imports_no_json_re_or_os(tmp_path: Path, env: dict[str, str], harness: str) -> None:
    """The stop as ``stoprule init`` wires it (``python -I -S .../launch.py hook HARNESS``), warm, in a
    project as init leaves it, with a recorded transcript whose texts need redaction's and the
    question detector's regexes."""
    if shutil.which("git") is None:
        pytest.skip("no git")
    from stoprule.agent.hook.wiring import TARGETS, find_entry

    root = tmp_path / "wired"
    root.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    init = invoke(["init", "--harness", harness], cwd=root, env=env)
    assert init.returncode == 0, init.stderr
    target = TARGETS[harness]
    command = find_entry(json.loads(Path(target.path(str(root), "local")).read_text()), target)
    assert command and "launch.py" in command, command
    recorded = FIXTURES / harness / "recorded"
    shutil.copy(recorded / "transcript.jsonl", tmp_path / "t.jsonl")
    stop = json.loads((recorded / "payloads.jsonl").read_text().splitlines()[-1])
    stop.update(cwd=str(root), transcript_path=str(tmp_path / "t.jsonl"))
    argv = shlex.split(command)
    for run in range(3):  # twice to fill the caches, then measured
        proc = subprocess.run(
            [argv[0], *(["-X", "importtime"] if run == 2 else []), *argv[1:]],
            input=json.dumps(stop).encode(),
            capture_output=True,
            cwd=root,
            env=env,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr.decode()
    err = proc.stderr.decode()
    decided = [line for line in err.splitlines() if line.startswith(f"stoprule hook: {harness}: ")]
    assert decided and "error" not in decided[0], err[-2000:]  # decided by the pack, not the fail path
    imported = {line.split("|")[-1].strip() for line in err.splitlines() if line.startswith("import time:")}
    assert "stoprule.engine.evaluator" in imported  # the measure sees the stop's modules
    assert not imported & set(NOT_ON_THE_STOP), sorted(imported & set(NOT_ON_THE_STOP))
    if "stoprule._util._native" in imported:  # built: the one shared library instead of three (and libz)
        assert not imported & set(NATIVE_INSTEAD), sorted(imported & set(NATIVE_INSTEAD))
