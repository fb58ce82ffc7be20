"""A newcomer's first hour, in process (``clirunner.invoke``): ``init`` then ``doctor`` in a fresh
git repository for every harness, nothing machine-specific or secret left for ``git add -A``,
wiring a team can share (``--shared``) beside this clone's own (``--local``, the default), the
``.stoprule/.gitignore`` whatever creates ``.stoprule/`` writes, and the install routes
(``serve`` without its extra). ``doctor`` runs each wired hook as its harness would: a
subprocess through ``sh -c``, which is its point."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from clirunner import invoke
from docblocks import REPO, matches
from stoprule.agent.hook.wiring import MCP, TARGETS, generated_files
from stoprule.project import GITIGNORE
from tiers import first_by_default

HARNESSES = [*TARGETS, "opencode"]
VENV_BIN = Path(sys.executable).parent
# an absolute path in a JSON string, a shell word or a TOML value: /x/y...
ABSOLUTE = re.compile(r"""(?:^|[\s"'=\[(,])(/[\w.+-]+){2,}""", re.M)

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


@pytest.fixture
def home(tmp_path: Path, pack_cache: Path) -> dict[str, str]:
    """The environment of a newcomer's shell: this venv on PATH, a fresh HOME, nothing of stoprule's."""
    drop = ("STOPRULE_", "CLAUDE_", "CODEX_", "COPILOT_", "GEMINI_", "XDG_", "VIRTUAL_ENV")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    env.update(
        HOME=str(tmp_path / "home"),
        XDG_STATE_HOME=str(tmp_path / "home" / ".state"),
        STOPRULE_CACHE_DIR=str(pack_cache),
        PATH=os.pathsep.join([str(VENV_BIN), env.get("PATH", "")]),
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
    )
    return env


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout


def _fresh_repo(root: Path) -> Path:
    repo = root / "repo"
    (repo / "src" / "deep").mkdir(parents=True)
    _git(repo, "init", "-q")
    (repo / "README.md").write_text("# demo\n")
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.email=t@example.invalid", "-c", "user.name=t", "commit", "-qm", "start")
    return repo


def _status(repo: Path) -> list[str]:
    """What ``git add -A`` would take: every untracked or changed path."""
    return sorted(line[3:] for line in _git(repo, "status", "--porcelain", "-uall").splitlines())


def _machine_paths(repo: Path, paths: list[str]) -> dict[str, list[str]]:
    found = {}
    for rel in paths:
        text = (repo / rel).read_text(encoding="utf-8")
        hits = [m.group(0).strip(" \"'=[(,") for m in ABSOLUTE.finditer(text)]
        if hits or str(repo) in text or str(VENV_BIN) in text:
            found[rel] = hits or [str(repo)]
    return found


@pytest.mark.parametrize("harness", first_by_default(HARNESSES))
def test_init_then_doctor_in_a_fresh_repository(harness: str, tmp_path: Path, home: dict[str, str]) -> None:
    """The newcomer's path: ``init`` in a sub-folder of a fresh clone wires the git root;
    ``doctor`` passes and its synthetic stop is allowed; ``git status`` then offers only the
    team's settings, with no path of this machine in them (the wiring with this machine's
    path stays in files git does not see)."""
    repo = _fresh_repo(tmp_path)
    init = invoke(["init", "--harness", harness], cwd=repo / "src" / "deep", env=home)
    assert init.returncode == 0, init.stdout + init.stderr
    assert f"wiring {repo}: the git root" in init.stdout
    doctor = invoke(["doctor"], cwd=repo / "src", env=home)
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    assert f"ok   {harness}: synthetic stop: allow" in doctor.stdout
    assert f"ok   {harness}: MCP server in " in doctor.stdout and "(MCP SDK installed)" in doctor.stdout
    assert not [x for x in doctor.stdout.splitlines() if x.startswith(("FAIL", "note"))], doctor.stdout
    assert "ok   evaluation backend: " in doctor.stdout and "(durable_rules engine " in doctor.stdout
    assert _status(repo) == [".stoprule/.gitignore", ".stoprule/config.yaml"]
    assert _machine_paths(repo, _status(repo)) == {}
    # the harness's files are there, with this machine's path, and git does not see them
    # a command or a skill names no path
    wired = [p for p in generated_files() if (repo / p).exists() and not ("/commands/" in p or "/skills/" in p)]
    assert wired and all(str(VENV_BIN) in (repo / p).read_text() for p in wired)
    assert (repo / ".stoprule" / "ledger.db.journal").exists()  # the synthetic stop was recorded, out of git
    assert not [p for p in repo.rglob("*") if p.name.endswith(".bak")]


@pytest.mark.integration
def test_shared_wiring_is_portable_and_passes_where_stoprule_is_on_path(tmp_path: Path, home: dict[str, str]) -> None:
    """``--shared`` for every harness: the files the team commits run ``stoprule`` from PATH
    (no path of this machine); doctor passes where a harness finds ``stoprule`` on its PATH and
    fails, naming the remedy, where it does not."""
    repo = _fresh_repo(tmp_path)
    for harness in HARNESSES:
        init = invoke(["init", "--harness", harness, "--shared"], cwd=repo, env=home)
        assert init.returncode == 0, init.stdout + init.stderr
        assert "is not on the PATH a harness started outside this venv has" in init.stderr  # only in the venv here
    status = _status(repo)
    expected = {".stoprule/.gitignore", ".stoprule/config.yaml", *(p for p in generated_files()
                if not p.endswith(".local.json"))}  # fmt: skip
    assert set(status) == expected
    assert _machine_paths(repo, status) == {}
    assert json.loads((repo / ".mcp.json").read_text())["mcpServers"]["stoprule"] == {
        "command": "stoprule",
        "args": ["mcp"],
    }
    doctor = invoke(["doctor"], cwd=repo, env=home)
    assert doctor.returncode == 1 and "resolves to nothing on a PATH without this venv" in doctor.stdout
    tools = tmp_path / "tools"  # stoprule installed where any harness finds it (as pipx would)
    tools.mkdir()
    (tools / "stoprule").symlink_to(VENV_BIN / "stoprule")
    doctor = invoke(["doctor"], cwd=repo, env=dict(home, PATH=f"{tools}{os.pathsep}{home['PATH']}"))
    assert doctor.returncode == 0, doctor.stdout
    for harness in HARNESSES:
        assert f"ok   {harness}: synthetic stop: allow" in doctor.stdout
        assert f"ok   {harness}: MCP server in {MCP[harness].project_file}: stoprule mcp" in doctor.stdout


@pytest.mark.integration
def test_local_and_shared_never_wire_a_harness_twice(tmp_path: Path, home: dict[str, str]) -> None:
    """``--shared`` after ``--local`` moves stoprule's entries into the team's file (the personal
    file keeps none); ``--local`` after ``--shared`` leaves the team's wiring as it is; ``--local``
    refuses a file the team tracks; doctor fails a hook wired in two files."""
    repo = _fresh_repo(tmp_path)
    assert invoke(["init", "--harness", "claude-code"], cwd=repo, env=home).returncode == 0
    local = repo / ".claude" / "settings.local.json"
    assert "hook claude-code" in local.read_text()
    shared = invoke(["init", "--harness", "claude-code", "--shared"], cwd=repo, env=home)
    assert shared.returncode == 0 and not local.exists()  # nothing left in it: removed
    again = invoke(["init", "--harness", "claude-code", "--local"], cwd=repo, env=home)
    assert again.returncode == 0 and "wired there for the team" in again.stdout and not local.exists()
    assert json.loads((repo / ".mcp.json").read_text())["mcpServers"]["stoprule"]["command"] == "stoprule"
    (repo / ".gemini").mkdir()
    (repo / ".gemini" / "settings.json").write_text('{"theme": "team"}\n')
    _git(repo, "add", ".gemini/settings.json")
    refused = invoke(["init", "--harness", "gemini"], cwd=repo, env=home)
    assert refused.returncode == 2 and "tracked by git" in refused.stderr and "--shared" in refused.stderr
    assert json.loads((repo / ".gemini" / "settings.json").read_text()) == {"theme": "team"}
    # a personal entry beside the team's (written by hand): every stop would run twice
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "stoprule").symlink_to(VENV_BIN / "stoprule")
    entry = {"hooks": [{"type": "command", "command": f"{VENV_BIN / 'stoprule'} hook claude-code"}]}
    local.write_text(json.dumps({"hooks": {"Stop": [entry]}}))
    doctor = invoke(["doctor"], cwd=repo, env=dict(home, PATH=f"{tools}{os.pathsep}{home['PATH']}"))
    assert doctor.returncode == 1 and "every stop runs it 2 times" in doctor.stdout


def test_init_user_creates_no_project_file(tmp_path: Path, home: dict[str, str]) -> None:
    repo = _fresh_repo(tmp_path)
    for harness in HARNESSES:
        p = invoke(["init", "--harness", harness, "--user"], cwd=repo, env=home)
        assert p.returncode == 0, p.stderr
        assert "no project file written" in p.stdout
    assert _status(repo) == [] and not (repo / ".stoprule").exists()
    assert not (repo / ".git" / "info" / "exclude").read_text().count("stoprule")
    assert (tmp_path / "home" / ".claude" / "settings.json").exists()


CREATORS = [
    # (what the user runs, in a repository without .stoprule/)
    ("eval", "--run", "r1", "fact.json"),
    ("pack", "init"),
    ("blocker", "add", "--category", "question", "--question", "Which API?", "--context", "c", "--blocks-progress"),
    ("init", "--harness", "claude-code"),
]


@pytest.mark.parametrize("argv", CREATORS, ids=lambda a: " ".join(a[:2]))
def test_whatever_creates_stoprule_writes_its_gitignore(
    argv: tuple[str, ...], tmp_path: Path, home: dict[str, str]
) -> None:
    """The ledger (every fact body), its signing key, session state, the blockers and reports
    never reach ``git add -A``: only config.yaml and policies/ do."""
    repo = _fresh_repo(tmp_path)
    (repo / "fact.json").write_text(json.dumps({"status": "partial", "errors": [{"type": "timeout"}]}))
    _git(repo, "add", "fact.json")
    p = invoke(list(argv), cwd=repo, env=home)
    assert p.returncode in (0, 1), p.stderr
    assert (repo / ".stoprule" / ".gitignore").read_text() == GITIGNORE
    # everything stoprule writes there afterwards, as a session would
    assert invoke(["eval", "--run", "r2", "fact.json"], cwd=repo, env=home).returncode == 0
    assert invoke(["blocker", "add", *CREATORS[2][2:]], cwd=repo, env=home).returncode == 0
    from stoprule.agent.blockers.reports import save_report

    save_report(str(repo), "t1", {"human_action_required": "x"}, {"task": "t1"})
    stop = {"session_id": "s1", "hook_event_name": "Stop", "cwd": str(repo), "stop_hook_active": False}
    assert invoke(["hook", "claude-code"], input=json.dumps(stop), cwd=repo, env=home).returncode == 0
    on_disk = {p.relative_to(repo).as_posix() for p in (repo / ".stoprule").rglob("*") if p.is_file()}
    assert {
        ".stoprule/ledger.db",
        ".stoprule/ledger.db.keys",
        ".stoprule/blockers.md",
        ".stoprule/reports/t1/blocked_report.json",
        ".stoprule/hook.log",
    } <= on_disk
    pack = {p for p in on_disk if p.startswith(".stoprule/policies/")}
    team = {".stoprule/.gitignore", ".stoprule/config.yaml", *pack}
    assert [p for p in _status(repo) if p.startswith(".stoprule/")] == sorted(team & on_disk)


def test_a_stoprule_made_by_hand_gets_its_gitignore_with_the_ledger(tmp_path: Path, home: dict[str, str]) -> None:
    repo = _fresh_repo(tmp_path)
    (repo / ".stoprule").mkdir()
    (repo / ".stoprule" / "config.yaml").write_text("hook:\n  ledger: true\n")
    stop = {"session_id": "s1", "hook_event_name": "Stop", "cwd": str(repo), "stop_hook_active": False}
    assert invoke(["hook", "claude-code"], input=json.dumps(stop), cwd=repo, env=home).returncode == 0
    assert (repo / ".stoprule" / "ledger.db.journal").exists() and (repo / ".stoprule" / ".gitignore").exists()
    assert _status(repo) == [".stoprule/.gitignore", ".stoprule/config.yaml"]
    # the next command that opens the ledger folds the stop in: the ledger and its keys, out of git too
    assert invoke(["log", "verify"], cwd=repo, env=home).returncode == 0
    assert (repo / ".stoprule" / "ledger.db.keys").exists()
    assert _status(repo) == [".stoprule/.gitignore", ".stoprule/config.yaml"]


@pytest.mark.integration
def test_doctor_fails_a_synthetic_stop_that_failed_open(tmp_path: Path, home: dict[str, str]) -> None:
    """A hook that could not decide allows the stop (fail open): doctor says so instead of ``ok``,
    for a harness whose answer to an error is ``{}`` as well as one with a user channel."""
    repo = _fresh_repo(tmp_path)
    for harness in ("claude-code", "cursor"):
        assert invoke(["init", "--harness", harness], cwd=repo, env=home).returncode == 0
    (repo / ".stoprule" / "config.yaml").write_text("hook:\n  nosuchkey: 1\n")
    doctor = invoke(["doctor"], cwd=repo, env=home)
    assert doctor.returncode == 1
    agents = (REPO / "docs" / "agents.md").read_text(encoding="utf-8")
    documented = re.search(r"^FAIL claude-code: synthetic stop: .*$", agents, re.M)
    assert documented is not None  # the line docs/agents.md quotes, as doctor prints it
    for harness in ("claude-code", "cursor"):
        line = next(x for x in doctor.stdout.splitlines() if x.startswith(f"FAIL {harness}: synthetic stop"))
        assert matches([documented[0].replace("claude-code", harness)], [line]) and "nosuchkey" in line, line


def _nopy(where: Path) -> Path:
    """An interpreter without the MCP SDK (it exits 1 on the probe)."""
    where.mkdir()
    (where / "nopy").write_text("#!/bin/sh\nexit 1\n")
    (where / "nopy").chmod(0o755)
    return where / "nopy"


@pytest.mark.parametrize("harness", first_by_default(HARNESSES))
def test_doctor_checks_the_mcp_server_of_every_harness(harness: str, tmp_path: Path, home: dict[str, str]) -> None:
    """Codex's TOML, OpenCode's ``mcp`` and Copilot's ``.github/mcp.json`` too: a registration
    whose Python has no MCP SDK fails with the install command."""
    repo = _fresh_repo(tmp_path)
    assert invoke(["init", "--harness", harness], cwd=repo, env=home).returncode == 0
    registry = repo / MCP[harness].project_file
    text = registry.read_text()
    real = sys.executable  # the launcher's interpreter, as --local wires it
    assert real in text and "launch.py" in text
    registry.write_text(text.replace(real, str(_nopy(tmp_path / "nosdk"))))
    line = next(x for x in invoke(["doctor"], cwd=repo, env=home).stdout.splitlines() if "MCP server in" in x)
    assert line.startswith(f"FAIL {harness}: MCP server in {MCP[harness].project_file}")
    assert "MCP SDK is not installed" in line and "pip install 'stoprule[mcp]'" in line


@pytest.mark.integration
def test_doctor_notes_a_harness_without_the_blocker_tools(tmp_path: Path, home: dict[str, str]) -> None:
    repo = _fresh_repo(tmp_path)
    assert invoke(["init", "--harness", "codex", "--no-mcp"], cwd=repo, env=home).returncode == 0
    doctor = invoke(["doctor"], cwd=repo, env=home)
    assert doctor.returncode == 0 and "note codex: no MCP server for the blocker tools" in doctor.stdout


def test_serve_without_its_extra_exits_2_with_the_install_command(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, home: dict[str, str]
) -> None:
    monkeypatch.setitem(sys.modules, "starlette", None)  # as where it is not installed
    p = invoke(["serve", "--no-auth"], cwd=tmp_path, env=home)
    assert p.returncode == 2 and "pip install 'stoprule[serve]'" in p.stderr
    assert "Traceback" not in p.stderr and "stoprule serve: http" not in p.stderr  # no banner before it


def test_the_git_provider_never_counts_the_files_init_writes() -> None:
    """The git provider's own list (kept off the hook's cold path) is the wiring table's."""
    from stoprule.agent.hook.providers.git_provider import GENERATED

    assert sorted(GENERATED) == sorted(generated_files())


def test_the_mcp_sdk_is_a_dependency_not_an_extra() -> None:
    """``init`` registers ``stoprule mcp`` by default: a plain ``pip install stoprule`` can run it."""
    import importlib.metadata

    requires = importlib.metadata.requires("stoprule") or []
    plain = [r for r in requires if "extra ==" not in r]
    assert any(re.match(r"mcp\b", r) for r in plain), requires


def test_the_sdist_ships_what_the_tests_read() -> None:
    """Every top-level file or folder of the repository a test reads (``REPO / "name"``) is in the
    sdist, whose tests run in the unpacked tree (.ci/run)."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]

    include = set(
        tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["hatch"]["build"]["targets"]["sdist"]["include"]
    )
    read = set()
    for path in (REPO / "tests").rglob("*.py"):
        for name in re.findall(r"\bREPO\s*/\s*\"([^\"/]+)", path.read_text(encoding="utf-8")):
            if (REPO / name).exists():
                read.add(".ci/run" if name == ".ci" else name)
    assert {"tools", "examples", "policies", "docs"} <= read  # what the check sees
    assert read - include - {"pyproject.toml"} == set()  # pyproject.toml: in every sdist
