"""The hook's bytecode bundle (stoprule._util.bundle): kept from what a process imported, used for a
module only while its source's stat says it is unchanged, ignored when it is not its owner's alone or
not for this interpreter; the wired stop keeps one and imports from it."""

from __future__ import annotations

import json
import marshal
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from clirunner import invoke
from hookharness import FIXTURES
from stoprule._util import bundle

NAMES = ("stoprule.limits", "stoprule.codes", "stoprule.agent.hook.adapters")  # two modules and a package


@pytest.fixture
def kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A bundle kept in ``tmp_path`` of the modules NAMES (this process imported them)."""
    for name in NAMES:
        __import__(name)
    target = tmp_path / "bundle.bin"
    monkeypatch.setattr(bundle, "path", lambda: str(target))
    monkeypatch.delitem(sys.modules, "stoprule.engine.build", raising=False)  # (another test compiled a pack)
    finder = bundle.BundleFinder({})
    finder.before = frozenset(sys.modules) - set(NAMES)
    assert bundle.keep(finder)
    return target


def _index(index: object) -> bytes:
    head = marshal.dumps(index)
    return len(head).to_bytes(8, "little") + head


def _fresh(finder: bundle.BundleFinder, name: str) -> object:
    spec = finder.find_spec(name)
    assert spec is not None
    module = type(sys)(name)
    module.__spec__ = spec
    module.__file__ = spec.origin
    spec.loader.exec_module(module)
    return module


def test_a_kept_module_is_imported_from_the_bundle_as_from_its_source(kept: Path) -> None:
    entries = bundle._read()
    assert set(entries) == set(NAMES)
    finder = bundle.BundleFinder(entries)
    limits = _fresh(finder, "stoprule.limits")
    import stoprule.limits

    public = [k for k in vars(stoprule.limits) if not k.startswith("__")]
    assert public and all(getattr(limits, k) == getattr(stoprule.limits, k) for k in public if k.isupper())
    spec = finder.find_spec("stoprule.agent.hook.adapters")
    assert spec.submodule_search_locations == [os.path.dirname(spec.origin)]  # its submodules found as usual
    assert spec.origin == stoprule.limits.__file__.replace("limits.py", "agent/hook/adapters/__init__.py")
    assert finder.find_spec("stoprule.cli.main") is None and not finder.stale  # not kept: the usual finders
    assert not bundle.keep(finder)  # nothing missed it: not written again


def test_a_changed_source_is_imported_as_usual_and_the_bundle_kept_again(kept: Path) -> None:
    entries = bundle._read()
    rel, is_package, stamp, code = entries["stoprule.limits"]
    size, mtime_ns, ctime_ns, inode = stamp
    entries["stoprule.limits"] = (rel, is_package, (size, mtime_ns, ctime_ns - 1, inode), code)  # its bytes changed
    finder = bundle.BundleFinder(entries)
    assert finder.find_spec("stoprule.limits") is None and finder.stale
    finder.before = frozenset(sys.modules) - {"stoprule.limits"}
    assert bundle.keep(finder)
    assert bundle._read()["stoprule.limits"][2] == stamp  # its entry from the source as it is


@pytest.mark.parametrize(
    "spoil",
    [
        pytest.param(lambda p: p.chmod(0o666), id="writable-by-others"),
        pytest.param(lambda p: p.write_bytes(b"\0not marshal"), id="garbage"),
        pytest.param(lambda p: p.write_bytes(_index((b"xxxx", sys.hexversion, {}))), id="other-magic"),
        pytest.param(lambda p: p.write_bytes(_index((bundle._MAGIC, 0, {}))), id="other-interpreter"),
        pytest.param(lambda p: p.write_bytes(p.read_bytes()[:-100]), id="cut-short"),
    ],
)
def test_a_bundle_not_to_be_trusted_is_ignored(kept: Path, spoil) -> None:  # type: ignore[no-untyped-def]
    assert bundle._read()
    spoil(kept)
    assert bundle._read() == {}


def test_a_damaged_entry_is_imported_as_usual(kept: Path) -> None:
    entries = bundle._read()
    rel, is_package, stamp, _ = entries["stoprule.limits"]
    entries["stoprule.limits"] = (rel, is_package, stamp, b"\0not marshal")
    import stoprule.limits

    limits = _fresh(bundle.BundleFinder(entries), "stoprule.limits")
    assert limits.SAFE_INT == stoprule.limits.SAFE_INT  # type: ignore[attr-defined]


def test_no_cache_reads_and_keeps_none(kept: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STOPRULE_NO_CACHE", "1")
    assert bundle._read() == {}
    assert not bundle.keep(bundle.BundleFinder({}))


def test_the_wired_stop_keeps_a_bundle_of_its_modules(tmp_path: Path) -> None:
    """The stop as ``stoprule init`` wires it keeps the bundle (beside the package's bytecode) of the
    modules it imported, and answers the same from it."""
    if not os.access(os.path.dirname(bundle.path()), os.W_OK) and os.path.isdir(os.path.dirname(bundle.path())):
        pytest.skip("the package's bytecode folder is not writable")
    from stoprule.agent.hook.wiring import TARGETS, find_entry

    env = {k: v for k, v in os.environ.items() if not k.startswith("STOPRULE_")}
    env.update(STOPRULE_CACHE_DIR=str(tmp_path / "cache"), HOME=str(tmp_path), XDG_RUNTIME_DIR=str(tmp_path / "n"))
    root = tmp_path / "p"
    root.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    assert invoke(["init", "--harness", "claude-code"], cwd=root, env=env).returncode == 0
    target = TARGETS["claude-code"]
    argv = shlex.split(find_entry(json.loads(Path(target.path(str(root), "local")).read_text()), target) or "")
    (root / "t.jsonl").write_bytes((FIXTURES / "claude-code" / "transcript.jsonl").read_bytes())
    transcript = str(root / "t.jsonl")
    stop = {"session_id": "s1", "transcript_path": transcript, "cwd": str(root), "hook_event_name": "Stop"}
    wanted = {"stoprule.agent.hook.runner", "stoprule.engine.evaluator", "stoprule.cli.hook_cmd"}
    answers: list[bytes] = []
    for _ in range(4):  # (the first compiles the pack and keeps none; another test's hook may write it meanwhile)
        p = subprocess.run(argv, input=json.dumps(stop).encode(), cwd=root, env=env, capture_output=True, timeout=120)
        assert p.returncode == 0, p.stderr.decode()
        answers.append(p.stdout)
        kept = set(bundle._read())
        if len(answers) > 1 and wanted <= kept:
            break
    assert wanted <= kept, sorted(kept)
    assert len(set(answers)) == 1  # the same answer, with and without the bundle


def test_a_process_that_compiled_a_pack_keeps_none(kept: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its modules (the compiler's) are not what the next stops import."""
    import stoprule.engine.build

    monkeypatch.setitem(sys.modules, "stoprule.engine.build", stoprule.engine.build)
    kept.unlink()
    assert not bundle.keep(bundle.BundleFinder({}))
    assert not kept.exists()


def test_the_bundle_lives_beside_the_package_bytecode_never_in_the_cache_folder(tmp_path: Path) -> None:
    """The cache folder holds data only; code is kept where the interpreter keeps the package's."""
    import stoprule

    assert Path(bundle.path()).parent == Path(stoprule.__file__).resolve().parent / "__pycache__"
    assert str(tmp_path) not in bundle.path()


def test_a_module_from_the_bundle_names_its_source_where_it_is(kept: Path) -> None:
    """Its code objects name the source file as it is now (an install moved since its bytecode was
    written shows the right file in a traceback), as the import system's own loader does."""
    entries = bundle._read()
    rel, is_package, stamp, code = entries["stoprule.limits"]
    moved = marshal.loads(code).replace(co_filename="/somewhere/else/limits.py")
    entries["stoprule.limits"] = (rel, is_package, stamp, marshal.dumps(moved))
    limits = _fresh(bundle.BundleFinder(entries), "stoprule.limits")
    assert limits.__spec__.loader.get_code("stoprule.limits").co_filename == limits.__file__  # type: ignore[attr-defined]
