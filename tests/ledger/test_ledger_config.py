"""Which ledger the CLI uses: ``--ledger``, else ``$STOPRULE_LEDGER``, else ``ledger: {url: ...}`` in
``.stoprule/config.yaml``, else ``.stoprule/ledger.db``; a bad ``ledger:`` section is an error naming
the file, line and field. In process (tests/clirunner.py); the PostgreSQL case is marked ``postgres``."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from clirunner import invoke
from hookharness import payload, run_hook

REPO = Path(__file__).resolve().parents[2]
PACK = str(REPO / "policies")
FACT = json.dumps({"status": "implemented"})


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "proj" / ".stoprule").mkdir(parents=True)
    (tmp_path / "proj" / "sub").mkdir()
    return tmp_path / "proj"


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STOPRULE_")}
    env.update(STOPRULE_CACHE_DIR=str(tmp_path / "cache"), HOME=str(tmp_path / "home"), **extra)
    return env


def _runs(ledger: Path | str, tmp_path: Path) -> list[str]:
    p = invoke(["log", "runs", "--format", "json", "--ledger", str(ledger)], env=_env(tmp_path))
    assert p.returncode == 0, p.stderr
    return [r["run"] for r in json.loads(p.stdout)]


@pytest.mark.parametrize(
    ("config", "env_ledger", "flag", "where"),
    [
        ("", None, None, ".stoprule/ledger.db"),  # the default
        ("ledger:\n  url: team.db\n", None, None, ".stoprule/team.db"),  # config (relative to .stoprule/)
        ("ledger:\n  url: ABS\n", None, None, "abs.db"),  # config, an absolute path
        ("ledger:\n  url: team.db\n", "env.db", None, "env.db"),  # env beats config
        ("ledger:\n  url: team.db\n", "env.db", "flag.db", "flag.db"),  # the flag beats both
    ],
)
def test_flag_then_env_then_config_then_default(
    tmp_path: Path, project: Path, config: str, env_ledger: str | None, flag: str | None, where: str
) -> None:
    (project / ".stoprule" / "config.yaml").write_text(config.replace("ABS", str(project / "abs.db")))
    extra = {"STOPRULE_LEDGER": str(project / env_ledger)} if env_ledger else {}
    argv = ["eval", "--policy", PACK, "--run", "r1", "-"] + (["--ledger", str(project / flag)] if flag else [])
    p = invoke(argv, input=FACT, env=_env(tmp_path, **extra), cwd=project / "sub")
    assert p.returncode == 0, p.stderr
    made = sorted(str(f.relative_to(project)) for f in project.rglob("*.db"))
    assert made == [where]
    assert _runs(project / where, tmp_path) == ["r1"]
    # `log` and `keys` read the same ledger from the same settings
    p = invoke(
        ["log", "runs", "--format", "json"] + (["--ledger", str(project / flag)] if flag else []),
        env=_env(tmp_path, **extra),
        cwd=project / "sub",
    )
    assert p.returncode == 0 and [r["run"] for r in json.loads(p.stdout)] == ["r1"], p.stderr
    p = invoke(
        ["keys", "list", "--format", "json"] + (["--ledger", str(project / flag)] if flag else []),
        env=_env(tmp_path, **extra),
        cwd=project / "sub",
    )
    assert p.returncode == 0 and json.loads(p.stdout)["path"] == str(project / where) + ".keys", p.stderr


@pytest.mark.parametrize(
    ("section", "line", "field"),
    [
        ("ledger:\n  url: 42\n", 4, "ledger.url"),
        ("ledger:\n  url: mysql://db/x\n", 4, "ledger.url"),
        ("ledger:\n  url: ''\n", 4, "ledger.url"),
        ("ledger:\n  path: x.db\n", 4, "ledger.path"),
        ("ledger: postgresql://db/x\n", 3, "ledger"),
    ],
)
@pytest.mark.parametrize("command", ["eval", "log", "keys"])
def test_a_bad_ledger_section_names_file_line_and_field(
    tmp_path: Path, project: Path, section: str, line: int, field: str, command: str
) -> None:
    cfg = project / ".stoprule" / "config.yaml"
    cfg.write_text("hook:\n  loop_cap: 3\n" + section)
    argv = {"eval": ["eval", "--policy", PACK, "--run", "r1", "-"], "log": ["log", "runs"], "keys": ["keys", "list"]}
    p = invoke(argv[command], input=FACT, env=_env(tmp_path), cwd=project / "sub")
    assert p.returncode == 2 and p.stdout in ("", "\n")
    first = p.stderr.splitlines()[0]
    assert first.startswith(f"{cfg}:{line}:") and f"(at {field})" in first, p.stderr
    assert not list(project.rglob("*.db"))  # nothing was recorded anywhere


def test_the_hook_and_the_blocker_tool_record_in_the_configured_ledger(tmp_path: Path, project: Path) -> None:
    (project / ".stoprule" / "config.yaml").write_text(
        "hook:\n  ledger: true\nblockers:\n  ledger: true\nledger:\n  url: shared.db\n"
    )
    data = payload("claude-code")
    data["cwd"] = str(project / "sub")
    data["session_id"] = "s-hook"
    run_hook("claude-code", data, project, _env(tmp_path))
    p = invoke(
        [
            "blocker",
            "add",
            "--session",
            "s-blocker",
            "--category",
            "permission",
            "--question",
            "which key?",
            "--blocks-progress",
            "--policy",
            PACK,
        ],
        env=_env(tmp_path),
        cwd=project / "sub",
    )
    assert p.returncode == 0, p.stdout + p.stderr
    assert sorted(str(f.relative_to(project)) for f in project.rglob("*.db")) == [".stoprule/shared.db"]
    assert sorted(_runs(project / ".stoprule" / "shared.db", tmp_path)) == ["s-blocker", "s-hook"]


@pytest.mark.postgres
def test_a_postgresql_url_from_the_config(tmp_path: Path, project: Path, pg_url: str) -> None:
    (project / ".stoprule" / "config.yaml").write_text(f"ledger:\n  url: '{pg_url}'\n")
    env = _env(tmp_path, STOPRULE_LEDGER_KEYS=str(tmp_path / "pg.keys"))
    for _ in range(2):
        p = invoke(["eval", "--policy", PACK, "--run", "r-pg", "-"], input=FACT, env=env, cwd=project / "sub")
        assert p.returncode == 0, p.stderr
    assert not list(project.rglob("*.db"))  # nothing in SQLite
    p = invoke(["log", "runs", "--format", "json"], env=env, cwd=project / "sub")
    assert p.returncode == 0 and [(r["run"], r["decisions"]) for r in json.loads(p.stdout)] == [("r-pg", 2)], p.stderr
    p = invoke(["log", "verify"], env=env, cwd=project / "sub")
    assert p.returncode == 0, p.stdout + p.stderr
