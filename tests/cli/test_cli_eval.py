"""`stoprule eval` in process (``run_cli``): exit codes, envelopes, bad input, NDJSON, pack selection."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import stoprule
from stoprule.engine import speedups
from stoprule.engine.build import compile_pack
from tiers import first_by_default

ENVELOPE_KEYS = [
    "ok",
    "verdict",
    "reason",
    "rule",
    "stop",
    "message",
    "requires_user_review",
    "review_reason",
    "high_risk_stop",
    "matched",
    "policy",
]
MIB = 1 << 20
OK_MESSAGE = "message: Nothing requires further work; stopping is fine."


def no_traceback(proc: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in proc.stdout
    assert "Traceback" not in proc.stderr


def out_lines(proc: subprocess.CompletedProcess) -> list[dict]:
    return [json.loads(ln) for ln in proc.stdout.splitlines()]


def one(proc: subprocess.CompletedProcess) -> dict:
    lines = out_lines(proc)
    assert len(lines) == 1, proc.stdout
    return lines[0]


@pytest.fixture(scope="module")
def default_digest(default_pack: Path) -> str:
    return compile_pack(default_pack).checked.digest


# ---------------------------------------------------------------- exit codes 0 and 1


def test_ok_fact_exits_0(run_cli, default_digest: str) -> None:
    proc = run_cli("eval", input='{"status": "implemented"}')
    no_traceback(proc)
    assert proc.returncode == 0, proc.stderr
    v = one(proc)
    assert (v["ok"], v["verdict"], v["reason"], v["rule"], v["stop"]) == (True, "pass", "ok", "progress.ok", "allow")
    assert v["policy"] == default_digest
    assert proc.stderr == ""


def test_not_ok_fact_exits_1(run_cli) -> None:
    proc = run_cli("eval", input='{"status": "blocked", "task_id": "T7"}')
    no_traceback(proc)
    assert proc.returncode == 1
    v = one(proc)
    assert (v["ok"], v["verdict"], v["reason"], v["stop"]) == (False, "user_review", "agent_blocked", "allow")
    assert v["requires_user_review"] is True
    assert v["review_reason"] == "Task T7 is blocked."
    assert "T7" in v["message"]


def test_ok_but_block_exits_0(run_cli) -> None:
    proc = run_cli("eval", input='{"uncommittedWork": true}')
    assert proc.returncode == 0
    v = one(proc)
    assert (v["ok"], v["verdict"], v["stop"]) == (True, "auto_continue", "block")


def test_fact_from_file_argument(run_cli, tmp_path: Path) -> None:
    f = tmp_path / "fact.json"
    f.write_text('{"status": "failed"}')
    proc = run_cli("eval", str(f))
    assert proc.returncode == 1
    assert one(proc)["verdict"] == "failed"


# ---------------------------------------------------------------- envelope


def test_envelope_shape(run_cli, default_digest: str) -> None:
    proc = run_cli("eval", input='{"status": "partial", "uncommittedWork": true, "task_id": "T1"}')
    assert proc.returncode == 0
    v = one(proc)
    assert list(v) == ENVELOPE_KEYS
    assert isinstance(v["ok"], bool) and isinstance(v["requires_user_review"], bool)
    assert v["stop"] in ("allow", "block")
    assert all(isinstance(v[k], str) for k in ("verdict", "reason", "rule", "message"))
    assert v["review_reason"] is None and v["high_risk_stop"] is None
    assert re.fullmatch(r"sha256:[0-9a-f]{64}", v["policy"]) and v["policy"] == default_digest
    # every matching rule, winner first
    assert [m["rule"] for m in v["matched"]] == ["progress.soft_blocker", "progress.uncommitted_work", "progress.ok"]
    assert all(list(m) == ["rule", "verdict", "reason"] for m in v["matched"])
    assert v["matched"][0] == {"rule": v["rule"], "verdict": v["verdict"], "reason": v["reason"]}


def test_envelope_high_risk_stop(run_cli) -> None:
    fact = {
        "taskState": "complete",
        "nextTaskKnown": True,
        "sameApprovedPlan": True,
        "taskBoundaryStop": True,
        "planId": "P",
        "nextTaskId": "T2",
        "nextDerivedAction": {"type": "force_push"},
    }
    proc = run_cli("eval", input=json.dumps(fact))
    assert proc.returncode == 0
    v = one(proc)
    assert (v["verdict"], v["reason"], v["high_risk_stop"]) == ("pass", "high_risk_stop", "force_push")


# ---------------------------------------------------------------- exit code 2: bad input

BAD_INPUTS = [
    pytest.param("{not json", "fact.not_json", None, id="not-json"),
    pytest.param('{"status": ', "fact.not_json", None, id="truncated-json"),
    pytest.param("[1, 2, 3]", "fact.not_object", None, id="array"),
    pytest.param('"just a string"', "fact.not_object", None, id="string"),
    pytest.param('{"turn": "x"}', "fact.type", "turn", id="wrong-type"),
    pytest.param('{"status": "finished"}', "fact.enum", "status", id="enum-outside"),
    pytest.param('{"status": null}', "fact.null", "status", id="null"),
    pytest.param('{"errors": [{"message": "m"}]}', "fact.required", "errors[0].type", id="missing-required"),
    pytest.param('{"requires_user_review": true}', "fact.required", "review_reason", id="required-if"),
    pytest.param(
        '{"partial_progress": {"phases_total": 2.5}}', "fact.type", "partial_progress.phases_total", id="nested"
    ),
    pytest.param('{"status": "implemented", "x": "' + "a" * MIB + '"}', "fact.too_large", None, id="over-1MiB"),
    pytest.param('{"junk": ' + "[" * 100 + "]" * 100 + "}", "fact.too_deep", None, id="100-levels-list"),
    pytest.param('{"junk": ' + '{"a": ' * 100 + "1" + "}" * 100 + "}", "fact.too_deep", None, id="100-levels-obj"),
    pytest.param('{"junk": ' + "[" * 10_000 + "]" * 10_000 + "}", "fact.too_deep", None, id="10000-levels"),
    pytest.param("", "fact.empty", None, id="empty"),
    pytest.param("\n  \n\n", "fact.empty", None, id="blank"),
]


@pytest.mark.parametrize(("text", "code", "field"), BAD_INPUTS)
def test_bad_input_exits_2(run_cli, text: str, code: str, field: str | None) -> None:
    proc = run_cli("eval", input=text)
    no_traceback(proc)
    assert proc.returncode == 2
    err = one(proc)["error"]
    assert err["code"] == code
    assert err["line"] == 1
    assert code in proc.stderr
    if field is not None:
        assert err["field"] == field
        assert f"{field}:" in proc.stderr
    else:
        assert "line 1" in proc.stderr
    assert "<stdin>" in proc.stderr


def test_bad_input_from_file_names_the_file(run_cli, tmp_path: Path) -> None:
    f = tmp_path / "fact.json"
    f.write_text('{"turn": "x"}')
    proc = run_cli("eval", str(f))
    no_traceback(proc)
    assert proc.returncode == 2
    assert str(f) in proc.stderr and "turn" in proc.stderr and "line 1" in proc.stderr


def test_non_utf8_input(run_cli) -> None:
    proc = run_cli("eval", input=b'{"task_id": "\xff\xfe"}')
    assert "Traceback" not in proc.stderr.decode()
    assert proc.returncode == 2
    assert b"fact.encoding" in proc.stderr


def test_missing_file(run_cli, tmp_path: Path) -> None:
    missing = tmp_path / "nope.json"
    proc = run_cli("eval", str(missing))
    no_traceback(proc)
    assert proc.returncode == 2
    assert str(missing) in proc.stderr
    assert proc.stdout == ""


def test_pretty_printed_fact_is_one_fact(run_cli) -> None:
    text = json.dumps({"status": "blocked", "task_id": "T9", "errors": []}, indent=2)
    assert text.count("\n") > 3
    proc = run_cli("eval", input=text + "\n")
    no_traceback(proc)
    assert proc.returncode == 1
    v = one(proc)
    assert v["reason"] == "agent_blocked" and "T9" in v["message"]


def test_pretty_printed_fact_100_levels_deep(run_cli) -> None:
    inner = {"a": 1}
    for _ in range(100):
        inner = {"a": inner}
    proc = run_cli("eval", input=json.dumps({"status": "implemented", "junk": inner}, indent=1))
    no_traceback(proc)
    assert proc.returncode == 2
    assert one(proc)["error"]["code"] == "fact.too_deep"


def test_pretty_printed_fact_over_1mib_is_one_too_large_error(run_cli) -> None:
    text = json.dumps({"status": "implemented", "x": "a" * MIB}, indent=2)
    proc = run_cli("eval", input=text)
    no_traceback(proc)
    assert proc.returncode == 2
    assert one(proc)["error"]["code"] == "fact.too_large"


def test_pretty_printed_fact_10000_levels_is_one_too_deep_error(run_cli) -> None:
    text = '{"junk":\n' + "[\n" * 10_000 + "]\n" * 10_000 + "}\n"
    proc = run_cli("eval", input=text)
    no_traceback(proc)
    assert proc.returncode == 2
    assert one(proc)["error"]["code"] == "fact.too_deep"


# ---------------------------------------------------------------- NDJSON


def test_ndjson_batch_with_bad_line_in_the_middle(run_cli, default_digest: str) -> None:
    facts = [
        '{"status": "implemented"}',
        '{"status": "blocked"}',
        '{"turn": "x"}',
        '{"uncommittedWork": true}',
        '{"status": "partial"}',
    ]
    proc = run_cli("eval", input="\n".join(facts) + "\n")
    no_traceback(proc)
    assert proc.returncode == 2
    out = out_lines(proc)
    assert len(out) == 5
    assert out[2] == {"error": {"code": "fact.type", "message": "expected int, got string", "field": "turn", "line": 3}}
    envelopes = [out[i] for i in (0, 1, 3, 4)]
    assert all(list(v) == ENVELOPE_KEYS for v in envelopes)
    assert [v["reason"] for v in envelopes] == ["ok", "agent_blocked", "uncommitted_work", "soft_blocker"]
    assert all(v["policy"] == default_digest for v in envelopes)
    assert "line 3" in proc.stderr and "turn" in proc.stderr


def test_ndjson_line_numbers_count_blank_lines(run_cli) -> None:
    text = '{"status": "implemented"}\n\n   \n[1]\n{"status": "failed"}\n'
    proc = run_cli("eval", input=text)
    assert proc.returncode == 2
    out = out_lines(proc)
    assert len(out) == 3
    assert out[1]["error"]["line"] == 4 and out[1]["error"]["code"] == "fact.not_object"
    assert out[0]["verdict"] == "pass" and out[2]["verdict"] == "failed"


def test_ndjson_too_deep_line_does_not_stop_the_batch(run_cli) -> None:
    deep = '{"junk": ' + "[" * 10_000 + "]" * 10_000 + "}"
    proc = run_cli("eval", input=f'{{"status": "implemented"}}\n{deep}\n{{"status": "blocked"}}\n')
    no_traceback(proc)
    assert proc.returncode == 2
    out = out_lines(proc)
    assert len(out) == 3
    assert out[1] == {"error": {"code": "fact.too_deep", "message": out[1]["error"]["message"], "line": 2}}
    assert out[0]["ok"] is True and out[2]["ok"] is False


@pytest.mark.parametrize(
    ("facts", "code"),
    [
        (['{"status": "implemented"}', '{"uncommittedWork": true}'], 0),
        (['{"status": "implemented"}', '{"status": "failed"}', '{"availableTasks": ["a"]}'], 1),
    ],
)
def test_ndjson_exit_codes(run_cli, facts: list[str], code: int) -> None:
    proc = run_cli("eval", input="\n".join(facts))
    assert proc.returncode == code
    assert len(out_lines(proc)) == len(facts)


# ---------------------------------------------------------------- --format pretty


def test_format_pretty(run_cli) -> None:
    ok = run_cli("eval", "--format", "pretty", input='{"status": "implemented"}')
    assert ok.returncode == 0
    assert ok.stdout.startswith("OK: pass / ok")
    assert "policy: sha256:" in ok.stdout
    bad = run_cli("eval", "--format", "pretty", input='{"status": "blocked", "task_id": "T3"}')
    assert bad.returncode == 1
    assert bad.stdout.startswith("NOT OK: user_review / agent_blocked")
    assert "review reason: Task T3 is blocked." in bad.stdout
    assert "matched: review.agent_blocked, progress.ok" in bad.stdout
    err = run_cli("eval", "--format", "pretty", input='{"turn": "x"}')
    no_traceback(err)
    assert err.returncode == 2
    assert err.stdout == ""  # an error prints once: on stderr
    assert err.stderr.startswith("stoprule: <stdin>: line 1: fact.type: turn:")


def test_unknown_format_is_a_usage_error(run_cli) -> None:
    proc = run_cli("eval", "--format", "yaml", input="{}")
    no_traceback(proc)
    assert proc.returncode == 2


# ---------------------------------------------------------------- pack selection


def marked_pack(dest: Path, default_pack: Path, mark: str) -> Path:
    """A copy of the default pack whose catch-all rule says ``pack=<mark>``."""
    shutil.copytree(default_pack, dest, ignore=shutil.ignore_patterns("tests", "__pycache__"))
    progress = dest / "progress.yaml"
    text = progress.read_text()
    assert OK_MESSAGE in text
    progress.write_text(text.replace(OK_MESSAGE, f"message: pack={mark}"))
    return dest


@pytest.fixture
def packs(tmp_path: Path, default_pack: Path) -> dict[str, Path]:
    work = tmp_path / "work"
    return {
        "flag": marked_pack(tmp_path / "flag_pack", default_pack, "flag"),
        "env": marked_pack(tmp_path / "env_pack", default_pack, "env"),
        "cwd": marked_pack(work / ".stoprule" / "policies", default_pack, "cwd"),
        "work": work,
    }


def winner_message(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 0, proc.stderr
    return one(proc)["message"]


OK_FACT = '{"status": "implemented"}'


def test_policy_flag_beats_env_and_cwd(run_cli, packs: dict[str, Path]) -> None:
    proc = run_cli(
        "eval",
        "--policy",
        str(packs["flag"]),
        input=OK_FACT,
        env={"STOPRULE_POLICY": str(packs["env"])},
        cwd=packs["work"],
    )
    assert winner_message(proc) == "pack=flag"
    assert one(proc)["policy"] == compile_pack(packs["flag"]).checked.digest


def test_env_beats_cwd(run_cli, packs: dict[str, Path]) -> None:
    proc = run_cli("eval", input=OK_FACT, env={"STOPRULE_POLICY": str(packs["env"])}, cwd=packs["work"])
    assert winner_message(proc) == "pack=env"


def test_cwd_pack_beats_bundled(run_cli, packs: dict[str, Path]) -> None:
    assert winner_message(run_cli("eval", input=OK_FACT, cwd=packs["work"])) == "pack=cwd"


def test_empty_env_falls_through_to_cwd(run_cli, packs: dict[str, Path]) -> None:
    assert winner_message(run_cli("eval", input=OK_FACT, env={"STOPRULE_POLICY": ""}, cwd=packs["work"])) == "pack=cwd"


def test_bundled_pack_when_nothing_else(run_cli, tmp_path: Path, default_digest: str) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    proc = run_cli("eval", input=OK_FACT, cwd=elsewhere)
    assert winner_message(proc) == "Nothing requires further work; stopping is fine."
    assert one(proc)["policy"] == default_digest


def test_check_follows_the_same_selection(run_cli, packs: dict[str, Path]) -> None:
    proc = run_cli("check", "--format", "json", env={"STOPRULE_POLICY": str(packs["env"])}, cwd=packs["work"])
    assert proc.returncode == 0
    assert json.loads(proc.stdout)["digest"] == compile_pack(packs["env"]).checked.digest


# ---------------------------------------------------------------- version, broken pack, shell


def test_version(run_cli) -> None:
    proc = run_cli("--version")
    assert proc.returncode == 0
    version, backend = proc.stdout.splitlines()
    assert version == f"stoprule {stoprule.__version__}"
    # the backend (the C accelerator where it is built) and which engine build is used
    want = "c accelerator for batches, python for single facts" if speedups.load() else "python, the C accelerator not"
    assert backend.startswith(f"evaluation backend: {want}") and "(durable_rules engine " in backend


def test_broken_pack_given_to_eval(run_cli, tmp_path: Path, default_pack: Path) -> None:
    broken = marked_pack(tmp_path / "broken", default_pack, "broken")
    progress = broken / "progress.yaml"
    text = progress.read_text().replace("when: {status: failed}", "when: {status: exploded}")
    progress.write_text(text)
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if "exploded" in ln)
    proc = run_cli("eval", "--policy", str(broken), input=OK_FACT)
    no_traceback(proc)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert re.search(rf"^progress\.yaml:{line}:\d+: condition\.type: .*exploded", proc.stderr, re.M), proc.stderr


def test_missing_pack_given_to_eval(run_cli, tmp_path: Path) -> None:
    proc = run_cli("eval", "--policy", str(tmp_path / "absent"), input=OK_FACT)
    no_traceback(proc)
    assert proc.returncode == 2
    assert "pack.not_found" in proc.stderr


def test_shell_if_uses_exit_codes(tmp_path: Path) -> None:
    # a subprocess: the console script's exit status as a shell's `if` sees it
    bindir = Path(sys.executable).parent
    exe = shutil.which("stoprule", path=str(bindir))
    if exe is None:
        pytest.skip("no stoprule console script next to the interpreter")
    (tmp_path / "ok.json").write_text(OK_FACT)
    (tmp_path / "stop.json").write_text('{"status": "blocked"}')
    (tmp_path / "bad.json").write_text('{"turn": "x"}')
    script = (
        'for f in ok stop bad; do if stoprule eval "$f.json" >/dev/null 2>&1; '
        'then echo "$f:continue"; else echo "$f:halt=$?"; fi; done'
    )
    env = {k: v for k, v in os.environ.items() if k != "STOPRULE_POLICY"}
    env["PATH"] = f"{bindir}{os.pathsep}{env.get('PATH', '')}"
    env["STOPRULE_CACHE_DIR"] = str(tmp_path / "cache")
    proc = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["ok:continue", "stop:halt=1", "bad:halt=2"]


COLD_EVAL = (
    "import json, sys\n"
    "from stoprule.cli.main import main\n"
    "code = main(['eval', '--format', sys.argv[1]])\n"
    "sys.stderr.write(json.dumps(sorted(sys.modules)))\n"
    "sys.exit(code)\n"
)


@pytest.mark.parametrize("fmt", first_by_default(["json", "pretty"]))
def test_cold_eval_imports_nothing_heavy(tmp_path: Path, fmt: str) -> None:
    """A cache hit loads neither the compiler's libraries nor typing/dataclasses/sqlite3 (cold start)."""
    # a subprocess: a fresh interpreter's sys.modules is what the cold start pays for
    env = {**os.environ, "STOPRULE_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("STOPRULE_POLICY", None)
    for _ in range(2):  # the first run fills the compiled-pack cache
        proc = subprocess.run(
            [sys.executable, "-c", COLD_EVAL, fmt], input=OK_FACT, capture_output=True, text=True, cwd=tmp_path, env=env
        )
        assert proc.returncode == 0, proc.stderr
    modules = set(json.loads(proc.stderr))
    assert {"stoprule.facts.parse", "stoprule.cli.eval_cmd"} <= modules
    heavy = {"yaml", "pydantic", "typing", "dataclasses", "sqlite3", "pathlib", "stoprule.language.compiler"}
    assert not modules & heavy
    assert not {m for m in modules if m.startswith(("stoprule.analysis", "stoprule.ledger"))}


def test_ndjson_in_chunks_and_in_processes_gives_the_same_output(run_cli, tmp_path: Path) -> None:  # noqa: ANN001
    """``--jobs 2`` (and the chunked single-process path) print what one pass over the whole
    input prints: same stdout and stderr lines, in order, and the same exit code."""
    from stoprule.facts.batch import chunk_items, split_ndjson
    from stoprule.facts.parse import parse_facts

    good = [
        {"status": "implemented", "turn": i % 9, "max_turns": 8, "errors": [{"type": "timeout"}], "extra": i}
        for i in range(2500)
    ]
    lines = [json.dumps(f) for f in good]
    lines[3], lines[1200], lines[2400] = "not json", '{"turn": "x"}', ""
    data = ("\n".join(lines) + "\n\n").encode() + b"\xff\n" + json.dumps({"status": "failed"}).encode()
    whole = [(n, repr(x)) for n, x in parse_facts(data)]  # a FactError compares by identity
    for parts in (2, 3, 8):
        chunks = split_ndjson(data, parts)
        assert chunks is not None
        assert len(chunks) == parts
        assert [(n, repr(x)) for c in chunks for n, x in chunk_items(data, c)] == whole
    assert split_ndjson(b'{\n"a": 1\n}\n' * 1000, 4) is None  # one pretty-printed document: not split
    assert split_ndjson(b"{}\n" * 1999 + b"{}", 4, min_lines=2000) is not None  # 2000 lines: split
    assert split_ndjson(b"{}\n" * 1998 + b"{}", 4, min_lines=2000) is None  # 1999: not worth it
    assert split_ndjson(b"{}\n" * 1999, 4, min_lines=2000) is not None  # 1999 facts, but 2000 lines
    f = tmp_path / "facts.ndjson"
    f.write_bytes(data)
    one = run_cli("eval", str(f))
    two = run_cli("eval", "--jobs", "2", str(f))
    assert one.returncode == two.returncode == 2
    assert one.stdout == two.stdout and one.stderr == two.stderr
    assert len(one.stdout.splitlines()) == len([ln for ln in data.split(b"\n") if ln.strip()])
