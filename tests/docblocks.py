"""Helpers for ``tests/test_docs.py``: fenced blocks of Markdown, console transcripts, the
documented output elisions, a sandbox to run them in, and a ``jq`` shim for machines without jq.

The rules (also in docs/cli.md, "Examples in these docs are tested"):

* A ``console`` block is a transcript: ``$ `` lines are commands (a trailing ``\\`` continues
  one), the lines after a command up to the next ``$ `` are its output, standard output and
  standard error merged as a user sees them. ``$ cat FILE`` followed by content declares a
  fixture: FILE is written with that content.
* Output is compared line by line, trailing whitespace ignored, with three elisions:
  ``sha256:…`` matches any digest (64 hex digits, or 12 and ``...`` as ``audit`` abbreviates
  it); a line ``...`` alone matches any number of lines (none included); any other ``…``
  matches any text within the line (timings such as ``… s``, machine paths such as ``…/policies``).
"""

from __future__ import annotations

import difflib
import os
import re
import shutil
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

_FENCE = re.compile(r"^(?P<indent> *)```(?P<info>[\w+-]*)\s*$")


@dataclass
class Block:
    """One fenced block: ``doc:line`` names it (the line of its opening fence, 1-based)."""

    doc: str
    line: int
    lang: str
    text: str
    before: str = ""  # the Markdown between the previous block and this one

    @property
    def id(self) -> str:
        return f"{self.doc}:{self.line}"


def blocks(path: Path) -> list[Block]:
    """Every fenced block of a Markdown file, with its indentation removed."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    i = 0
    prose_start = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent = len(m["indent"])
        start = i
        body: list[str] = []
        i += 1
        while i < len(lines) and lines[i].strip() != "```":
            body.append(lines[i][indent:] if lines[i][:indent].strip() == "" else lines[i])
            i += 1
        before = "\n".join(lines[prose_start:start])
        found.append(Block(path.name, start + 1, m["info"], "\n".join(body) + "\n", before))
        i += 1
        prose_start = i
    return found


@dataclass
class Step:
    """A command of a transcript and the output shown after it."""

    line: int  # 1-based line in the doc
    command: str
    expected: list[str] = field(default_factory=list)

    @property
    def fixture(self) -> str | None:
        """``$ cat FILE`` declares FILE: the name, else None."""
        m = re.fullmatch(r"cat ([\w./-]+)", self.command.strip())
        return m[1] if m else None


def transcript(block: Block) -> list[Step]:
    steps: list[Step] = []
    lines = block.text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("$ "):
            start = i
            cmd = line[2:]
            while cmd.endswith("\\") and i + 1 < len(lines):
                i += 1
                cmd += "\n" + lines[i]  # the shell joins the lines (backslash-newline)
            steps.append(Step(block.line + 1 + start, cmd))
        elif steps:
            steps[-1].expected.append(line)
        else:
            raise ValueError(f"{block.id}: output before the first '$ ' command: {line!r}")
        i += 1
    return steps


# --- comparing output ------------------------------------------------------------------------


_DIGEST = r"sha256:(?:[0-9a-f]{64}|[0-9a-f]{12}\.\.\.)"  # full, or abbreviated as `audit` prints it


def _line_pattern(line: str) -> re.Pattern[str]:
    parts = re.split(r"(sha256:…|…)", line.rstrip())
    rx = "".join(_DIGEST if p == "sha256:…" else ".*?" if p == "…" else re.escape(p) for p in parts)
    return re.compile(rx)


def matches(expected: list[str], actual: list[str]) -> bool:
    """Do the actual lines fit the expected ones, elisions applied?"""
    exp = _trim(expected)
    act = _trim(actual)
    pats = [None if e.strip() == "..." else _line_pattern(e) for e in exp]
    memo: dict[tuple[int, int], bool] = {}

    def fit(i: int, j: int) -> bool:
        if (i, j) in memo:
            return memo[i, j]
        if i == len(pats):
            ok = j == len(act)
        elif pats[i] is None:
            ok = any(fit(i + 1, k) for k in range(j, len(act) + 1))
        else:
            pat = pats[i]
            assert pat is not None
            ok = j < len(act) and pat.fullmatch(act[j].rstrip()) is not None and fit(i + 1, j + 1)
        memo[i, j] = ok
        return ok

    return fit(0, 0)


def _trim(lines: list[str]) -> list[str]:
    out = list(lines)
    while out and not out[-1].strip():
        out.pop()
    return out


def diff(expected: list[str], actual: list[str]) -> str:
    return "\n".join(difflib.unified_diff(_trim(expected), _trim(actual), "expected (doc)", "actual", lineterm=""))


# --- the sandbox -------------------------------------------------------------------------------


def venv_bin() -> Path:
    return Path(sys.executable).parent


def make_sandbox(
    root: Path, *, wrap_stoprule: bool = False, cache: Path | None = None, warm: str | None = None
) -> tuple[Path, dict[str, str]]:
    """A work directory and environment under ``root``: HOME, caches and XDG dirs inside it (the
    compiled-pack cache in ``cache`` if given: sandboxes may share it, its entries are keyed by content).
    ``warm``: the socket of a warm stoprule server (tests/warmcli.py): the ``stoprule`` on PATH is
    its client, which runs the console script itself where the server is gone."""
    work = root / "work"
    home = root / "home"
    tools = root / "bin"
    for d in (work, home, tools):
        d.mkdir(parents=True, exist_ok=True)
    shutil.copytree(REPO / "examples", work / "examples")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STOPRULE_", "XDG_", "PYTEST_"))}
    env.update(
        HOME=str(home),
        STOPRULE_CACHE_DIR=str(cache or root / "cache"),
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_DATA_HOME=str(home / ".local/share"),
        XDG_STATE_HOME=str(home / ".local/state"),
        LC_ALL="C.UTF-8",
        PYTHONUNBUFFERED="1",
        DOCS_SANDBOX=str(root),
    )
    env.pop("VIRTUAL_ENV", None)
    path = [str(tools), str(venv_bin())]
    console = venv_bin() / "stoprule"
    if not console.exists():  # not a venv install: run the package directly
        console = tools / ("stoprule.cold" if warm else "stoprule")
        _script(console, f'exec "{sys.executable}" -m stoprule "$@"\n')
    if warm:
        from warmcli import client_script

        _script(tools / "stoprule", "", text=client_script(warm, str(console)))
    if not (venv_bin() / "python").exists():
        _script(tools / "python", f'exec "{sys.executable}" "$@"\n')
    if shutil.which("jq") is None:
        _script(tools / "jq", f'exec "{sys.executable}" "{Path(__file__).with_name("jq_shim.py")}" "$@"\n')
    if wrap_stoprule:  # log every stoprule run (exit code, arguments) wherever it happens
        real = (
            str(tools / "stoprule")
            if warm
            else (shutil.which("stoprule", path=os.pathsep.join(path[1:])) or str(tools / "stoprule.real"))
        )
        if real == str(tools / "stoprule") and not warm:
            os.rename(real, tools / "stoprule.real")
            real = str(tools / "stoprule.real")
        wrapped = root / "wrap"
        wrapped.mkdir(exist_ok=True)
        log = f"${{DOCS_LOG:-{root}/stoprule-runs.log}}"
        _script(wrapped / "stoprule", f'"{real}" "$@"; rc=$?\nprintf \'%s\\t%s\\n\' "$rc" "$*" >> "{log}"\nexit $rc\n')
        path.insert(0, str(wrapped))
    env["PATH"] = os.pathsep.join([*path, env.get("PATH", "/usr/bin:/bin")])
    return work, env


def _script(path: Path, body: str, *, text: str | None = None) -> None:
    path.write_text(text if text is not None else "#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
