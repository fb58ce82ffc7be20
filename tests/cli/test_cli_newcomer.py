"""A newcomer's path through the CLI (issue 11): help, version, the pack copy, several
inputs, stdin for explain, content-keyed cache, warnings, --strict and NDJSON line
accounting. Every case runs the CLI in process (``run_cli``)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest


def test_bare_stoprule_prints_help_and_version(run_cli) -> None:
    proc = run_cli()
    assert proc.returncode == 0 and "usage: stoprule" in proc.stdout and "eval" in proc.stdout
    for flag in ("-V", "--version"):
        proc = run_cli(flag)
        assert proc.returncode == 0 and proc.stdout.startswith("stoprule ")


def test_pack_path_and_init_never_nest(run_cli, tmp_path: Path) -> None:
    path = Path(run_cli("pack", "path").stdout.strip())
    assert (path / "schema.yaml").is_file()
    first = run_cli("pack", "init", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    copied = tmp_path / ".stoprule" / "policies"
    assert sorted(p.name for p in copied.glob("*.yaml")) == sorted(p.name for p in path.glob("*.yaml"))
    again = run_cli("pack", "init", cwd=tmp_path)
    assert again.returncode == 2 and "already exists" in again.stderr
    assert not (copied / "policies").exists()  # no nested second copy
    assert run_cli("pack", "init", "--force", cwd=tmp_path).returncode == 0
    assert not (copied / "policies").exists()
    check = run_cli("check", cwd=tmp_path)
    assert check.returncode == 0 and str(copied) in check.stdout  # check names the pack it used


def test_explain_reads_stdin(run_cli) -> None:
    proc = run_cli("explain", input=json.dumps({"status": "partial"}))
    assert proc.returncode == 0 and "soft_blocker" in proc.stdout


def test_eval_takes_several_files_in_order(run_cli, tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text(json.dumps({"status": "partial"}))
    (tmp_path / "b.json").write_text(json.dumps({"status": "implemented"}) + "\n" + json.dumps({"status": "failed"}))
    proc = run_cli("eval", "a.json", "b.json", cwd=tmp_path)
    assert [json.loads(x)["verdict"] for x in proc.stdout.splitlines()] == ["auto_continue", "pass", "failed"]
    assert proc.returncode == 1


def test_cache_is_keyed_by_content_not_mtime(run_cli, tmp_path: Path, default_pack: Path) -> None:
    import shutil

    pack = tmp_path / "pack"
    shutil.copytree(default_pack, pack)
    fact = json.dumps({"status": "implemented"})
    before = json.loads(run_cli("eval", "--policy", str(pack), "-", input=fact).stdout)
    progress = pack / "progress.yaml"
    st = progress.stat()
    text = progress.read_text()
    assert before["message"] in text
    progress.write_text(text.replace(before["message"], before["message"][:-1] + "!"))  # same size
    os.utime(progress, ns=(st.st_atime_ns, st.st_mtime_ns))
    after = json.loads(run_cli("eval", "--policy", str(pack), "-", input=fact).stdout)
    assert after["message"].endswith("!")


def test_unknown_fields_warn_on_stderr_and_strict_refuses(run_cli) -> None:
    fact = json.dumps({"stauts": "partial"})
    proc = run_cli("eval", "-", input=fact)
    env = json.loads(proc.stdout)
    assert proc.returncode == 0 and env["warnings"][0]["field"] == "stauts"
    assert "did you mean 'status'?" in proc.stderr
    strict = run_cli("eval", "--strict", "-", input=fact)
    assert strict.returncode == 2 and json.loads(strict.stdout)["error"]["code"] == "fact.unknown_field"


@pytest.mark.parametrize("sep", ["\u2028", "\u2029", "\u0085", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e"])
def test_only_newline_separates_records(run_cli, sep: str) -> None:
    facts = [{"status": "partial", "x": f"a{sep}b"}, {"status": "implemented"}]
    proc = run_cli("eval", "-", input="\n".join(json.dumps(f, ensure_ascii=False) for f in facts))
    assert len(proc.stdout.splitlines()) == 2, proc.stdout


def test_a_non_utf8_line_is_an_error_for_that_line_only(run_cli) -> None:
    good, last = json.dumps({"status": "partial"}).encode(), json.dumps({"status": "failed"}).encode()
    lines = [good, b'{"status": "\xff"}', last]
    proc = run_cli("eval", "-", input=b"\n".join(lines))
    out = [json.loads(x) for x in proc.stdout.decode().splitlines()]
    assert [o.get("verdict") or o["error"]["code"] for o in out] == ["auto_continue", "fact.encoding", "failed"]
    assert proc.returncode == 2


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ('{"status": "partial", "status": "failed"}', "fact.duplicate_key"),
        ('{"turn": NaN}', "fact.not_json"),
        ('{"turn": ' + "9" * 5000 + "}", "fact.not_json"),
        ('{"status": []}', "fact.type"),
        ('{"requires_user_review": true, "review_reason": "x\\udfff"}', "fact.string"),
        ('{"requires_user_review": true, "review_reason": "x\\u0000"}', "fact.string"),
    ],
)
def test_malformed_facts_are_fact_errors_not_tracebacks(run_cli, text: str, code: str) -> None:
    for fmt in ("json", "pretty"):
        proc = run_cli("eval", "--format", fmt, "-", input=text + "\n" + json.dumps({"status": "partial"}))
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        assert code in proc.stderr
        if fmt == "json":
            assert len(proc.stdout.splitlines()) == 2  # the next fact is still evaluated


def test_a_gap_in_the_pack_is_an_error_for_that_fact_only(run_cli, tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text(
        "schema: {fields: {n: {type: int}}}\nverdicts: {pass: {ok: true, stop: allow}}\n"
        "rules: [{id: big, priority: 1, when: {n: {gt: 3}}, verdict: pass, reason: big, message: m}]\n"
    )
    proc = run_cli("eval", "--policy", str(tmp_path), "-", input='{"n": 1}\n{"n": 5}')
    out = [json.loads(x) for x in proc.stdout.splitlines()]
    assert out[0]["error"]["code"] == "policy.no_rule" and out[1]["rule"] == "p.big"
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
