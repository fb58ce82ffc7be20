"""The stop's JSON codec without the ``json`` package (``_util.jsonin``, ``_util.jsonout``) and its
regexes compiled from kept programs without ``re`` (``_util.regex``): the same results as the
standard library's, and a kept program that is damaged, another pattern's or writable by others
never used."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from stoprule._util import regex
from stoprule._util.jsonin import loads
from stoprule._util.jsonout import dumps

VALUES = [
    {"a": [1, 2.5, None, True, False, "é\u2028\x00\ud800"], "b": {"z": 1, "a": 1e-9, "m": -0.0}},
    "text",
    12,
    [],
    {},
    1e300,
    {1: 2, 2.5: "x", None: 3},
    {"nested": [[[{"k": ["v"]}]]]},
]
OPTIONS = [
    {},
    {"ensure_ascii": False},
    {"sort_keys": True},
    {"separators": (",", ":")},
    {"default": str},
    {"check_circular": False},
    {"indent": 2},
]


@pytest.mark.parametrize("options", OPTIONS, ids=str)
@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_dumps_writes_what_json_writes(value: object, options: dict) -> None:
    if options.get("sort_keys") and isinstance(value, dict) and len({type(k) for k in value}) > 1:
        pytest.skip("keys of mixed types do not sort")
    assert dumps(value, **options) == json.dumps(value, **options)


@pytest.mark.parametrize(
    ("value", "options", "error"),
    [
        ({"x": object()}, {}, TypeError),
        (float("nan"), {"allow_nan": False}, ValueError),
        ({"x": float("inf")}, {"allow_nan": False}, ValueError),
    ],
)
def test_dumps_refuses_what_json_refuses(value: object, options: dict, error: type[Exception]) -> None:
    with pytest.raises(error):
        json.dumps(value, **options)
    with pytest.raises(error):
        dumps(value, **options)


def test_dumps_finds_a_circular_reference_and_stays_usable() -> None:
    looped: list[object] = []
    looped.append(looped)
    with pytest.raises(ValueError, match="Circular"):
        dumps(looped)
    shared = [1]
    assert dumps([shared, shared]) == "[[1], [1]]"  # (no marker left behind by the failed call)


@pytest.mark.parametrize(
    "text",
    ['{"a": 1}', " [1, 2] \n", '"x"', "NaN", b'{"a": "\xc3\xa9"}', b'\xef\xbb\xbf{"a": 1}', "1e400", '{"a":{"b":[]}}'],
)
def test_loads_reads_what_json_reads(text: str | bytes) -> None:
    got, want = loads(text), json.loads(text)
    assert got == want or (got != got and want != want)  # NaN


@pytest.mark.parametrize("text", ["", "{", '{"a": 1} x', "\ufeff{}", "[1,]", "{'a': 1}"])
def test_loads_refuses_what_json_refuses(text: str) -> None:
    with pytest.raises(ValueError):
        json.loads(text)
    with pytest.raises(ValueError):
        loads(text)


def test_loads_hands_floats_and_constants_to_the_caller() -> None:
    def finite(t: str) -> float:
        if t in ("NaN", "Infinity", "-Infinity"):
            raise ValueError(t)
        return float(t)

    assert loads('{"x": 1.5}', parse_float=lambda t: ("float", t)) == {"x": ("float", "1.5")}
    with pytest.raises(ValueError):
        loads('{"x": NaN}', parse_constant=finite)


PATTERNS = [
    (r"(?i)^\s*(note|fyi|tip)\b", 2),
    (r"(?P<key>[a-z]+)=(?P<value>\S+)?", 0),
    (r"[\u2190-\u2bff\U0001f000-\U0001faff]+$", 0),
    (r"(?s)```.*?(?:```|\Z)", 0),
    (rb'"key"\s*:\s*', 0),
]
TEXTS = ["Note that", "  fyi: x", "a=1 b= c=3", "done ✅", "x\n```code``` y", "```open", "no"]


@pytest.fixture
def kept(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The programs kept under ``tmp_path`` (not beside the package's bytecode), none compiled yet."""
    monkeypatch.delenv("STOPRULE_NO_CACHE", raising=False)
    monkeypatch.setattr(regex, "__file__", str(tmp_path / "regex.py"))
    monkeypatch.setattr(regex, "_COMPILED", {})
    monkeypatch.setattr(regex, "_FOLDER", None)  # worked out again from that __file__
    return tmp_path / "__pycache__"


@pytest.mark.parametrize(("pattern", "flags"), PATTERNS, ids=repr)
def test_a_kept_program_matches_as_re_compiles_it(kept: Path, pattern: str | bytes, flags: int) -> None:
    want = re.compile(pattern, flags)
    first = regex.compiled(pattern, flags)  # compiled by re's parser and compiler, its program kept
    assert list(kept.rglob("*.json")), "nothing kept"
    regex._COMPILED.clear()
    again = regex.compiled(pattern, flags)  # from the kept program
    assert again is not first
    for got in (first, again):
        assert (got.pattern, got.flags, got.groups, got.groupindex) == (
            want.pattern,
            want.flags,
            want.groups,
            want.groupindex,
        )
        for text in TEXTS:
            subject = text.encode() if isinstance(pattern, bytes) else text
            m, w = got.search(subject), want.search(subject)  # type: ignore[arg-type]
            assert (m and (m.span(), m.groups())) == (w and (w.span(), w.groups()))


def _damage(path: Path) -> None:
    row = json.loads(path.read_text())
    row[4] = b"".join(c.to_bytes(4, sys.byteorder) for c in (9999, 1, 2)).hex()  # a program the engine refuses
    path.write_text(json.dumps(row))


def _swap_pattern(path: Path) -> None:
    row = json.loads(path.read_text())
    row[0] = "another pattern"
    path.write_text(json.dumps(row))


@pytest.mark.parametrize(
    "spoil",
    [
        _damage,
        _swap_pattern,
        lambda p: p.write_text("{not json"),
        lambda p: p.chmod(0o666),  # others may write it
    ],
    ids=["refused program", "another pattern's", "malformed", "writable by others"],
)
def test_a_spoiled_kept_program_is_compiled_again(kept: Path, spoil: object) -> None:
    pattern = r"(?P<key>[a-z]+)=(?P<value>\S+)?"
    regex.compiled(pattern)
    (path,) = kept.rglob("*.json")
    spoil(path)  # type: ignore[operator]
    regex._COMPILED.clear()
    got = regex.compiled(pattern)
    assert got.search("x a=1").groupdict() == {"key": "a", "value": "1"}  # type: ignore[union-attr]


def test_no_program_is_kept_when_caching_is_off(kept: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STOPRULE_NO_CACHE", "1")
    assert regex.compiled(r"a+b").search("xaab")
    assert not kept.exists()


def test_a_kept_program_is_compiled_without_re(tmp_path: Path) -> None:
    """A fresh interpreter: the second process matches without importing ``re`` (nor ``enum``)."""
    src = Path(regex.__file__).resolve().parent.parent.parent
    probe = (
        "import sys\n"
        f"sys.path.insert(0, {str(src)!r})\n"
        "from stoprule._util import regex\n"
        f"regex.__file__ = {str(tmp_path / 'regex.py')!r}\n"
        "m = regex.compiled(r'(?i)^\\s*(note|fyi)\\b', 2).search('  NOTE this')\n"
        "print(m.group(1), 're' in sys.modules, 'enum' in sys.modules)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "STOPRULE_NO_CACHE"}
    first = subprocess.run([sys.executable, "-I", "-S", "-c", probe], capture_output=True, text=True, env=env)
    second = subprocess.run([sys.executable, "-I", "-S", "-c", probe], capture_output=True, text=True, env=env)
    assert first.stdout.split() == ["NOTE", "True", "True"], first.stderr
    assert second.stdout.split() == ["NOTE", "False", "False"], second.stderr
