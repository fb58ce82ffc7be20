"""The project's ``.stoprule/`` is found upward from the working directory, as git finds ``.git``."""

from __future__ import annotations

import json
from pathlib import Path

from stoprule.project import find_project, project_root


def test_found_from_a_subdirectory(tmp_path: Path) -> None:
    (tmp_path / ".stoprule").mkdir()
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    assert find_project(deep) == str(tmp_path / ".stoprule")
    assert project_root(deep) == str(tmp_path)


def test_a_file_named_stoprule_is_not_a_project(tmp_path: Path) -> None:
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / ".stoprule").write_text("")
    found = find_project(tmp_path / "x")
    assert found != str(tmp_path / "x" / ".stoprule")


def test_the_nearest_pack_is_used_from_a_subdirectory(run_cli, tmp_path: Path) -> None:
    assert run_cli("pack", "init", cwd=tmp_path).returncode == 0
    progress = tmp_path / ".stoprule" / "policies" / "progress.yaml"
    fact = json.dumps({"status": "implemented"})
    msg = json.loads(run_cli("eval", "-", input=fact, cwd=tmp_path).stdout)["message"]
    progress.write_text(progress.read_text().replace(msg, "from the project pack"))
    sub = tmp_path / "src" / "deep"
    sub.mkdir(parents=True)
    assert json.loads(run_cli("eval", "-", input=fact, cwd=sub).stdout)["message"] == "from the project pack"
