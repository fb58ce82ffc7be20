"""Author tools: `stoprule fmt`, `completion`, and `test`/`check --watch` (in process)."""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest
import yaml

from clirunner import cli
from stoprule.cli.fmt_cmd import format_text

MESSY = """\
# my rules
rules:
    # the catch-all
    - when: true    # always
      message: "ok"
      id: ok
      verdict: pass
      reason: ok{spaces}
      priority: 0
verdicts:
    pass: {{stop: allow, ok: true}}
schema:
    fields:
        turn: {{default: 0, type: int}}
        tags:
            items: {{type: string}}
            type: list
            default: []
"""

CANONICAL = """\
# my rules
schema:
  fields:
    turn: {type: int, default: 0}
    tags:
      type: list
      default: []
      items: {type: string}
verdicts:
  pass: {ok: true, stop: allow}
rules:
    # the catch-all
  - id: ok
    priority: 0
    when: true      # always
    verdict: pass
    reason: ok
    message: "ok"
"""


def test_fmt_canonical_layout_keeps_comments_and_is_idempotent(tmp_path: Path) -> None:
    messy = MESSY.format(spaces="   ")
    assert format_text(messy) == CANONICAL
    assert format_text(CANONICAL) == CANONICAL
    assert yaml.safe_load(CANONICAL) == yaml.safe_load(messy)


def test_fmt_long_flow_collections_become_block_style() -> None:
    long = "{" + ", ".join(f"field_{i}: value_{i}" for i in range(12)) + "}"
    out = format_text(f"cases:\n  - name: a\n    fact: {long}\n    expect: {{verdict: pass}}\n")
    assert "    fact:\n      field_0: value_0\n" in out and "    expect: {verdict: pass}\n" in out
    assert max(map(len, out.splitlines())) <= 120 and format_text(out) == out


def test_fmt_exit_codes_and_check(tmp_path: Path) -> None:
    messy = tmp_path / "x.yaml"
    messy.write_text(MESSY.format(spaces=""))
    broken = tmp_path / "broken.yaml"
    broken.write_text("rules: [\n")
    check = cli("fmt", "--check", str(messy))
    assert check.code == 1 and check.out == f"{messy}\n" and "1 file(s) not formatted" in check.err
    assert messy.read_text() == MESSY.format(spaces="")  # --check changes nothing
    diff = cli("fmt", "--diff", str(messy))
    assert diff.code == 1 and "+  - id: ok" in diff.out
    done = cli("fmt", str(messy))
    assert done.code == 0 and done.out == f"formatted {messy}\n" and messy.read_text() == CANONICAL
    assert cli("fmt", "--check", str(messy)).code == 0
    bad = cli("fmt", "--check", str(broken))
    assert bad.code == 2 and "not valid YAML" in bad.err and broken.read_text() == "rules: [\n"


@pytest.mark.torture  # ~3 s of round trips; the default tier: fmt's layout, comments and idempotence on a small
# pack (above) and README's `stoprule fmt --check` on the bundled pack (tests/test_docs.py)
def test_fmt_on_the_bundled_pack(tmp_path: Path, default_pack: Path) -> None:
    pack_files = sorted(map(str, default_pack.glob("*.yaml")))
    assert cli("fmt", "--check", *pack_files).code == 0  # the bundled pack's own files are canonical
    copy = tmp_path / "pack"
    shutil.copytree(default_pack, copy)
    assert cli("fmt", "--policy", str(copy)).code == 0
    assert cli("fmt", "--check", "--policy", str(copy)).code == 0  # idempotent
    for path in sorted(copy.rglob("*.yaml")):
        original = default_pack / path.relative_to(copy)
        assert yaml.safe_load(path.read_text()) == yaml.safe_load(original.read_text()), path
        assert path.read_text().count("#") == original.read_text().count("#"), path  # comments kept
    assert cli("test", "--policy", str(copy)).code == 0


# --- completion ----------------------------------------------------------------------------------


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_scripts_name_every_command(shell: str) -> None:
    from stoprule.cli.main import COMMANDS

    r = cli("completion", shell)
    assert r.code == 0
    for name in COMMANDS:
        assert name in r.out
    assert ("--format" in r.out or "-l format" in r.out) and "verify" in r.out  # options and subcommands


def _complete(script: Path, *words: str) -> list[str]:
    line = " ".join(f"'{w}'" for w in words)
    show = "printf '%s\\n' \"${COMPREPLY[@]}\""
    cmd = f"source {script}; COMP_WORDS=({line}); COMP_CWORD={len(words) - 1}; _stoprule; {show}"
    return subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, check=True).stdout.split()


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_bash_completion_completes(tmp_path: Path) -> None:
    script = tmp_path / "stoprule.bash"
    script.write_text(cli("completion", "bash").out)
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    assert _complete(script, "stoprule", "ins") == ["inspect"]
    assert _complete(script, "stoprule", "eval", "--for") == ["--format"]
    assert _complete(script, "stoprule", "eval", "--format", "") == ["json", "pretty"]
    assert _complete(script, "stoprule", "log", "ver") == ["verify"]
    assert "--quiet" in _complete(script, "stoprule", "log", "verify", "--")
    assert _complete(script, "stoprule", "completion", "--") == ["--help"]


# --- watch ---------------------------------------------------------------------------------------

PACK = """\
verdicts:
  pass: {ok: true, stop: allow}
rules:
  - {id: ok, priority: 0, when: true, verdict: pass, reason: ok, message: ok}
"""


@pytest.mark.parametrize("command", ["check", "test"])
def test_watch_reruns_on_change(tmp_path: Path, command: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from stoprule.cli import watch

    pack = tmp_path / "pack"
    (pack / "tests").mkdir(parents=True)
    (pack / "p.yaml").write_text(PACK)
    (pack / "tests" / "t.yaml").write_text("cases:\n  - {name: a, fact: {}, expect: {verdict: pass}}\n")
    monkeypatch.setattr(watch, "POLL", 0.05)
    runs: list[str] = []
    stop = threading.Event()
    result: list[str] = []

    def edit() -> None:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and len(runs) < 1:
            time.sleep(0.05)
        (pack / "p.yaml").write_text(PACK.replace("verdict: pass", "verdict: pas"))
        while time.monotonic() < deadline and len(runs) < 2:
            time.sleep(0.05)
        stop.set()

    monkeypatch.setattr(watch, "_on_run", lambda code: runs.append(str(code)))
    monkeypatch.setattr(watch, "_stopped", stop.is_set)
    t = threading.Thread(target=edit)
    t.start()
    r = cli(command, "--policy", str(pack), "--watch")
    t.join()
    result.append(r.out + r.err)
    assert runs[:2] == ["0", "2"], (runs, result)
    assert "unknown verdict 'pas' (did you mean 'pass'?)" in r.out + r.err
    assert r.err.count("watching") == 1 and "re-running" in r.err
