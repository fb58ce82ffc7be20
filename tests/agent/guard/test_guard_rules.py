"""The guard's rules, table-driven: each tool call an agent could make to switch the gate off is
refused with a reason naming the path or command; ordinary work passes (nothing is refused for
reading, for writing the project's own files, or for running read-only stoprule commands)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from stoprule.agent.guard.commands import mutating
from stoprule.agent.guard.paths import Places, protected
from stoprule.agent.guard.rules import Call, check, code_refusal, patch_paths
from stoprule.agent.guard.shell import commands


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A project with stoprule's state, Claude Code's settings and a few scripts."""
    root = tmp_path / "repo"
    for d in (".stoprule/policies", ".claude", "src", "build", "sub"):
        (root / d).mkdir(parents=True)
    (root / ".stoprule" / "config.yaml").write_text("hook: {}\n")
    (root / ".claude" / "settings.json").write_text("{}\n")
    (root / "evil.py").write_text('import json\nopen(".claude/settings.json", "w").write("{}")\n')
    (root / "calls.py").write_text('import subprocess\nsubprocess.run(["stoprule", "facts", "set", "x=1"])\n')
    (root / "reads.py").write_text('print(open("README.md").read())\n')
    (root / "evil.sh").write_text("#!/bin/sh\nstoprule blockers off\n")
    (root / "evil.sh").chmod(0o755)
    (root / "fine.sh").write_text("#!/bin/sh\nls -la\n")
    os.symlink(root / ".stoprule" / "config.yaml", root / "innocent.yaml")
    (tmp_path / "home" / ".config" / "stoprule" / "policies").mkdir(parents=True)
    return root


def _check(repo: Path, command: str | None = None, paths: list[str] | None = None, tool: str = "Bash") -> str | None:
    env = {"HOME": str(repo.parent / "home")}
    found = check(Call(tool, str(repo), command, paths), Places(env), env)
    return None if found is None else found.what


REFUSED = [
    # stoprule's own mutating commands, however they are started
    ("stoprule facts set uncommittedWork=false", "stoprule facts set"),
    ("stoprule facts clear", "stoprule facts clear"),
    ("stoprule blockers off", "stoprule blockers off"),
    ("stoprule blockers resolve b-1", "stoprule blockers resolve"),
    ("stoprule pack init", "stoprule pack init"),
    ("stoprule init --harness codex", "stoprule init"),
    ("stoprule keys rotate", "stoprule keys rotate"),
    ("stoprule guard off", "stoprule guard off"),
    ("echo '{}' | stoprule hook claude-code", "stoprule hook"),
    ("/opt/venv/bin/stoprule blockers on", "stoprule blockers on"),
    ("python -m stoprule facts set a=1", "stoprule facts set"),
    ("python3.11 -I -m stoprule.cli.main blockers off", "stoprule blockers off"),
    ("uv run stoprule blockers off", "stoprule blockers off"),
    ("STOPRULE_SESSION=x env -i A=1 sudo -u me nohup timeout 5 stoprule facts set a=1", "stoprule facts set"),
    ("sh -c 'stoprule blockers off'", "stoprule blockers off"),
    ('bash -lc "cd sub && stoprule blockers off"', "stoprule blockers off"),
    ("eval 'stoprule blockers off'", "stoprule blockers off"),
    ('echo "$(stoprule facts set a=1)"', "stoprule facts set"),
    ("echo `stoprule facts set a=1`", "stoprule facts set"),
    ("ls; true && stoprule blockers off || echo no", "stoprule blockers off"),
    ("ls\nstoprule blockers off", "stoprule blockers off"),
    ("true # a comment\nstoprule blockers off", "stoprule blockers off"),
    ("ls | xargs -n1 stoprule blockers resolve", "stoprule blockers resolve"),
    ("echo 'blockers off' | xargs stoprule", "made at run time"),
    ('f() { stoprule "$@"; }; f blockers off', "made at run time"),
    ("stoprule $(echo blockers) off", "made at run time"),
    ("alias s='stoprule blockers off'; s", "an alias: runs `stoprule blockers off`"),
    ("if true; then stoprule blockers off; fi", "stoprule blockers off"),
    ("bash <<'EOF'\nstoprule blockers off\nEOF", "stoprule blockers off"),
    ("st\\oprule blockers off", "stoprule blockers off"),
    ("'stoprule' \"blockers\" off", "stoprule blockers off"),
    # writes to stoprule's files and the harness's wiring
    ("echo 'hook: {mode: observe}' > .stoprule/config.yaml", ".stoprule/config.yaml"),
    ("printf x >> ./.stoprule/policies/pass.yaml", ".stoprule/policies/pass.yaml"),
    ("cat > .stoprule/config.yaml <<EOF\nhook: {mode: observe}\nEOF", ".stoprule/config.yaml"),
    ("rm -rf .stoprule", ".stoprule"),
    ("rm -rf .st*", ".stoprule"),
    ("rm -rf .[s]toprule", ".stoprule"),
    ("rm -rf .{s,x}toprule", ".stoprule"),
    ("rm -rf .", "which holds"),
    ("mv .stoprule /tmp/gone", ".stoprule"),
    ("cd .stoprule && rm config.yaml", ".stoprule/config.yaml"),
    ("d=.stoprule; rm -rf $d", ".stoprule"),
    ('touch "$(echo .stoprule)/x"', "made at run time"),
    ("sed -i s/enforce/observe/ .stoprule/config.yaml", ".stoprule/config.yaml"),
    ("tee -a .claude/settings.json < /tmp/x", ".claude/settings.json"),
    ("cp /tmp/x .claude/settings.local.json", ".claude/settings.local.json"),
    ("cp -r /tmp/x .mcp.json", ".mcp.json"),
    ("ln -sf /tmp/pass.yaml .stoprule/policies/pass.yaml", ".stoprule/policies/pass.yaml"),
    ("rm innocent.yaml", ".stoprule/config.yaml"),
    ("cd ~/.config && rm -rf stoprule", ".config/stoprule"),
    ("echo x > ~/.config/stoprule/policies/pass.yaml", ".config/stoprule"),
    ("echo x > $HOME/.cache/stoprule/hookcfg-1.json", ".cache/stoprule"),
    ("mkdir -p .github/hooks && cp /tmp/h.json .github/hooks/allow.json", ".github/hooks"),
    ("git clean -fdx", "git clean -x"),
    ("git stash --all", "git stash --all"),
    ("git checkout -- .stoprule/config.yaml", ".stoprule/config.yaml"),
    ("find . -name '*.yaml' -delete", "which holds"),
    ("find .stoprule -exec rm {} \\;", ".stoprule"),
    ("dd if=/dev/null of=.stoprule/config.yaml", ".stoprule/config.yaml"),
    ("echo $'\\x2estoprule'; rm -rf $'\\x2estoprule'", ".stoprule"),
    # code that writes them or runs stoprule
    ("python3 evil.py", "evil.py names .claude"),
    ("python3 calls.py", "runs stoprule"),
    ("./evil.sh", "runs `stoprule blockers off`"),
    ("bash evil.sh", "runs `stoprule blockers off`"),
    ("python3 -c 'import os; os.remove(\".stoprule/config.yaml\")'", "names .stoprule"),
    ("python3 -c 'from stoprule.agent.hook.state import set_facts'", "runs stoprule"),
    ("python3 - <<'EOF'\nimport pathlib\npathlib.Path('.claude/settings.json').write_text('{}')\nEOF", "names .claude"),
    ("node -e \"require('fs').writeFileSync('.mcp.json', '{}')\"", "names .mcp.json"),
    ("echo 'unterminated .stoprule", "does not parse"),
]

ALLOWED = [
    "ls -la",
    "git status",
    "git diff .stoprule",
    "cat .stoprule/config.yaml",
    "grep -r hook .claude",
    "echo hello > notes.txt && git add notes.txt && git commit -qm notes",
    "git commit -m 'fix the .stoprule handling'",
    "rm -rf build",
    "mkdir -p src/pkg && touch src/pkg/__init__.py",
    "python3 reads.py",
    "./fine.sh",
    "python -m pytest -q",
    "stoprule facts show",
    "stoprule blockers list",
    "stoprule eval fact.json",
    "stoprule log show s1",
    "stoprule doctor",
    "stoprule blocker --category question",
    "cp .stoprule/config.yaml /tmp/backup.yaml",
    "cp README.md src/",
    "echo ok >&2",
    "echo x 2>/dev/null",
    "npm test",
    "sed -n 1,5p .claude/settings.json",
    "find . -name '*.py'",
    "cd sub && ls",
]


@pytest.mark.parametrize(("command", "named"), REFUSED, ids=[c for c, _ in REFUSED])
def test_refused_commands_name_what_they_touch(repo: Path, command: str, named: str) -> None:
    (repo / "README.md").write_text("# r\n")
    what = _check(repo, command)
    assert what is not None, command
    assert named in what


@pytest.mark.parametrize("command", ALLOWED)
def test_ordinary_work_passes(repo: Path, command: str) -> None:
    (repo / "README.md").write_text("# r\n")
    assert _check(repo, command) is None


WRITES = [
    (".stoprule/policies/pass.yaml", "stoprule's project state"),
    (".stoprule/state/sessions/s1.json", "stoprule's project state"),
    ("sub/.stoprule/config.yaml", "stoprule's project state"),
    (".claude/settings.json", "Claude Code's settings"),
    (".claude/agents/helper.md", "Claude Code's settings"),
    (".mcp.json", "MCP servers"),
    (".codex/hooks.json", "Codex"),
    (".gemini/settings.json", "Gemini CLI"),
    (".gemini/commands/blockers.toml", "Gemini CLI"),  # the user's /blockers
    (".agents/hooks.json", "Antigravity's hooks"),
    (".agents/mcp_config.json", "Antigravity's hooks and MCP servers"),
    (".cursor/hooks.json", "Cursor's hooks"),
    (".github/hooks/stoprule.json", "Copilot's hooks"),
    (".github/mcp.json", "Copilot's MCP servers"),
    (".opencode/plugins/stoprule.js", "OpenCode"),
    ("opencode.json", "OpenCode's config"),
    ("innocent.yaml", "stoprule's project state"),  # a symlink into .stoprule/
    ("../home/.config/stoprule/policies/pass.yaml", "global pack"),
]


@pytest.mark.parametrize(("path", "what"), WRITES)
def test_write_tools_are_refused_on_protected_files(repo: Path, path: str, what: str) -> None:
    found = _check(repo, None, [path], tool="Write")
    assert found is not None and what in found


@pytest.mark.parametrize(
    "path",
    ["src/app.py", "README.md", ".github/workflows/ci.yml", "docs/claude.md", ".cursor/rules/style.mdc", "CLAUDE.md"],
)
def test_write_tools_pass_on_the_projects_files(repo: Path, path: str) -> None:
    assert _check(repo, None, [path], tool="Write") is None


def test_a_patch_is_refused_by_the_files_it_touches(repo: Path) -> None:
    patch = "*** Begin Patch\n*** Update File: src/a.py\n@@\n-x\n+y\n*** Add File: .stoprule/policies/p.yaml\n+x\n"
    assert patch_paths(patch) == ["src/a.py", ".stoprule/policies/p.yaml"]
    found = _check(repo, patch, tool="apply_patch")
    assert found is not None and ".stoprule/policies/p.yaml" in found
    ordinary = "*** Begin Patch\n*** Update File: src/a.py\n@@\n-x\n+y\n*** End Patch"
    assert _check(repo, ordinary, tool="apply_patch") is None


def test_the_places_follow_the_users_directories(tmp_path: Path) -> None:
    env = {
        "HOME": str(tmp_path),
        "XDG_CACHE_HOME": str(tmp_path / "xc"),
        "STOPRULE_STATE_DIR": str(tmp_path / "st"),
        "CLAUDE_CONFIG_DIR": str(tmp_path / "cc"),
        "STOPRULE_LEDGER": str(tmp_path / "l.db"),
    }
    places = Places(env)
    for path, what in [
        ("xc/stoprule/hookcfg.json", "caches"),
        ("st/state/x.json", "state"),
        ("cc/settings.json", "Claude Code"),
        ("l.db", "ledger"),
        ("src/x.py", None),
    ]:
        found = protected(str(tmp_path / path), places)
        assert (found is None) if what is None else (found is not None and what in found), path


def test_code_is_refused_only_when_it_names_a_protected_place_and_writes() -> None:
    assert code_refusal("print(open('.stoprule/config.yaml').read())", "x") is None  # reads
    assert code_refusal("open('notes.txt', 'w').write('x')", "x") is None
    found = code_refusal("import os\nos.replace('x', os.path.join('.stoprule', 'config.yaml'))", "x")
    assert found is not None and ".stoprule" in found.what
    for name in (".agents/hooks.json", ".agents/mcp_config.json"):  # Antigravity's wiring
        found = code_refusal(f"open('{name}', 'w').write('{{}}')", "x")
        assert found is not None and name in found.what, name


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        (["facts", "set", "a=1"], "facts set"),
        (["facts", "--session", "s", "set"], "facts set"),
        (["facts", "show"], None),
        (["blockers", "list"], None),
        (["init", "--harness", "codex"], "init"),
        (["keys", "list"], None),
        (["guard", "status"], None),
        (["guard", "off"], "guard off"),
        (["hook", "codex"], "hook"),
        (["eval", "x.json"], None),
        ([], None),
        (["--version"], None),
    ],
)
def test_the_table_of_mutating_commands(words: list[str], expected: str | None) -> None:
    assert mutating(words) == expected


def test_a_line_with_an_open_quote_is_reported_unparsed() -> None:
    assert commands("echo 'open", "/") is None


def test_redirections_and_descriptors() -> None:
    (cmd,) = commands("echo a 2>&1 >> out.txt 2> err.txt", "/r") or []
    assert cmd.argv == ["echo", "a"]
    assert cmd.writes == ["out.txt", "err.txt"]


def test_unreadable_scripts_are_not_an_error(repo: Path) -> None:
    (repo / "locked.py").write_text("x")
    (repo / "locked.py").chmod(0)
    try:
        if os.access(repo / "locked.py", os.R_OK):  # running as root: nothing is unreadable
            pytest.skip("root reads every file")
        assert _check(repo, "python3 locked.py") is None
    finally:
        (repo / "locked.py").chmod(stat.S_IRUSR | stat.S_IWUSR)
