"""Changing a decision means editing YAML only: the real CLI picks it up, and the digest moves."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

RunCli = Callable[..., subprocess.CompletedProcess]

SOFT_TIMEOUT = {"task_id": "885", "status": "partial", "errors": [{"type": "timeout"}]}
UNCOMMITTED = {"task_id": "885", "uncommittedWork": True}


@pytest.fixture
def pack(tmp_path: Path, default_pack: Path) -> Path:
    """A private copy of the default pack (its test cases left behind)."""
    dest = tmp_path / "pack"
    shutil.copytree(default_pack, dest, ignore=shutil.ignore_patterns("tests"))
    return dest


def _eval(run_cli: RunCli, pack: Path, fact: dict[str, Any], expect_rc: int) -> dict[str, Any]:
    proc = run_cli("eval", "--policy", str(pack), input=json.dumps(fact))
    assert proc.returncode == expect_rc, proc.stderr
    return json.loads(proc.stdout)


def _check(run_cli: RunCli, pack: Path) -> None:
    proc = run_cli("check", "--policy", str(pack))
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _move_timeout_to_hard(pack: Path) -> None:
    vocab = pack / "vocabulary.yaml"
    text = vocab.read_text(encoding="utf-8")
    line = "    timeout: Operation exceeded its time limit\n"
    hard = "  hard:   # human judgment needed: stop for user review\n"
    assert text.count(line) == 1 and text.count(hard) == 1, "vocabulary.yaml changed shape"
    vocab.write_text(text.replace(line, "").replace(hard, hard + line), encoding="utf-8")


def test_a_copy_has_the_same_digest(run_cli: RunCli, pack: Path, default_pack: Path) -> None:
    original = _eval(run_cli, default_pack, SOFT_TIMEOUT, 0)
    copied = _eval(run_cli, pack, SOFT_TIMEOUT, 0)
    assert copied == original
    assert original["policy"].startswith("sha256:")


def test_moving_timeout_from_soft_to_hard_changes_the_verdict(run_cli: RunCli, pack: Path) -> None:
    before = _eval(run_cli, pack, SOFT_TIMEOUT, 0)
    assert (before["verdict"], before["reason"], before["stop"]) == ("auto_continue", "soft_blocker", "block")
    assert before["requires_user_review"] is False

    _move_timeout_to_hard(pack)
    _check(run_cli, pack)
    after = _eval(run_cli, pack, SOFT_TIMEOUT, 1)
    assert (after["verdict"], after["reason"], after["stop"]) == ("user_review", "hard_blocker", "allow")
    assert after["requires_user_review"] is True
    assert "timeout" in after["message"]  # the rendered list of hard categories now names it
    assert after["policy"] != before["policy"]

    # a fact the edit does not concern keeps its verdict, under the new digest
    other = _eval(run_cli, pack, {"status": "partial", "errors": [{"type": "mcp_transient"}]}, 0)
    assert other["reason"] == "soft_blocker"
    assert other["policy"] == after["policy"]


def test_a_new_rule_file_with_higher_priority_wins(run_cli: RunCli, pack: Path) -> None:
    before = _eval(run_cli, pack, UNCOMMITTED, 0)
    assert (before["verdict"], before["reason"]) == ("auto_continue", "uncommitted_work")

    (pack / "freeze.yaml").write_text(
        "# A code freeze: uncommitted work goes to the user instead of being committed.\n"
        "rules:\n"
        "  - id: code_freeze\n"
        "    priority: 2000\n"
        "    when: {uncommittedWork: true}\n"
        "    verdict: user_review\n"
        "    reason: code_freeze\n"
        "    message: 'USER REVIEW REQUIRED: code freeze; leave the changes of {task_id} uncommitted.'\n"
        "    review_reason: A code freeze is on.\n",
        encoding="utf-8",
    )
    _check(run_cli, pack)
    after = _eval(run_cli, pack, UNCOMMITTED, 1)
    assert (after["verdict"], after["reason"], after["rule"]) == ("user_review", "code_freeze", "freeze.code_freeze")
    assert after["message"] == "USER REVIEW REQUIRED: code freeze; leave the changes of 885 uncommitted."
    assert after["review_reason"] == "A code freeze is on."
    assert [m["rule"] for m in after["matched"]][:2] == ["freeze.code_freeze", "progress.uncommitted_work"]
    assert after["policy"] != before["policy"]

    # it outranks even the agent's own review request (priority 1500)
    asked = {**UNCOMMITTED, "requires_user_review": True, "review_reason": "look at this"}
    assert _eval(run_cli, pack, asked, 1)["reason"] == "code_freeze"


def test_removing_the_rule_file_restores_verdict_and_digest(run_cli: RunCli, pack: Path) -> None:
    before = _eval(run_cli, pack, SOFT_TIMEOUT, 0)
    _move_timeout_to_hard(pack)
    assert _eval(run_cli, pack, SOFT_TIMEOUT, 1)["policy"] != before["policy"]
    shutil.rmtree(pack)
    shutil.copytree(Path(__file__).resolve().parents[2] / "policies", pack, ignore=shutil.ignore_patterns("tests"))
    assert _eval(run_cli, pack, SOFT_TIMEOUT, 0) == before


def test_pack_selected_through_the_environment_sees_the_edit(run_cli: RunCli, pack: Path) -> None:
    _move_timeout_to_hard(pack)
    proc = run_cli("eval", input=json.dumps(SOFT_TIMEOUT), env={"STOPRULE_POLICY": str(pack)})
    assert proc.returncode == 1, proc.stderr
    assert json.loads(proc.stdout)["reason"] == "hard_blocker"
