"""``stoprule._util.oslite`` and ``pathlite``: ``os`` and ``os.path`` as the cold path uses them,
without importing ``os``. Each function answers as the standard library's does (table-driven,
beside ``posixpath``/``os`` in the same test), and a fresh interpreter using them imports no ``os``."""

from __future__ import annotations

import os
import posixpath
import subprocess
import sys
from pathlib import Path

import pytest

from stoprule._util import oslite, pathlite

SRC = Path(__file__).resolve().parents[2] / "src"

PATHS = [
    "", "/", "//", "///", "a", "a/", "a//", "/a", "//a", "///a", "/a/b", "/a/b/", "a/b/c", "a/./b",
    "a/../b", "../a", "./", ".", "..", "/..", "/a/..", "a/b/../../..", "~", "~/x", "~x/y", "a\\b",
    "/tmp//x//", "é/ü", "a b/c d",
]  # fmt: skip


@pytest.mark.parametrize("p", PATHS)
def test_string_functions_answer_as_posixpath(p: str) -> None:
    for name in ("split", "dirname", "basename", "isabs", "normpath"):
        assert getattr(pathlite, name)(p) == getattr(posixpath, name)(p), (name, p)
    assert (pathlite._py_normpath(p) or ".") == posixpath.normpath(p)  # Python 3.10's, on every version
    for q in PATHS:
        assert pathlite.join(p, q) == posixpath.join(p, q), (p, q)
    assert pathlite.join(p, "x", "/y", "z") == posixpath.join(p, "x", "/y", "z")
    assert pathlite.join(p) == posixpath.join(p)


@pytest.mark.parametrize("p", [x for x in PATHS if x])
def test_abspath_and_relpath_answer_as_posixpath(p: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "a" / "b")
    assert pathlite.abspath(p) == posixpath.abspath(p)
    for start in (None, "/", "..", "/tmp", str(tmp_path), "x/y"):
        assert pathlite.relpath(p, start) == posixpath.relpath(p, start), (p, start)


def test_bytes_and_path_like_arguments_answer_as_posixpath() -> None:
    assert pathlite.join(b"/a", b"b") == b"/a/b"
    assert pathlite.dirname(Path("/a/b")) == "/a"
    assert pathlite.basename(b"/a/b") == b"b"
    assert pathlite.normpath(b"a//b/..") == b"a"
    assert pathlite.join(Path("/a"), Path("b")) == "/a/b"
    for bad in (lambda: pathlite.join("a", b"b"), lambda: pathlite.join("a", 1)):
        with pytest.raises(TypeError):
            bad()
    with pytest.raises(ValueError):
        pathlite.relpath("")
    assert pathlite.splitext("a/b.c") == ("a/b", ".c")  # any other name: posixpath's


def test_file_predicates_answer_as_os_path(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("12345")
    (tmp_path / "d").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "f")
    (tmp_path / "dangling").symlink_to(tmp_path / "missing")
    (tmp_path / "dirlink").symlink_to(tmp_path / "d")
    cases = [str(tmp_path / n) for n in ("f", "d", "link", "dangling", "dirlink", "missing", "f/x")]
    cases += ["", "nul\0byte", str(tmp_path / "f") + "/"]
    for p in cases:
        for name in ("exists", "lexists", "isfile", "isdir", "islink"):
            assert getattr(pathlite, name)(p) == getattr(posixpath, name)(p), (name, p)
    assert pathlite.getsize(tmp_path / "f") == 5
    with pytest.raises(FileNotFoundError):
        pathlite.getsize(tmp_path / "missing")
    assert pathlite.samefile(tmp_path / "link", tmp_path / "f")
    assert not pathlite.samefile(tmp_path / "d", tmp_path / "f")


def test_realpath_answers_as_posixpath_over_links(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "r"
    (root / "a" / "b").mkdir(parents=True)
    (root / "abs").symlink_to(root / "a" / "b")
    (root / "rel").symlink_to("a/b")
    (root / "up").symlink_to("a/b/..")
    (root / "chain").symlink_to("rel")
    (root / "loop1").symlink_to("loop2")
    (root / "loop2").symlink_to("loop1")
    (root / "self").symlink_to("self")
    (root / "dangling").symlink_to("nowhere/x")
    monkeypatch.chdir(root / "a")
    names = ["abs", "rel", "up", "chain", "loop1", "self", "dangling", "missing", "abs/..", "rel/../..", "chain/c"]
    for p in [str(root / n) for n in names] + ["..", "b", "../rel", ".", "/", "//x/../y"]:
        assert pathlite.realpath(p) == posixpath.realpath(p), p
        try:
            expected: object = posixpath.realpath(p, strict=True)
        except OSError as exc:
            expected = type(exc)
        try:
            got: object = pathlite.realpath(p, strict=True)
        except OSError as exc:
            got = type(exc)
        assert got == expected, p


@pytest.mark.parametrize("p", ["~", "~/", "~/a/b", "~x", "~root/a", "a/~", "/~"])
@pytest.mark.parametrize("home", ["/home/u", "/home/u/", "/", "", None])
def test_expanduser_answers_as_posixpath(p: str, home: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    if home is None:
        monkeypatch.delenv("HOME", raising=False)
    else:
        monkeypatch.setenv("HOME", home)
    assert pathlite.expanduser(p) == posixpath.expanduser(p)


def test_makedirs_and_fdopen_behave_as_os(tmp_path: Path) -> None:
    oslite.makedirs(str(tmp_path / "a" / "b" / "c"))
    assert (tmp_path / "a" / "b" / "c").is_dir()
    with pytest.raises(FileExistsError):
        oslite.makedirs(str(tmp_path / "a" / "b"))
    oslite.makedirs(str(tmp_path / "a" / "b") + "/", exist_ok=True)
    oslite.makedirs(str(tmp_path / "n" / "."), exist_ok=True)
    assert (tmp_path / "n").is_dir()
    (tmp_path / "file").write_text("x")
    with pytest.raises(FileExistsError):
        oslite.makedirs(str(tmp_path / "file"), exist_ok=True)  # exists, and not a folder
    with pytest.raises(NotADirectoryError):
        oslite.makedirs(str(tmp_path / "file" / "sub"))
    oslite.makedirs(str(tmp_path / "m"), mode=0o700)
    assert (tmp_path / "m").stat().st_mode & 0o777 == 0o700 & ~_umask()
    fd = oslite.open(str(tmp_path / "file"), oslite.O_RDONLY)
    with oslite.fdopen(fd, "rb") as fh:
        assert fh.read() == b"x"
    fd = oslite.open(str(tmp_path / "file"), oslite.O_RDONLY)
    with oslite.fdopen(fd) as text:
        assert text.read() == "x"
    with pytest.raises(TypeError):
        oslite.fdopen("1")  # type: ignore[arg-type]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_os_names_and_environ_are_os_once_it_is_imported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STOPRULE_OSLITE_PROBE", "on")
    assert oslite.environ is os.environ and oslite.environb is os.environb
    assert oslite.environ["STOPRULE_OSLITE_PROBE"] == "on"
    assert oslite.walk is os.walk  # a name this module lacks: os's
    assert (oslite.sep, oslite.curdir, oslite.pardir, oslite.devnull) == (os.sep, os.curdir, os.pardir, os.devnull)
    assert (oslite.SEEK_SET, oslite.SEEK_CUR, oslite.SEEK_END) == (os.SEEK_SET, os.SEEK_CUR, os.SEEK_END)
    assert oslite.stat is os.stat and oslite.replace is os.replace and oslite._exit is os._exit
    assert oslite.path is pathlite


PROBE = """
import sys
sys.path.insert(0, sys.argv[1])
from stoprule._util import oslite as os
from stoprule._util.oslite import getpid  # a from-import asks the module for __path__: not os's
from stoprule._util.pathlite import S_IFMT
seen = dict(os.environ)
assert os.environb[b"ODD"] == b"caf\\xe9 \\xff"
here = os.path.abspath(".")
info = [os.path.join(here, "x"), os.path.dirname(here), os.path.isdir(here), os.path.expanduser("~/k"),
        os.path.realpath("."), os.path.relpath(here, "/"), os.getpid() > 0]
os.makedirs(os.path.join(here, "made", "deep"), exist_ok=True)
print(repr(("os" in sys.modules, "_collections_abc" in sys.modules, seen, info)))
"""


def test_a_fresh_interpreter_uses_them_without_importing_os(tmp_path: Path) -> None:
    """The process boundary is the point: what a ``python -I -S`` start imports."""
    env = {"HOME": "/home/someone", "LANG": "C.UTF-8", "PATH": os.environ.get("PATH", "/usr/bin")}
    raw = {k.encode(): v.encode() for k, v in env.items()} | {b"ODD": b"caf\xe9 \xff"}  # not UTF-8
    proc = subprocess.run(
        [sys.executable, "-I", "-S", "-c", PROBE, str(SRC)], cwd=tmp_path, env=raw, capture_output=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr.decode()
    imported_os, imported_abc, seen, info = eval(proc.stdout.decode())  # noqa: S307 - our own repr
    assert (imported_os, imported_abc) == (False, False)
    assert seen["HOME"] == "/home/someone" and seen["ODD"] == "caf\udce9 \udcff"  # as os.environ decodes it
    here = str(tmp_path.resolve())
    assert info == [here + "/x", str(Path(here).parent), True, "/home/someone/k", here, here[1:], True]
    assert (tmp_path / "made" / "deep").is_dir()
