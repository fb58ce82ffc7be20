"""The compiled-pack cache: JSON data (and JSON texts) checked against the pack's files before use, never code.

A start stats the files: equal stats are a hit without reading them; other stats are a hit
only when the files' checksum is the recorded one; anything else (an edit, an altered or foreign
entry, one others could write) is compiled again. Whatever the entry holds, reading it builds
only the compiled pack's own types, and the code generated from it never runs its text.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
from pathlib import Path

import pytest

from srctree import modules
from stoprule.engine import build, packs
from stoprule.engine.compiled import to_data
from stoprule.engine.evaluator import DIRECT_FACTS, Evaluator

SRC = Path(__file__).resolve().parents[2] / "src" / "stoprule"


@pytest.fixture
def pack(tmp_path: Path, default_pack: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "pack"
    shutil.copytree(default_pack, root)
    monkeypatch.setenv("STOPRULE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("STOPRULE_NO_CACHE", raising=False)
    monkeypatch.setenv("STOPRULE_GLOBAL_POLICY", "")
    return root


class Compiles:
    """Counts the compiler's runs (a cache hit runs none)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.n = 0
        real = build.compile_pack

        def counted(root: object) -> build.Compilation:
            self.n += 1
            return real(root)  # type: ignore[arg-type]

        monkeypatch.setattr(build, "compile_pack", counted)


def _entry(pack: Path) -> Path:
    (found,) = (pack.parent / "cache").glob("pack-*.entry")
    return found


def _head(path: Path) -> dict:
    """The entry's line of JSON (the texts of the compiled pack follow it)."""
    return json.loads(path.read_bytes().partition(b"\n")[0])


def _rewrite(path: Path, head: dict) -> None:
    """The entry with ``head`` as its line of JSON, its texts as they were."""
    path.write_bytes(json.dumps(head).encode() + b"\n" + path.read_bytes().partition(b"\n")[2])


def _settle(pack: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Cache the pack as if its files had last changed long ago (stats alone vouch from now on:
    a file's ctime cannot be set back, so the racy window is closed instead)."""
    monkeypatch.setattr(packs, "RACY_NS", -(10**12))
    packs.compile_policy(pack)
    assert _head(_entry(pack))["racy"] is False


def test_a_warm_start_reads_json_data_and_compiles_nothing(pack: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fresh = packs.compile_policy(pack)
    entry_file = _entry(pack)
    entry = _head(entry_file)  # JSON, then the texts the compiled pack holds as they are
    assert entry["sources"] and entry["files"] and entry["compiled"][0] == "r"
    texts = [*fresh.ruleset_json, fresh.conditions]
    assert entry_file.read_bytes().partition(b"\n")[2] == "".join(texts).encode()
    assert entry["texts"] == [len(t.encode()) for t in texts]
    assert not entry_file.stat().st_mode & 0o022  # nobody else may write it
    compiles = Compiles(monkeypatch)
    again = packs.compile_policy(pack)
    assert compiles.n == 0 and to_data(again) == to_data(fresh)
    fact = {"status": "partial"}
    assert Evaluator(again).evaluate(fact) == Evaluator(fresh).evaluate(fact)


def test_same_bytes_with_new_stats_is_a_hit_found_by_content(pack: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _settle(pack, monkeypatch)
    compiles = Compiles(monkeypatch)
    (pack / "progress.yaml").touch()
    packs.compile_policy(pack)
    assert compiles.n == 0  # the checksum vouched for it
    stats = _head(_entry(pack))["files"]
    assert [str(pack / "progress.yaml")] == [s[0] for s in stats if s[0].endswith("progress.yaml")]
    assert stats == packs._file_stats(packs.pack_files(str(pack)))  # written again: the next start stats only


def test_an_edit_that_keeps_size_and_mtime_is_compiled_again(pack: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _settle(pack, monkeypatch)
    before = Evaluator(packs.compile_policy(pack)).evaluate({"status": "implemented"}).message
    progress = pack / "progress.yaml"
    st = progress.stat()
    progress.write_text(progress.read_text().replace(before, before[:-1] + "!"))  # same size
    os.utime(progress, ns=(st.st_atime_ns, st.st_mtime_ns))  # the ctime still moves on
    compiles = Compiles(monkeypatch)
    after = Evaluator(packs.compile_policy(pack)).evaluate({"status": "implemented"}).message
    assert compiles.n == 1 and after.endswith("!")


def test_stats_taken_right_after_a_change_do_not_vouch_for_it(pack: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    packs.compile_policy(pack)  # the copy was just made: racy
    assert _head(_entry(pack))["racy"] is True
    reads = []
    real = packs._sources_digest
    monkeypatch.setattr(packs, "_sources_digest", lambda files: reads.append(1) or real(files))
    packs.compile_policy(pack)
    assert reads  # the content was checked although every stat was the same


@pytest.mark.parametrize(
    "alter",
    [
        lambda e: e["compiled"].__setitem__(1, "builtins.eval"),  # a type the reader does not build
        lambda e: e["compiled"].__setitem__(2, ["r", "Slot", "x"]),  # a malformed record
        lambda e: e.__setitem__("compiled", ["t", 1, 2]),  # not a compiled pack
        lambda e: e.__setitem__("sources", "0" * 64) or e.__setitem__("racy", True),  # the files are not those
        lambda e: e.__setitem__("version", "0.0.0"),
        lambda e: e["texts"].__setitem__(0, e["texts"][0] - 1),  # the texts are not those written
        lambda e: e["texts"].pop(),
        lambda e: e.__setitem__("texts", [sum(e["texts"])]),  # one text: no conditions apart from the rulesets
        lambda e: e["compiled"].__setitem__(-1, "{}"),  # conditions in the data: not what is written
    ],
)
def test_an_entry_that_does_not_read_back_is_compiled_again(pack: Path, monkeypatch: pytest.MonkeyPatch, alter) -> None:  # noqa: ANN001
    fresh = packs.compile_policy(pack)
    path = _entry(pack)
    entry = _head(path)
    alter(entry)
    _rewrite(path, entry)
    compiles = Compiles(monkeypatch)
    assert to_data(packs.compile_policy(pack)) == to_data(fresh) and compiles.n == 1


@pytest.mark.parametrize(
    "damage",
    [
        lambda b: b[:-1],  # truncated
        lambda b: b + b"x",
        lambda b: b.partition(b"\n")[0],  # the texts lost
        lambda b: b.replace(b"\n", b" ", 1),
        lambda b: b[: len(b) - 3] + b"\xff\xfe\xfd",  # not UTF-8
        lambda b: b"",
    ],
)
def test_a_damaged_entry_is_compiled_again(pack: Path, monkeypatch: pytest.MonkeyPatch, damage) -> None:  # noqa: ANN001
    fresh = packs.compile_policy(pack)
    path = _entry(pack)
    path.write_bytes(damage(path.read_bytes()))
    compiles = Compiles(monkeypatch)
    assert to_data(packs.compile_policy(pack)) == to_data(fresh) and compiles.n == 1
    compiles.n = 0
    assert to_data(packs.compile_policy(pack)) == to_data(fresh) and compiles.n == 0  # written again


def test_a_pack_path_with_a_line_break_is_cached(pack: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The entry's line of JSON holds the path escaped: the texts still start after it."""
    odd = pack.rename(pack.parent / "two\nlines")
    fresh = packs.compile_policy(odd)
    compiles = Compiles(monkeypatch)
    assert to_data(packs.compile_policy(odd)) == to_data(fresh) and compiles.n == 0


def test_an_entry_others_can_write_is_not_used(pack: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    packs.compile_policy(pack)
    _entry(pack).chmod(0o666)
    compiles = Compiles(monkeypatch)
    packs.compile_policy(pack)
    assert compiles.n == 1


def test_text_in_an_entry_never_runs_as_code(pack: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An entry whose files' stats and digest match is used as the pack (it is as trusted as
    the pack's files): its names go into generated code as literals, and a pattern test names
    only a pattern function."""
    _settle(pack, monkeypatch)
    path = _entry(pack)
    entry = _head(path)
    marker = tmp_path / "ran"
    payload = f"x' + __import__('os').system('touch {marker}') + '"
    text = json.dumps(entry).replace('"n0"', json.dumps(payload)).replace('"l0"', json.dumps(payload + "l"))
    _rewrite(path, json.loads(text))
    ev = Evaluator(packs.compile_policy(pack))
    ev.evaluate_many([{"status": "partial"}] * (DIRECT_FACTS + 1), on_error="return")  # the generated code too
    ev.evaluate({"status": "partial"})
    assert not marker.exists()
    entry["compiled"] = json.loads(text)["compiled"]
    slots = [i for i, f in enumerate(packs.CompiledPolicy._fields) if f == "slots"][0] + 2
    entry["compiled"][slots][1][5] = ["t", "system", "id"]  # a slot's test naming another function
    _rewrite(path, entry)
    with pytest.raises(ValueError, match="not a pattern test"):
        Evaluator(packs.compile_policy(pack)).evaluate({"status": "partial"})


def test_no_module_reads_pickle_or_marshal() -> None:
    """Caches are data: nothing in stoprule deserialises code (pickle, marshal, shelve)."""
    found = []
    for path, module in modules():
        for node in ast.walk(module):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else ([node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            )
            code = ("pickle", "marshal", "shelve")
            found += [f"{path.relative_to(SRC)}: {n}" for n in names if n.split(".")[0] in code]
    assert found == []
