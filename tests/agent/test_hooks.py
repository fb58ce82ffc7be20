"""Hook internals in-process: adapters (Codex output against its schemas), transcripts,
closure trailers, the state store, provider merging, the loop guard, init, replay."""

from __future__ import annotations

import io
import json
import os
import threading
from pathlib import Path

import pytest

from hookharness import FIXTURES, HARNESSES, payload
from stoprule.agent.hook.adapters import adapter, decode_payload
from stoprule.agent.hook.declare import clear_facts, set_facts
from stoprule.agent.hook.event import Decision, HookEvent, PayloadError
from stoprule.agent.hook.providers import merge
from stoprule.agent.hook.providers.closure_provider import parse_trailer
from stoprule.agent.hook.runner import _guard, run_hook
from stoprule.agent.hook.state import read_facts
from stoprule.agent.hook.transcripts.scan import observations, scan_file
from stoprule.cli.main import run as cli

CODEX_SCHEMAS = Path(__file__).resolve().parents[1] / "fixtures" / "codex-hooks"  # vendored: see its SOURCE.md
DECISIONS = [
    Decision(False),
    Decision(True, "Write the tests next."),
    Decision(False, notice="stoprule: user review needed: pick a license"),
    Decision(True, "Continue.", notice="a note"),
    Decision(True, "   "),  # a blank message must never reach Codex as a blank reason
]


def _schemas(kind: str) -> list[dict]:
    found = sorted(CODEX_SCHEMAS.glob(f"*stop.command.{kind}.schema.json"))
    assert len(found) == 2, f"the Stop and SubagentStop {kind} schemas are vendored in {CODEX_SCHEMAS}"
    return [json.loads(p.read_text()) for p in found]


@pytest.mark.parametrize("decision", DECISIONS, ids=range(len(DECISIONS)))
def test_every_codex_output_validates_against_the_codex_schemas(decision: Decision) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    for name in ("stop", "subagent_stop"):
        mod = adapter("codex")
        out = mod.render(decision, mod.parse(payload("codex", name)))
        for schema in _schemas("output"):
            if out is not None:
                jsonschema.validate(out, schema)
        assert (out or {}).get("decision") != "block" or out["reason"].strip()


def test_codex_fixtures_are_valid_codex_input() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(payload("codex"), json.loads((CODEX_SCHEMAS / "stop.command.input.schema.json").read_text()))
    jsonschema.validate(
        payload("codex", "subagent_stop"),
        json.loads((CODEX_SCHEMAS / "subagent-stop.command.input.schema.json").read_text()),
    )


EXPECTED = {  # block form, allow form, user note form (HARNESSES.md § 0)
    # Claude Code: its Stop additionalContext continues the session (measured on 2.1.332)
    "claude-code": (
        {"hookSpecificOutput": {"hookEventName": "Stop", "additionalContext": "M"}},
        None,
        {"systemMessage": "R"},
    ),  # fmt: skip
    "codex": ({"decision": "block", "reason": "M"}, None, {"systemMessage": "R"}),
    "gemini": ({"decision": "deny", "reason": "M"}, {}, {"systemMessage": "R"}),
    "cursor": ({"followup_message": "M"}, {}, {}),
    "copilot": ({"decision": "block", "reason": "M"}, {}, {}),
}


@pytest.mark.parametrize("harness", HARNESSES)
def test_render_per_harness(harness: str) -> None:
    mod = adapter(harness)
    ev = mod.parse(payload(harness))
    block, allow, note = EXPECTED[harness]
    assert mod.render(Decision(True, "M"), ev) == block
    assert mod.render(Decision(False), ev) == allow
    assert mod.render(Decision(False, notice="R"), ev) == note


@pytest.mark.parametrize(("changes", "name"), [({"prompt_id": None}, "stop"), ({}, "subagent_stop")])
def test_claude_code_blocks_where_additional_context_is_not_known_to_continue(changes: dict, name: str) -> None:
    """Before 2.1.196 (no ``prompt_id``), and for a subagent's stop: ``decision: block``."""
    mod = adapter("claude-code")
    ev = mod.parse({k: v for k, v in {**payload("claude-code", name), **changes}.items() if v is not None})
    assert mod.render(Decision(True, "M"), ev) == {"decision": "block", "reason": "M"}


def test_parse_per_harness() -> None:
    cc = adapter("claude-code").parse(payload("claude-code", "subagent_stop", agent_transcript_path="/a.jsonl"))
    assert (cc.event, cc.turn_id, cc.transcript_path) == (
        "subagent-stop",
        payload("claude-code")["prompt_id"],
        "/a.jsonl",
    )
    cx = adapter("codex").parse(payload("codex"))
    assert (cx.session_id, cx.turn_id, cx.last_message) == ("cx-session-1", "turn-1", "Working on the benchmarks.")
    gm = adapter("gemini").parse(payload("gemini"))
    assert (gm.turn_id, gm.last_message, gm.flag_known) == (None, "Reproduced the crash.", True)
    cu = adapter("cursor").parse(payload("cursor", loop_count=2))
    assert (cu.session_id, cu.loop_count, cu.cwd, cu.stop_hook_active) == ("cu-conv-1", 2, "/work/proj", True)
    cp = adapter("copilot").parse(payload("copilot"))
    assert (cp.session_id, cp.flag_known) == ("cp-session-1", False)


@pytest.mark.parametrize(
    "argv",
    [
        *([h] for h in HARNESSES),
        ["claude-code", "--explain-facts"],
        ["--help"],
        [],
        ["claude"],
        ["codex", "--event", "stop"],
        ["gemini", "--policy", "p"],
    ],
)
def test_the_hooks_usual_line_parses_as_argparse_parses_it(argv: list[str]) -> None:
    """``stoprule hook HARNESS`` skips argparse (cold start): the same namespace; any other line is argparse's."""
    from stoprule.cli import hook_cmd
    from stoprule.cli.main import COMMANDS, command_module
    from stoprule.cli.parsing import parser_for

    simple = hook_cmd.parse_simple(argv)
    if len(argv) == 1 and argv[0] in HARNESSES:
        parser, _ = parser_for(["hook", *argv], COMMANDS, command_module)
        assert simple is not None and vars(simple) == vars(parser.parse_args(["hook", *argv]))
    else:
        assert simple is None


def test_payload_decoding() -> None:
    assert decode_payload(b'\xef\xbb\xbf{"a": 1}') == {"a": 1}  # one BOM stripped
    assert decode_payload(b"  ") == {}
    for bad in (b"[1]", b"{", b"\xff"):
        with pytest.raises(PayloadError):
            decode_payload(bad)


# ------------------------------------------------------------------ transcripts

CASES = {
    "claude-code": ("claude", {"turns": 1, "current_task": "Write parser", "task_state": "complete",
                               "next_task": "Write tests", "next_task_known": True,
                               "available_tasks": ["Write tests"]}),
    "codex": ("codex", {"turns": 1, "current_task": "Run benchmarks", "task_state": "in_progress",
                        "next_task": "Write docs", "next_task_known": True,
                        "available_tasks": ["Run benchmarks", "Write docs"]}),
    "gemini": ("gemini", {"turns": 1, "current_task": "Reproduce the crash", "task_state": "complete",
                          "next_task": "Fix the crash", "next_task_known": True, "available_tasks": ["Fix the crash"]}),
}  # fmt: skip


@pytest.mark.parametrize("harness", list(CASES))
def test_transcript_observations(harness: str) -> None:
    fmt, want = CASES[harness]
    state, notes = scan_file(str(FIXTURES / harness / "transcript.jsonl"), fmt, None)
    obs = observations(state["scan"])
    failed = obs.pop("failed_tools")
    assert obs == want
    assert len(failed) == 1 and failed[0]["error"]
    assert any("incomplete" in n for n in notes)  # the truncated last line


def test_claude_task_tools() -> None:
    state, _ = scan_file(str(FIXTURES / "claude-code" / "transcript_tasks.jsonl"), "claude", None)
    obs = observations(state["scan"])
    assert obs == {
        "turns": 1,
        "current_task": "1",
        "task_state": "complete",
        "next_task": "2",
        "next_task_known": True,
        "available_tasks": ["Document API"],
    }


def test_transcript_is_read_incrementally_and_from_its_end(tmp_path: Path) -> None:
    src = (FIXTURES / "claude-code" / "transcript.jsonl").read_bytes()
    complete = src[: src.rfind(b"\n") + 1]
    t = tmp_path / "t.jsonl"
    t.write_bytes(complete)
    state, _ = scan_file(str(t), "claude", None)
    assert state["offset"] == len(complete)
    prompt = b'{"type":"user","sessionId":"s","message":{"role":"user","content":"next"}}\n'
    with t.open("ab") as fh:
        fh.write(prompt)
    state2, _ = scan_file(str(t), "claude", state)  # reads only the new line
    assert state2["scan"]["turns"] == 2 and state2["offset"] == len(complete) + len(prompt)
    filler = b'{"type":"system","content":"' + b"x" * 1000 + b'"}\n'
    t.write_bytes(filler * 300 + complete)  # longer than max_scan: only the tail is read
    state3, notes = scan_file(str(t), "claude", None, tail=8192, max_scan=100_000)
    assert "turns" not in observations(state3["scan"]) and any("unknown" in n for n in notes)
    assert observations(state3["scan"])["available_tasks"] == ["Write tests"]


def test_unknown_or_missing_transcripts_give_notes_not_fields(tmp_path: Path) -> None:
    from stoprule.agent.hook.providers import Context
    from stoprule.agent.hook.providers.transcript_provider import provide

    ctx = Context(None, str(tmp_path), str(tmp_path), {}, {})
    odd = tmp_path / "odd.jsonl"
    odd.write_text('{"hello": "world"}\n')
    for path in (str(tmp_path / "missing.jsonl"), str(odd)):
        ev = HookEvent("cursor", "stop", transcript_path=path)
        obs, notes = provide(ev, ctx)
        assert obs == {} and notes


# ------------------------------------------------------------------ closure, merge, state, guard


def test_closure_trailer() -> None:
    assert parse_trailer("All done.\nstoprule: closure=waiting_user\n\n")[0] == {"state": "waiting_user"}
    obs, _ = parse_trailer("x\nstoprule: review=Need a key\nstoprule: closure=blocked")
    assert obs == {"state": "blocked", "review": True, "review_reason": "Need a key"}
    assert parse_trailer("stoprule: closure=waiting_user\nbut then more text")[0] == {}  # not at the end
    assert parse_trailer("I will say stoprule: closure=waiting_user later")[0] == {}
    assert parse_trailer("stoprule: closure=Waiting User")[0] == {}


def test_merge_keeps_the_observation_over_a_declaration_and_records_the_conflict() -> None:
    fields = {"transcript.turns": "turn", "git.branch": None}
    fact, prov = merge(
        [("state", {"turn": 7}, []), ("transcript", {"turns": 3}, ["n"]), ("git", {"branch": "m"}, [])], fields
    )
    assert fact == {"turn": 3} and prov.fields["turn"]["provider"] == "transcript"
    assert prov.conflicts == [
        {
            "field": "turn",
            "kept": {"provider": "transcript", "value": 3},
            "ignored": {"provider": "state", "key": "turn", "value": 7},
            "declared": True,
        }
    ]
    assert prov.observed == [{"provider": "git", "key": "branch", "value": "m"}] and prov.notes == {"transcript": ["n"]}


def test_state_store_api_and_concurrent_writers(tmp_path: Path) -> None:
    project = str(tmp_path / ".stoprule")
    set_facts(project, None, {"max_turns": 10, "planId": "p"})
    set_facts(project, "s-1", {"status": "partial", "planId": "q"})
    assert read_facts(project, "s-1") == {"max_turns": 10, "planId": "q", "status": "partial"}
    assert read_facts(project, "other") == {"max_turns": 10, "planId": "p"}
    assert clear_facts(project, "s-1", ["planId"]) == {"status": "partial"}
    assert clear_facts(project, "s-1") == {}
    set_facts(project, "../../etc/x y", {"a": 1})  # any session id is a safe file name
    assert all(p.parent.name == "facts" for p in Path(project).rglob("*.json"))

    def writer(n: int) -> None:
        for i in range(15):
            set_facts(project, "race", {f"k{n}_{i}": i})

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(6)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len(read_facts(project, "race")) == 6 * 15 + 2  # no update lost (plus the two project-wide)


def test_loop_guard_rules() -> None:
    gm = HookEvent("gemini", "stop", session_id="g")
    rec: dict = {}
    seen = []
    for active in (False, True, True, True):
        gm.stop_hook_active = active
        rec, blocks, capped = _guard(rec, gm, True, 3)
        seen.append((blocks, capped))
    assert seen == [(0, False), (1, False), (2, False), (3, True)]
    gm.stop_hook_active = False  # a fresh stop (not a continuation) starts a new series
    assert _guard(rec, gm, True, 3)[1:] == (0, False)
    cp = HookEvent("copilot", "stop", session_id="c", flag_known=False)  # no flag, no turn id
    rec = {}
    for _ in range(3):
        rec, _b, capped = _guard(rec, cp, True, 3)
    assert _guard(rec, cp, True, 3)[2] is True
    cc = HookEvent("claude-code", "stop", session_id="x", turn_id="p1", stop_hook_active=False)
    rec = {"guard": {"turn": "p1", "blocks": 2}}  # flag false on a repeated fire: the turn id decides
    assert _guard(rec, cc, True, 3)[1] == 2
    cc.turn_id = "p2"
    assert _guard(rec, cc, True, 3)[1] == 0


def test_run_hook_in_process_never_raises(tmp_path: Path) -> None:
    env = {"STOPRULE_STATE_DIR": str(tmp_path / "st"), "STOPRULE_NO_CACHE": "1"}
    res = run_hook("codex", None, b"{not json", cwd=str(tmp_path), env=env)
    assert res.output and res.output["systemMessage"].startswith("stoprule could not decide")
    assert "PayloadError" in res.entry["error"] and (tmp_path / "st" / "hook.log").exists()


# ------------------------------------------------------------------ init, facts, replay


def _cli(*args: str, stdin: bytes = b"") -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli(list(args), io.BytesIO(stdin), out, err)
    return code, out.getvalue(), err.getvalue()


def test_the_hook_command_leaves_the_garbage_collector_as_it_found_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``stoprule hook`` runs a stop without cyclic collections, and turns them back on after."""
    import gc

    monkeypatch.setenv("STOPRULE_STATE_DIR", str(tmp_path / "st"))
    monkeypatch.setenv("STOPRULE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    import stoprule.agent.hook.runner as runner

    seen: list[bool] = []
    real = runner.run_hook

    def spy(*args: object, **kwargs: object) -> object:
        seen.append(gc.isenabled())
        return real(*args, **kwargs)

    monkeypatch.setattr(runner, "run_hook", spy)
    assert gc.isenabled()
    for stdin in (json.dumps(payload("claude-code", cwd=str(tmp_path))).encode(), b"{not json"):
        assert _cli("hook", "claude-code", stdin=stdin)[0] == 0
        assert gc.isenabled()
    assert seen == [False, False]


@pytest.mark.parametrize("harness", HARNESSES)
def test_init_merges_backs_up_and_is_idempotent(harness: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--shared`` merges stoprule's entry into the team's file (every other entry kept), saves the
    previous version outside the project (never a ``.bak`` in the tree), changes nothing the
    second time; ``--user`` writes the user's file and no project file."""
    from stoprule.agent.hook.wiring import TARGETS, find_entry

    project, elsewhere = tmp_path / "p", tmp_path / "elsewhere"
    project.mkdir(), elsewhere.mkdir()
    monkeypatch.chdir(project)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    for var in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "COPILOT_HOME"):
        monkeypatch.delenv(var, raising=False)
    t = TARGETS[harness]
    path = Path(t.path(str(project), "shared"))
    path.parent.mkdir(parents=True, exist_ok=True)
    other = {"hooks": {t.event: [{"hooks": [{"type": "command", "command": "other"}]} if t.grouped
                                 else {"command": "other"}]}, "theme": "dark"}  # fmt: skip
    path.write_text(json.dumps(other))
    code, out, _ = _cli("init", "--harness", harness, "--shared", "--dry-run")
    assert code == 0 and "would write" in out and json.loads(path.read_text()) == other
    assert not (project / ".stoprule").exists()
    code, out, _ = _cli("init", "--harness", harness, "--shared", "--command", f"stoprule hook {harness}")
    assert code == 0 and (project / ".stoprule" / "config.yaml").exists()
    new = json.loads(path.read_text())
    assert new["theme"] == "dark" and len(new["hooks"][t.event]) == 2
    assert find_entry(new, t) == f"stoprule hook {harness}"
    saved = [p for p in (tmp_path / "state" / "stoprule" / "init-backups").rglob("*") if p.is_file()]
    assert [json.loads(p.read_text()) for p in saved] == [other]  # the previous version, outside the project
    assert not [p for p in project.rglob("*") if p.name.endswith((".bak", "-tmp")) or p.name.startswith(".tmp-")]
    code, out, _ = _cli("init", "--harness", harness, "--shared", "--command", f"stoprule hook {harness}")
    assert code == 0 and "unchanged" in out and json.loads(path.read_text()) == new
    monkeypatch.chdir(elsewhere)
    code, out, _ = _cli("init", "--harness", harness, "--user", "--command", f"stoprule hook {harness}")
    assert code == 0 and Path(t.path(str(elsewhere), "user")).exists()
    assert list(elsewhere.iterdir()) == []  # --user: no project file
    from stoprule.config.loader import load_config

    load_config(str(project / ".stoprule" / "config.yaml"), sections=("hook", "providers"))


def test_facts_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".stoprule").mkdir()
    code, out, _ = _cli("facts", "set", "--session", "s", "max_turns=5", "status=partial", 'errors=[{"type":"x"}]')
    assert code == 0 and json.loads(out) == {"errors": [{"type": "x"}], "max_turns": 5, "status": "partial"}
    code, out, _ = _cli("facts", "clear", "--session", "s", "errors")
    assert json.loads(out) == {"max_turns": 5, "status": "partial"}
    assert _cli("facts", "set", "oops")[0] == 2


@pytest.mark.integration
def test_replay_and_its_facts_feed_audit_corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("STOPRULE_CACHE_DIR", str(tmp_path / "cache"))
    t = tmp_path / "t.jsonl"
    lines = (FIXTURES / "claude-code" / "transcript.jsonl").read_text().split("\n")
    t.write_text("\n".join([*lines[:-1], lines[1].replace("Build the parser", "Now the docs"), lines[6], ""]))
    code, out, _ = _cli("replay", str(t), "--format", "json")
    rows = [json.loads(x) for x in out.splitlines()]
    assert code == 0 and [r["boundary"] for r in rows] == [1, 2]
    assert rows[0]["verdict"]["reason"] == "available_tasks" and rows[0]["fact"]["turn"] == 1
    code, out, _ = _cli("replay", str(t), "--format", "summary")
    assert json.loads(out) == {
        "stops": 2,
        "blocked": 2,
        "allowed": 0,
        "blocked_by_rule": {"progress.available_tasks": 2},
    }
    code, facts, _ = _cli("replay", str(t), "--format", "facts")
    (tmp_path / "facts.ndjson").write_text(facts)
    code, out, err = _cli("audit", "--corpus", str(tmp_path / "facts.ndjson"), "--format", "json")
    assert code in (0, 1), err
    assert json.loads(out)["corpus"]["evaluated"] == 2
    assert _cli("replay", str(tmp_path / "nope.jsonl"))[0] == 2
    assert os.path.exists(t)


@pytest.mark.parametrize("fmt", ["pretty", "summary", "json"])
def test_replay_in_processes_prints_what_one_process_prints(fmt: str, run_cli, tmp_path: Path) -> None:  # noqa: ANN001
    """``replay --jobs 2`` spreads the transcripts over two processes: same stdout and stderr,
    in the same order, same exit code (an unreadable transcript among them)."""
    lines = (FIXTURES / "claude-code" / "transcript.jsonl").read_text().split("\n")
    paths = []
    for i in range(4):
        t = tmp_path / f"t{i}.jsonl"
        extra = [lines[1].replace("Build the parser", f"Step {j}") for j in range(i)]
        t.write_text("\n".join([*lines[:-1], *extra, lines[6], ""]))
        paths.append(str(t))
    paths.insert(2, str(tmp_path / "nope.jsonl"))
    one = run_cli("replay", *paths, "--format", fmt, cwd=tmp_path)
    two = run_cli("replay", *paths, "--format", fmt, "--jobs", "2", cwd=tmp_path)
    assert one.returncode == two.returncode == 2
    assert one.stdout == two.stdout and one.stderr == two.stderr
    assert "nope.jsonl" in one.stderr and one.stdout
    if fmt == "summary":
        assert json.loads(one.stdout)["stops"] >= 4 + 1 + 2 + 3


def test_capture_runs_a_command_as_subprocess_run_does(tmp_path: Path) -> None:
    """The git provider's runner: exit code, both streams in full (past a pipe's buffer), stdin at
    end of file, and the signal dispositions subprocess gives a child."""
    import subprocess
    import sys

    from stoprule._util.command import capture

    big = "import sys; sys.stdout.write('o' * 300000); sys.stderr.write('e' * 200000); sys.exit(sys.stdin.read() or 3)"
    assert capture([sys.executable, "-c", big], 60) == (3, b"o" * 300000, b"e" * 200000)
    if os.path.exists("/proc/self/status"):  # blocked and ignored signals as subprocess leaves them

        def masks(out: bytes) -> list[int]:  # signals 1-31 (glibc's spawn ignores its own 32, 33 in the child)
            return [int(line.split()[1], 16) & 0x7FFFFFFF for line in out.splitlines()]

        argv = ["sh", "-c", "grep -E '^Sig(Ign|Blk)' /proc/self/status"]
        theirs = subprocess.run(argv, capture_output=True, stdin=subprocess.DEVNULL).stdout
        assert masks(capture(argv, 60)[1]) == masks(theirs) and len(masks(theirs)) == 2
    with pytest.raises(FileNotFoundError):
        capture(["stoprule-no-such-program"], 60)
    env = {**os.environ, "STOPRULE_CAPTURE_TEST": "x"}
    show = [sys.executable, "-c", "import os; print(os.environ['STOPRULE_CAPTURE_TEST'])"]
    assert capture(show, 60, env)[1] == b"x\n"


def test_capture_kills_a_command_past_its_deadline(tmp_path: Path) -> None:
    import sys

    from stoprule._util.command import CommandTimeout, capture

    pid_file = tmp_path / "pid"
    code = f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(120)"
    with pytest.raises(CommandTimeout):
        capture([sys.executable, "-c", code], 1.5)
    with pytest.raises(ProcessLookupError):  # killed and reaped, not left running
        os.kill(int(pid_file.read_text()), 0)


def test_scan_state_keeps_the_last_fifty_tool_names_in_order() -> None:
    """``Scan.state`` (saved at every stop, and built at every stop of a replay) keeps the 50
    tool names seen last, oldest first, read from the end whatever the scan has seen."""
    from stoprule.agent.hook.transcripts.scan import Scan

    scan = Scan("claude", full=True)
    for n in (0, 1, 49, 50, 51, 120, 5000):
        scan.names = {f"id{i}": f"tool{i % 7}" for i in range(n)}
        assert scan.state()["names"] == dict(list(scan.names.items())[-50:])
