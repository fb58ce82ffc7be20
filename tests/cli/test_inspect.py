"""`stoprule inspect` and the global pack layered under a project's (in process)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from clirunner import cli

ORG = """\
rules:
  - id: failed_needs_a_human
    priority: 900
    when: {status: failed}
    verdict: user_review
    reason: org_review
    message: "Org rule: a failed task needs a human."
"""


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, default_pack: Path) -> Path:
    """A project with a copy of the default pack, and an empty global config home."""
    project = tmp_path / "project"
    shutil.copytree(default_pack, project / ".stoprule" / "policies", ignore=shutil.ignore_patterns("tests"))
    monkeypatch.chdir(project)
    monkeypatch.delenv("STOPRULE_POLICY", raising=False)
    monkeypatch.delenv("STOPRULE_GLOBAL_POLICY", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("STOPRULE_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


def _global(env: Path, name: str, text: str) -> Path:
    d = env / "config" / "stoprule" / "policies"
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_text(text)
    return d


def test_inspect_json_lists_every_section(env: Path) -> None:
    r = cli("inspect", "--format", "json")
    assert r.code == 0, r.err
    data = json.loads(r.out)
    rules = data["rules"]
    assert [r["priority"] for r in rules] == sorted((r["priority"] for r in rules), reverse=True)
    assert rules[-1]["rule"] == "progress.ok" and rules[-1]["stop"] == "allow" and rules[-1]["layer"] == "pack"
    assert {v["verdict"] for v in data["verdicts"]} >= {"pass", "user_review"}
    assert data["sets"] and data["stops"] and data["conditions"]
    assert {"field": "status", "type": "enum(implemented|partial|failed|blocked)"}.items() <= data["schema"][0].items()
    assert data["layers"] == {"global": None, "global_files": [], "shadowed": [], "same_priority": []}


def test_inspect_pretty_sections_and_did_you_mean(env: Path) -> None:
    r = cli("inspect", "rules")
    assert r.code == 0 and "rules (first match wins, in this order):" in r.out and "fact schema" not in r.out
    assert "progress.ok" in r.out.splitlines()[-1]
    bad = cli("inspect", "rulez")
    assert bad.code == 2 and "unknown section 'rulez' (did you mean 'rules'?)" in bad.err


def test_inspect_on_a_terminal_draws_tables(env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    r = cli("inspect", "verdicts", tty=True)
    assert r.code == 0 and "verdict kinds" in r.out and "┃" in r.out  # rich's table borders
    assert "36m" in r.out  # the header's colour (cyan)
    monkeypatch.setenv("NO_COLOR", "1")
    assert "36m" not in cli("inspect", "verdicts", tty=True).out


@pytest.mark.integration
def test_global_pack_layered_under_the_project(env: Path) -> None:
    glob = _global(env, "org.yaml", ORG)
    shutil.copy(env / "project" / ".stoprule" / "policies" / "progress.yaml", glob / "progress.yaml")
    (glob / "progress.yaml").write_text("this global file is shadowed: never read [")
    r = cli("eval", stdin=b'{"status": "failed"}')
    assert json.loads(r.out)["rule"] == "org.failed_needs_a_human"  # the global rule joins the pack
    check = cli("check")
    assert check.code == 0 and f"global pack: {glob} (layered under it: org.yaml; shadowed: progress.yaml)" in check.out
    layers = json.loads(cli("inspect", "--format", "json", "layers").out)["layers"]
    assert layers["global_files"] == ["org.yaml"] and layers["shadowed"] == ["progress.yaml"]
    assert layers["same_priority"] == [
        {
            "priority": 900,
            "rules": ["org.failed_needs_a_human", "review.unclassified_blocker"],
            "wins": "org.failed_needs_a_human",
        }
    ]
    audit = cli("audit")
    assert "global pack: " in audit.out and "conflict: priority 900" in audit.out


def test_global_pack_errors_name_the_global_file(env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _global(env, "org.yaml", ORG.replace("verdict: user_review", "verdict: user_reveiw"))
    r = cli("check")
    assert r.code == 2 and r.out.startswith("global/org.yaml:5:5: verdict.unknown: unknown verdict 'user_reveiw'")
    monkeypatch.setenv("STOPRULE_GLOBAL_POLICY", "")  # empty: no global pack
    assert cli("check").code == 0


@pytest.mark.parametrize(
    "argv", [["eval", "--format", "pretty"], ["test"], ["check"]], ids=["eval pretty", "test", "check"]
)
def test_colour_on_a_terminal_only(env: Path, monkeypatch: pytest.MonkeyPatch, argv: list[str]) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    tests = env / "project" / ".stoprule" / "policies" / "tests"
    tests.mkdir()
    (tests / "t.yaml").write_text("cases:\n  - {name: a, fact: {}, expect: {verdict: pass}}\n")
    stdin = b'{"status": "implemented"}'
    plain = cli(*argv, stdin=stdin)
    coloured = cli(*argv, stdin=stdin, tty=True)
    assert plain.code == coloured.code == 0, plain.err
    assert "\x1b[" not in plain.out and "32m" in coloured.out  # green
    monkeypatch.setenv("NO_COLOR", "1")
    assert "32m" not in cli(*argv, stdin=stdin, tty=True).out
