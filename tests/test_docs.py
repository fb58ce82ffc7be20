"""Every command and output shown in README.md and docs/*.md is run here.

* ``console`` blocks are transcripts (``$ `` lines are commands, ``\\`` continues one, the lines
  after a command are its output: stdout and stderr merged). Each doc's blocks run in order in
  one fresh sandbox (a temp dir with HOME, STOPRULE_CACHE_DIR and XDG_* inside it; the venv's
  ``bin`` first on PATH; ``examples/`` copied in; a ``jq`` shim where jq is missing). The bundled
  pack is found by the package itself. ``$ cat FILE`` followed by content declares the fixture
  FILE (written, then trivially matched). A ``yaml`` or ``bash`` block whose first line is
  ``# PATH`` (``# demo/schema.yaml``, ``# decide.sh FACT: ...``) is written to PATH first.
  Files the prose implies without showing them come from ``FIXTURES`` and ``PACKS`` below.
* Output is compared line by line (trailing whitespace ignored) with three elisions:
  ``sha256:…`` matches any 64-hex digest; a line ``...`` matches any number of lines; any
  other ``…`` matches any text within its line (timings ``… s``, machine paths ``…/policies``).
* ``bash``/``sh`` blocks: every command line runs in a sandbox, in one shell per block (so
  variables carry from line to line); no ``stoprule`` run may exit 2 or print a traceback.
  Lines that cannot run in a test are in ``SKIP`` with the reason; README's set-up lines are
  checked against ``.ci/run`` instead (``test_readme_setup_is_what_ci_runs``).
* ``python`` blocks run in a subprocess in a sandbox and must not raise; a block written as
  an interactive session (``>>>``) is run as a doctest, so its outputs are compared too.
* policy-language.md §18: every ``x.yaml``-fragment with its diagnostic is compiled and the
  diagnostic compared (in-process, with the renderer ``stoprule check`` prints with).

The rules are documented for writers in docs/cli.md, "Examples in these docs are tested".
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from docblocks import REPO, Block, blocks, diff, make_sandbox, matches, transcript
from warmcli import running

DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
BUNDLED = REPO / "policies"

# --- fixtures the prose implies -----------------------------------------------------------------

# The continuity fact of cli.md ("$ cat fact.json"): a retryable block, so ledger examples work.
_FACT = (REPO / "examples" / "task-boundary-stop.json").read_text()
_FIXED = json.dumps({**json.loads(_FACT), "replyClosureState": "waiting_user"}) + "\n"

# Transcripts for agents.md's replay examples: the hook tests' synthetic ones, in the harnesses'
# formats (each but the task-list one ends with a line of an unknown type and a truncated line).
_HOOKS = REPO / "tests" / "fixtures" / "hooks"
_CLAUDE_SESSION = "~/.claude/projects/-home-me-proj/cc-session-1.jsonl"


def _payload(work: Path) -> str:
    """agents.md's ``payload.json``: Claude Code's stop payload for a session in the sandbox."""
    payload = json.loads((_HOOKS / "claude-code" / "stop.json").read_text())
    return json.dumps({**payload, "cwd": str(work), "transcript_path": _CLAUDE_SESSION}, indent=2) + "\n"


#: doc -> {path: content, or content made from the work directory}: files a doc uses without
#: showing them. A path starting with ``~/`` is in the sandbox's HOME.
FIXTURES: dict[str, dict[str, str | Callable[[Path], str]]] = {
    "README.md": {
        "fact.json": _FACT,
        "fixed.json": _FIXED,
        "facts.ndjson": (REPO / "examples" / "facts.ndjson").read_text(),
        "big.ndjson": (REPO / "examples" / "facts.ndjson").read_text() * 50,
    },
    "cli.md": {
        "done.json": '{"status": "implemented"}\n',
        "partial.json": '{"status": "partial", "task_id": "885"}\n',
        # a bare word where a value goes: the same JSON error message on every Python 3.10-3.13
        "broken.json": '{\n  "status": partial,\n  "task_id": "885"\n}\n',
    },
    "ledger.md": {"fact.json": _FACT, "fixed.json": _FIXED},
    "agents.md": {
        # "stoprule hook claude-code --explain-facts < payload.json"
        "payload.json": _payload,
        # "stoprule replay ~/.claude/projects/-home-me-proj/*.jsonl": two Claude Code sessions
        _CLAUDE_SESSION: (_HOOKS / "claude-code" / "transcript.jsonl").read_text(),
        _CLAUDE_SESSION.replace("-1.", "-2."): (_HOOKS / "claude-code" / "transcript_tasks.jsonl").read_text(),
        # "stoprule replay rollout.jsonl": a Codex rollout; "session.jsonl": a Gemini CLI chat
        "rollout.jsonl": (_HOOKS / "codex" / "transcript.jsonl").read_text(),
        "session.jsonl": (_HOOKS / "gemini" / "transcript.jsonl").read_text(),
    },
    "testing.md": {
        "cases/regressions.yaml": "cases:\n- name: done\n  fact: {status: implemented}\n  expect: {verdict: pass}\n",
        "more/partial.yaml": "cases:\n- name: partial\n  fact: {status: partial}\n  expect: {verdict: auto_continue}\n",
    },
}


def _edited(old: str, new: str, file: str) -> Callable[[Path], None]:
    def edit(pack: Path) -> None:
        text = (pack / file).read_text()
        assert old in text, f"fixture edit: {old!r} not in {file}"
        (pack / file).write_text(text.replace(old, new, 1))

    return edit


def _none(pack: Path) -> None:
    pass


#: doc -> {directory: edit}: copies of the bundled pack (with its tests/) that a doc names.
PACKS: dict[str, dict[str, Callable[[Path], None]]] = {
    "README.md": {
        "old-pack": _none,
        # any verdict change will do; this one is quick to describe
        "new-pack": _edited(
            "id: uncommitted_work\n    priority: 300", "id: uncommitted_work\n    priority: 450", "progress.yaml"
        ),
    },
    "audit.md": {
        # "progress.yaml: uncommitted_work moved to priority 400"
        "pack": _edited(
            "id: uncommitted_work\n    priority: 300", "id: uncommitted_work\n    priority: 400", "progress.yaml"
        ),
        # "the catch-all's `when: true` replaced by `{status: implemented}`"
        "gap": _edited("priority: 0\n    when: true", "priority: 0\n    when: {status: implemented}", "progress.yaml"),
        "old": _none,
        # "new: timeout moved from soft to hard"
        "new": lambda p: _move_timeout(p),
    },
    "testing.md": {"policies": _none, ".stoprule/policies": _none},
}


def _move_timeout(pack: Path) -> None:
    text = (pack / "vocabulary.yaml").read_text()
    line = "    timeout: Operation exceeded its time limit\n"
    assert line in text and re.search(r"^  hard:.*\n", text, re.M)
    text = re.sub(r"^  hard:.*\n", lambda m: m[0] + line, text.replace(line, ""), count=1, flags=re.M)
    (pack / "vocabulary.yaml").write_text(text)


#: Lines of bash blocks that are not run, with the reason. Keys: (doc, line as written).
SKIP: dict[tuple[str, str], str] = {
    (
        "README.md",
        "python3 -m venv .venv && . .venv/bin/activate && pip install -e '.[dev]' && python -m compileall -q src && "
        "stoprule eval examples/soft-blocker.json --format pretty",
    ): "set-up: .ci/run runs it (test_readme_setup_is_what_ci_runs); its stoprule part runs below",
    ("README.md", "python -m pytest"): "the test suite itself: .ci/run runs it (test_readme_setup_is_what_ci_runs)",
    ("README.md", "$EDITOR .stoprule/policies/vocabulary.yaml"): "interactive editor",
    ("testing.md", "stoprule test --watch"): "runs until Ctrl-C (tests/cli/test_author_tools.py runs it)",
}
#: Whole bash blocks that are not run (a synopsis with placeholders), by their first line.
SKIP_BLOCKS: dict[tuple[str, str], str] = {
    (
        "ledger.md",
        "stoprule eval --run RUN_ID fact.json",
    ): "synopsis: RUN_ID, TOKEN, KEY_ID and [a|b] are placeholders; the retry-token block below runs for real",
    (
        "agents.md",
        "python tests/harness/install.py",
    ): "the real-harness tier: npm installs and minutes of real sessions; .ci/run runs it (pytest -m harness)",
}
#: bash block set-ups: (doc, line) -> shell run after that line (its output is in "$LAST_OUT").
AFTER: dict[tuple[str, str], str] = {
    ("README.md", "stoprule eval --run run-42 fact.json"): 'TOKEN=$(jq -r .retry_token "$LAST_OUT")',
}
#: Output shown without its command (untagged or ``text`` blocks), by (doc, how the block
#: starts): the fixtures the prose describes, the command that prints it, and whether the block is
#: an excerpt (``...`` assumed before and after).
TEXT_OUTPUTS: dict[tuple[str, str], tuple[dict[str, str], str, bool]] = {
    ("testing.md", "bad.yaml:4:14: cases.unknown_key:"): (
        {"bad.yaml": "cases:\n  - name: wrong verdict\n    fact: {status: implemented}\n    expect: {verdikt: pass}\n"},
        "stoprule test bad.yaml",
        False,
    ),
    ("testing.md", "bad.yaml:2: FAIL wrong verdict:"): (
        {
            "bad.yaml": "cases:\n  - name: wrong verdict\n    fact: {taskState: complete, nextTaskKnown: true,"
            " sameApprovedPlan: true, taskBoundaryStop: true}\n    expect: {verdict: pass, ok: true}\n"
        },
        "stoprule test bad.yaml",
        False,
    ),
    ("testing.md", "infeasible conditions (not counted in MC/DC):"): (
        # "the default pack plus a file zz_redundant.yaml whose rule redundant has when: ... on line 4"
        {
            "pack/zz_redundant.yaml": "rules:\n  - id: redundant\n    priority: 1\n"
            "    when: {all: [{task_id: {exists: true}}, {task_id: TASK-X}]}\n"
            "    verdict: pass\n    reason: redundant\n    message: redundant\n"
        },
        "stoprule test --policy pack --coverage",
        True,
    ),
    ("testing.md", "uncovered rules (no fact made them win):"): (
        {
            "pack/extra.yaml": "# a rule no case exercises\nrules:\n  - id: untested\n    priority: 1\n"
            "    when: {task_id: TASK-NEVER}\n"
            "    verdict: pass\n    reason: untested\n    message: untested\n"
        },
        "stoprule test --policy pack --coverage",
        True,
    ),
}
#: python blocks: names a snippet uses without defining them, by the doc.
PRELUDE: dict[str, str] = {
    "README.md": 'facts = [{"status": "implemented"}, {"status": "done"}]\n',
}

# --- helpers -----------------------------------------------------------------------------------


def _doc_blocks(doc: Path) -> list[Block]:
    return blocks(doc)


@pytest.fixture(scope="session")
def warm() -> Iterator[str | None]:
    """One warm stoprule server per test process (tests/warmcli.py): the docs' commands skip the
    interpreter start and imports, each still a process of its own (``STOPRULE_TESTS_COLD=1``:
    the console script itself, a new interpreter each time)."""
    if os.environ.get("STOPRULE_TESTS_COLD"):
        yield None
        return
    with running() as path:
        yield path


@pytest.fixture(scope="session")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One compiled-pack cache for every sandbox of a test process: the packs the docs use are
    compiled once, not once per doc (the cache's entries are keyed by the pack's content)."""
    return tmp_path_factory.mktemp("docs-cache")


def _setup(doc: Path, root: Path, cache: Path, warm: str | None, *, wrap: bool = False) -> tuple[Path, dict[str, str]]:
    work, env = make_sandbox(root, wrap_stoprule=wrap, cache=cache, warm=warm)
    for rel, content in FIXTURES.get(doc.name, {}).items():
        path = Path(env["HOME"], rel[2:]) if rel.startswith("~/") else work / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content if isinstance(content, str) else content(work))
    for rel, edit in PACKS.get(doc.name, {}).items():
        shutil.copytree(BUNDLED, work / rel)
        edit(work / rel)
    return work, env


def _declared_path(block: Block) -> str | None:
    """``# demo/schema.yaml`` or ``# decide.sh FACT: ...`` on the first line: a file to write."""
    m = re.match(r"# ([\w./-]+\.(?:ya?ml|sh))\b", block.text)
    return m[1] if m else None


def _run(cmd: str, work: Path, env: dict[str, str], timeout: float = 60) -> str:
    proc = subprocess.run(
        ["bash", "-c", cmd],
        cwd=work,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=timeout,
    )
    return proc.stdout


#: (doc, block language) whose run takes seconds (many commands, an audit over a corpus): the
#: integration tier (.ci/run) runs them; the default run keeps the other docs' blocks of each kind.
INTEGRATION = {
    ("README.md", "bash"),
    ("agents.md", "bash"),
    ("testing.md", "bash"),
    ("audit.md", "console"),
    ("cli.md", "console"),
}


def _docs_with(lang: str) -> list[Any]:
    return [
        pytest.param(d, marks=pytest.mark.integration) if (d.name, lang) in INTEGRATION else d
        for d in DOCS
        if any(b.lang == lang for b in _doc_blocks(d))
    ]


# --- console transcripts -----------------------------------------------------------------------


@pytest.mark.parametrize("doc", _docs_with("console"), ids=lambda d: d.name)
def test_console_transcripts(doc: Path, tmp_path: Path, cache: Path, warm: str | None) -> None:
    work, env = _setup(doc, tmp_path, cache, warm)
    failures: list[str] = []
    for block in _doc_blocks(doc):
        path = _declared_path(block)
        if path and block.lang in ("yaml", "bash", "sh"):
            (work / path).parent.mkdir(parents=True, exist_ok=True)
            (work / path).write_text(block.text)
        if block.lang != "console":
            continue
        for step in transcript(block):
            if step.fixture:
                (work / step.fixture).parent.mkdir(parents=True, exist_ok=True)
                (work / step.fixture).write_text("\n".join(step.expected) + "\n")
                continue
            actual = _run(step.command, work, env).splitlines()
            if not matches(step.expected, actual):
                failures.append(f"{doc.name}:{step.line}: $ {step.command}\n{diff(step.expected, actual)}")
    assert not failures, "\n\n".join(["doc transcripts disagree with real runs:", *failures])


def test_transcripts_are_console_blocks() -> None:
    """A ``$ stoprule`` line outside a console block would escape the harness."""
    stray = [
        f"{b.id} ({b.lang or 'untagged'})"
        for d in DOCS
        for b in _doc_blocks(d)
        if b.lang != "console" and re.search(r"^\$ stoprule", b.text, re.M)
    ]
    assert not stray, f"transcripts must be ```console blocks: {stray}"


@pytest.mark.parametrize("key", list(TEXT_OUTPUTS), ids=lambda k: f"{k[0]}:{k[1][:30]}")
def test_text_outputs(key: tuple[str, str], tmp_path: Path, cache: Path, warm: str | None) -> None:
    doc = next(d for d in DOCS if d.name == key[0])
    block = next((b for b in _doc_blocks(doc) if b.lang in ("", "text") and b.text.startswith(key[1])), None)
    assert block is not None, f"{key}: no such block any more (update TEXT_OUTPUTS)"
    files, command, excerpt = TEXT_OUTPUTS[key]
    work, env = make_sandbox(tmp_path, cache=cache, warm=warm)
    for rel, content in files.items():
        if rel.startswith("pack/") and not (work / "pack").exists():
            shutil.copytree(BUNDLED, work / "pack")
        (work / rel).parent.mkdir(parents=True, exist_ok=True)
        (work / rel).write_text(content)
    expected = block.text.splitlines()
    if excerpt:
        expected = ["...", *expected, "..."]
    actual = _run(command, work, env).splitlines()
    assert matches(expected, actual), f"{block.id}: $ {command}\n{diff(expected, actual)}"


# --- bash blocks -------------------------------------------------------------------------------


def _bash_lines(block: Block) -> list[str]:
    """Command lines of a bash block: comments and blank lines out, continuations joined."""
    out: list[str] = []
    pending = ""
    for line in block.text.splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        pending += line
        if pending.endswith("\\"):
            pending += "\n"  # the shell joins the lines (backslash-newline)
            continue
        out.append(pending)
        pending = ""
    return out


def _strip_comment(line: str) -> str:
    """The line without a trailing ``# comment`` (the docs' comments follow two spaces)."""
    return re.sub(r"\s+#\s.*$", "", line).strip()


_CONTROL = re.compile(r"^\s*(if|then|else|elif|fi|case|esac|for|while|do|done)\b|;;")


@pytest.mark.parametrize("doc", _docs_with("bash"), ids=lambda d: d.name)
def test_bash_blocks(doc: Path, tmp_path: Path, cache: Path, warm: str | None) -> None:
    failures: list[str] = []
    skipped: list[str] = []
    work, env = _setup(doc, tmp_path / "sandbox", cache, warm, wrap=True)  # one sandbox: blocks run in order
    for n, block in enumerate(b for b in _doc_blocks(doc) if b.lang in ("bash", "sh")):
        lines = _bash_lines(block)
        if not lines:
            continue
        if (doc.name, _strip_comment(lines[0])) in SKIP_BLOCKS:
            skipped.append(block.id)
            continue
        root = tmp_path / f"b{n}"
        root.mkdir()
        script = ["set +e", f'D="{root}"', f'export DOCS_LOG="{root}/stoprule-runs.log"']
        scripted = _declared_path(block) is not None or any(_CONTROL.search(x) for x in lines)
        if scripted:  # a script (decide.sh) or control flow: run the block whole, with a fact
            (work / "script.sh").write_text(block.text)
            script.append('bash script.sh fact.json > "$D/out.0" 2>&1')
            if not (work / "fact.json").exists():
                (work / "fact.json").write_text(_FACT)
        else:
            for i, line in enumerate(lines):
                key = (doc.name, _strip_comment(line))
                if key in SKIP:
                    if "stoprule eval examples/" in line:  # README's set-up: run its stoprule part
                        line = line[line.index("stoprule eval examples/") :]
                    else:
                        continue
                script.append(f'{{ {line}\n}} > "$D/out.{i}" 2>&1; LAST_OUT="$D/out.{i}"')
                if key in AFTER:
                    script.append(AFTER[key])
        proc = subprocess.run(
            ["bash", "-c", "\n".join(script)],
            cwd=work,
            env=env,
            text=True,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=120,
        )
        outputs = "\n".join(p.read_text(errors="replace") for p in sorted(root.glob("out.*")))
        log = root / "stoprule-runs.log"
        runs = [r.split("\t", 1) for r in log.read_text().splitlines()] if log.exists() else []
        bad = [f"exit {rc}: stoprule {args}" for rc, args in runs if rc == "2" or int(rc) > 2]
        if "Traceback" in outputs + proc.stderr:
            bad.append("a traceback")
        if not runs:
            bad.append("no stoprule command ran")
        if bad:
            failures.append(f"{block.id}:\n  " + "\n  ".join(bad) + f"\n--- output:\n{outputs}{proc.stderr}")
    assert not failures, "\n\n".join(["bash blocks that fail:", *failures])


def test_skip_lists_name_real_lines() -> None:
    """Every allow-list entry matches a line of its doc (no stale exemptions)."""
    present = {
        (d.name, _strip_comment(x))
        for d in DOCS
        for b in _doc_blocks(d)
        if b.lang in ("bash", "sh")
        for x in _bash_lines(b)
    }
    stale = [k for k in [*SKIP, *SKIP_BLOCKS, *AFTER] if k not in present]
    assert not stale, f"allow-list entries that match no doc line: {stale}"


def test_readme_setup_is_what_ci_runs() -> None:
    """README's install and test commands are the ones .ci/run runs (venv paths aside)."""
    readme = (REPO / "README.md").read_text()
    ci = (REPO / ".ci" / "run").read_text()
    ci_cmds = {re.sub(r'"\$\w+/bin/|"\$py"|--quiet ', "", x).strip() for x in ci.splitlines()}
    ci_cmds = {re.sub(r'(?<![\w$])([\w-]+)" ', r"\1 ", x) for x in ci_cmds}
    setup = next(b for b in blocks(REPO / "README.md") if "pip install" in b.text)
    lines = _bash_lines(setup)
    install = [c.strip() for c in lines[0].split("&&")]
    assert install[0] == "python3 -m venv .venv" and "-m venv" in ci
    assert install[1] == ". .venv/bin/activate"
    assert install[2] == "pip install -e '.[dev]'"
    assert any("python -m pip install -e '.[dev]'" in c for c in ci_cmds)  # CI runs the installs side by side
    assert install[3] == "python -m compileall -q src"  # the bytecode: no start compiles it (README, "Bytecode")
    assert any("python -m compileall -q src" in c for c in ci_cmds)
    assert _strip_comment(lines[1]) == "python -m pytest" and "python -m pytest" in ci_cmds
    assert "python -m pytest -m integration" in readme and "-m torture" in readme
    assert any(c.startswith(("python -m pytest -m torture", "python -m pytest -m 'torture")) for c in ci_cmds)
    assert any(c.startswith("python -m pytest -m integration") for c in ci_cmds)


# --- python blocks -----------------------------------------------------------------------------


@pytest.mark.parametrize("doc", _docs_with("python"), ids=lambda d: d.name)
def test_python_blocks(doc: Path, tmp_path: Path, cache: Path, warm: str | None) -> None:
    failures = []
    for n, block in enumerate(b for b in _doc_blocks(doc) if b.lang == "python"):
        work, env = _setup(doc, tmp_path / f"p{n}", cache, warm)
        if block.text.lstrip().startswith(">>>"):
            (work / "session.txt").write_text(block.text)
            code = (
                "import doctest, sys\n"
                "r = doctest.testfile('session.txt', module_relative=False, report=True,"
                " optionflags=doctest.ELLIPSIS)\n"
                "sys.exit(1 if r.failed else 0)\n"
            )
        else:
            code = PRELUDE.get(doc.name, "") + block.text
        proc = subprocess.run(
            [sys.executable, "-c", code], cwd=work, env=env, text=True, capture_output=True, timeout=60
        )
        if proc.returncode:
            failures.append(f"{block.id}:\n{proc.stdout}{proc.stderr}")
    assert not failures, "\n\n".join(["python blocks that fail:", *failures])


def test_yaml_blocks_parse() -> None:
    bad = []
    for d in DOCS:
        for b in _doc_blocks(d):
            if b.lang == "yaml":
                try:
                    yaml.safe_load(b.text)
                except yaml.YAMLError as exc:
                    bad.append(f"{b.id}: {exc}")
    assert not bad


# --- jq shim -----------------------------------------------------------------------------------


def _jq_filters() -> set[str]:
    found = set()
    for d in DOCS:
        for b in _doc_blocks(d):
            if b.lang not in ("console", "bash", "sh"):
                continue
            for m in re.finditer(r"\bjq((?:\s+-[rc]+)*)\s+('(?:[^']*)'|[^\s)]+)", b.text):
                found.add(shlex.split(m[2])[0])
    return found


def test_jq_shim_knows_every_filter_the_docs_use() -> None:
    from jq_shim import compile_filter

    filters = _jq_filters()
    assert filters and all(compile_filter(f) is not None for f in filters), filters
    jq = shutil.which("jq")
    if jq is None:
        return
    sample = (
        '{"ok": true, "verdict": "pass", "reason": "ok", "rule": "progress.ok", "stop": "allow",'
        ' "message": "m", "requires_user_review": false, "review_reason": null, "high_risk_stop": null,'
        ' "retry_token": "t", "matched": []}\n{"error": {"code": "fact.enum", "line": 2}}\n'
        '{"requires_user_review": true, "review_reason": "why", "high_risk_stop": "x"}\n'
    )
    from jq_shim import run

    for f in sorted(filters):
        for flags in ([], ["-r"], ["-c"]):
            want = subprocess.run([jq, *flags, f], input=sample, capture_output=True, text=True)
            assert run([*flags, f], sample)[1] == want.stdout, (f, flags)


# --- policy-language.md §18: fragments and their diagnostics ----------------------------------

_DIAG = re.compile(r"^[\w.-]+:\d+:\d+: [\w.]+: ")


#: §18 examples that crash the compiler today instead of giving their diagnostic: code -> why.
#: Not strict: once fixed, the diagnostic shown is checked like every other.
KNOWN_CRASHES = {
    "schema.list_items": "issue 11: a list field without items gives an AssertionError (fixed on another branch)",
}


#: Diagnostics whose message is a dependency's own wording (PyYAML's parser): only the place
#: and the code are compared, so another PyYAML release cannot fail the docs.
DEPENDENCY_WORDING = ("yaml.syntax",)


def _wording_elided(lines: list[str]) -> list[str]:
    out = []
    for line in lines:
        m = _DIAG.match(line)
        code = m[0].split(": ")[1] if m else None
        out.append(m[0] + "…" if code in DEPENDENCY_WORDING else line)
    return out


def _diagnostic_examples() -> list[tuple[Block, str, str]]:
    """(expected text block, how the pack is made, fragment) for each example of §18."""
    doc = REPO / "docs" / "policy-language.md"
    all_blocks = _doc_blocks(doc)
    out = []
    for i, b in enumerate(all_blocks):
        if b.lang != "text" or not _DIAG.match(b.text):
            continue
        prose = b.before
        if i and all_blocks[i - 1].lang == "yaml" and "x.yaml" in all_blocks[i - 1].before.splitlines()[-1]:
            fragment = all_blocks[i - 1].text
            prose = all_blocks[i - 1].before
        else:
            m = re.search(r"`x\.yaml`(?:[^`]*?): `([^`]+)`", prose)
            fragment = m[1] if m else ""
        out.append((b, prose.strip().splitlines()[-1] if prose.strip() else "", fragment))
    return out


def _demo_pack(root: Path) -> Path:
    demo = root / "demo"
    demo.mkdir(parents=True)
    for b in _doc_blocks(REPO / "docs" / "policy-language.md"):
        path = _declared_path(b)
        if b.lang == "yaml" and path and path.startswith("demo/"):
            (root / path).write_text(b.text)
    return demo


def _pack_for(how: str, fragment: str, root: Path) -> Path:
    if "pack.not_found" in how or "missing-dir" in how:
        return root / "missing-dir"
    if "empty-dir" in how:
        (root / "empty-dir").mkdir()
        return root / "empty-dir"
    if "2^13" in how:  # "all: of 13 any: pairs such as {any: [{turn: 0}, {turn: 1}]}"
        pairs = ", ".join(f"{{any: [{{turn: {2 * k}}}, {{turn: {2 * k + 1}}}]}}" for k in range(13))
        fragment = f"rules: [{{id: t, priority: 1, when: {{all: [{pairs}]}}, verdict: pass, reason: t, message: t}}]"
    alone = "alone in its pack" in how
    pack = root / "pack" if alone else _demo_pack(root)
    pack.mkdir(exist_ok=True)
    # "saved as Latin-1 (`pack: {name: café}`)"
    data = fragment.encode("latin-1") if "Latin-1" in how else fragment.encode()
    (pack / "x.yaml").write_bytes(data + b"\n")
    return pack


def test_policy_language_diagnostics(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from stoprule.diagnostics import PolicyError
    from stoprule.engine.build import compile_pack

    examples = _diagnostic_examples()
    assert len(examples) >= 35, "the §18 examples were not found"
    failures = []
    for n, (block, how, fragment) in enumerate(examples):
        root = tmp_path / f"d{n}"
        root.mkdir()
        if "Latin-1" in how:
            fragment = "pack: {name: café}"
        elif not fragment and "2^13" not in how and "missing-dir" not in how and "empty-dir" not in how:
            failures.append(f"{block.id}: cannot tell which fragment this diagnostic is for: {how!r}")
            continue
        pack = _pack_for(how, fragment, root)
        monkeypatch.chdir(root)
        try:
            compile_pack(Path(pack.name))
            actual = ["(compiles)"]
        except PolicyError as exc:
            actual = exc.render().splitlines()
        except Exception as exc:  # noqa: BLE001 - a crash is a finding, reported with the others
            actual = [f"{type(exc).__name__}: {exc}"]
            code = block.text.split(": ")[1]
            if code in KNOWN_CRASHES:
                continue
        expected, actual = _wording_elided(block.text.splitlines()), _wording_elided(actual)
        if not matches(expected, actual):
            failures.append(f"{block.id}: {fragment}\n{diff(expected, actual)}")
    assert not failures, "\n\n".join(["§18 diagnostics disagree with the compiler:", *failures])
