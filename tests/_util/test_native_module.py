"""stoprule._util.native: the C module ``_native`` (when built) and the standard library's
fallback give the same checksums (zlib's, value for value: cache keys and frozen records written
by one are read by the other), lock alike and report readable descriptors alike. A development
install has the C module (``STOPRULE_REQUIRE_SPEEDUPS=1``, set by .ci/run, turns a missing build
into a failure instead of a skip)."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import zlib
from pathlib import Path
from types import ModuleType

import pytest

from stoprule._util import native

try:
    from stoprule._util import _native as c_module  # type: ignore[attr-defined]
except ImportError:
    c_module = None

REQUIRED = os.environ.get("STOPRULE_REQUIRE_SPEEDUPS") == "1"
SIZES = [0, 1, 7, 8, 9, 15, 16, 63, 5551, 5552, 5553, 11105, 65537, 1 << 20]


def _fallback() -> ModuleType:
    """``native`` as it is without the C module: its source run with ``_native`` unimportable."""
    source = Path(native.__file__).read_text()
    module = ModuleType("native_fallback")
    saved = sys.modules.get("stoprule._util._native")
    sys.modules["stoprule._util._native"] = None  # type: ignore[assignment]  # import fails
    try:
        exec(compile(source, native.__file__, "exec"), module.__dict__)
    finally:
        if saved is None:
            del sys.modules["stoprule._util._native"]
        else:
            sys.modules["stoprule._util._native"] = saved
    assert module.crc32.__module__ == "native_fallback"
    return module


IMPLEMENTATIONS = [pytest.param("c", id="c"), pytest.param("fallback", id="fallback")]


@pytest.fixture(params=IMPLEMENTATIONS)
def impl(request: pytest.FixtureRequest) -> ModuleType:
    if request.param == "fallback":
        return _fallback()
    if c_module is None:
        if REQUIRED:
            pytest.fail("stoprule._util._native is not built")
        pytest.skip("stoprule._util._native is not built")
    return native


def test_the_c_module_is_what_native_uses_when_built() -> None:
    if c_module is None:
        pytest.skip("not built")
    assert native.crc32 is c_module.crc32
    assert (native.LOCK_SH, native.LOCK_EX, native.LOCK_NB) == (c_module.LOCK_SH, c_module.LOCK_EX, c_module.LOCK_NB)


@pytest.mark.parametrize("size", SIZES)
def test_checksums_are_zlibs(impl: ModuleType, size: int) -> None:
    data = random.Random(size).randbytes(size)
    assert impl.crc32(data) == zlib.crc32(data)
    assert impl.adler32(data) == zlib.adler32(data)
    for start in (0, 1, 0xDEADBEEF, 0xFFFFFFFF):
        assert impl.crc32(data, start) == zlib.crc32(data, start)
    for start in (0, 1, zlib.adler32(b"x" * 7000), 0xFFF0FFF0):  # values Adler-32 can take
        assert impl.adler32(data, start) == zlib.adler32(data, start)
    assert impl.content_key(data) == f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}{size:x}"


def test_checksums_chain_and_take_any_buffer(impl: ModuleType) -> None:
    data = bytes(range(256)) * 300
    assert impl.crc32(data[1000:], impl.crc32(data[:1000])) == zlib.crc32(data)
    assert impl.adler32(data[1000:], impl.adler32(data[:1000])) == zlib.adler32(data)
    assert impl.crc32(memoryview(data)[3:]) == zlib.crc32(data[3:])  # unaligned
    assert impl.crc32(bytearray(data)) == zlib.crc32(data)
    assert impl.adler32(b"\xff" * 100_000) == zlib.adler32(b"\xff" * 100_000)  # the sums' largest growth
    with pytest.raises(TypeError):
        impl.crc32("text")


def test_flock_excludes_another_descriptor(impl: ModuleType, tmp_path: Path) -> None:
    path = str(tmp_path / "lock")
    a = os.open(path, os.O_RDWR | os.O_CREAT)
    b = os.open(path, os.O_RDWR)
    try:
        impl.flock(a, impl.LOCK_EX)
        with pytest.raises(BlockingIOError):
            impl.flock(b, impl.LOCK_SH | impl.LOCK_NB)
        os.close(a)
        a = -1
        impl.flock(b, impl.LOCK_EX | impl.LOCK_NB)  # closing released it
    finally:
        for fd in (a, b):
            if fd >= 0:
                os.close(fd)
    with pytest.raises(OSError):
        impl.flock(b, impl.LOCK_EX)  # closed


def test_readable_reports_data_end_of_file_and_timeout(impl: ModuleType) -> None:
    r1, w1 = os.pipe()
    r2, w2 = os.pipe()
    try:
        assert impl.readable([r1, r2], 1) == []
        os.write(w2, b"x")
        assert impl.readable([r1, r2], 1000) == [r2]
        os.close(w1)
        w1 = -1
        assert sorted(impl.readable([r1, r2], 1000)) == sorted([r1, r2])  # end of file is readable
    finally:
        for fd in (r1, r2, w1, w2):
            if fd >= 0:
                os.close(fd)


def test_a_child_output_is_read_through_it() -> None:
    """stoprule._util.command reads a command's output under ``readable`` (the stop's git status)."""
    from stoprule._util.command import capture

    code, out, err = capture([sys.executable, "-c", "import sys; print('o' * 100000); print('e', file=sys.stderr)"], 60)
    assert (code, len(out), err.strip()) == (0, 100001, b"e")
    ref = subprocess.run([sys.executable, "-c", "print('x')"], capture_output=True, check=True)
    assert capture([sys.executable, "-c", "print('x')"], 60)[1] == ref.stdout
