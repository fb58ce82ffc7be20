"""tools/fmt_skips.py: a ``# fmt: skip`` marker belongs on a table; anywhere else it is listed."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parent.parent


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("fmt_skips", REPO / "tools" / "fmt_skips.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


fs = _load()

SAMPLE = """\
TABLE = {
    "a": 1,    "bb": 2,  # fmt: skip
}  # fmt: skip
call(x,
     y)  # fmt: skip
ROW = (1, 2)  # fmt: skip
f(options={
    "k": 1,
})  # fmt: skip
"""


def test_markers_on_tables_are_kept_and_the_others_listed(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text(SAMPLE)
    assert fs.markers(path) == [2, 3, 5, 6, 9]
    assert fs.misplaced(path) == [5, 6]  # a call, a one-line tuple; a keyword's table is a table


def test_drop_removes_only_the_misplaced(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text(SAMPLE)
    assert fs.main(["--drop", str(path)]) == 0
    assert fs.markers(path) == [2, 3, 9] and fs.misplaced(path) == []
