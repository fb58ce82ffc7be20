"""A stand-in for ``jq`` on machines without it, for ``tests/test_docs.py`` only.

It implements exactly the filters README.md and docs/ use (``FILTERS`` below, plus ``.``,
``.field`` and ``.field // empty``), with jq's flags ``-r`` and ``-c``; any other filter exits 3
naming it, so a new filter in the docs fails loudly instead of silently. ``test_docs.py`` checks
that every jq filter in the docs is known here, and where jq exists, that the shim prints what
jq prints.

Usage: ``jq_shim.py [-r] [-c] FILTER [FILE]``.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Iterator
from typing import Any


def _text(value: Any) -> str:  # jq's string interpolation: strings raw, the rest as JSON
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _alt(a: Any, b: Any) -> Any:  # a // b
    return b if a is None or a is False else a


def _get(v: Any, key: str) -> Any:
    return v.get(key) if isinstance(v, dict) else None


FILTERS: dict[str, Callable[[Any], list[Any]]] = {
    ".": lambda v: [v],
    ".error // {verdict, reason}": lambda v: [
        _alt(_get(v, "error"), {"verdict": _get(v, "verdict"), "reason": _get(v, "reason")})
    ],
    '"\\(.verdict)/\\(.reason)  \\(.rule)  \\(.high_risk_stop // "")"': lambda v: [
        f"{_text(_get(v, 'verdict'))}/{_text(_get(v, 'reason'))}  {_text(_get(v, 'rule'))}  "
        f"{_text(_alt(_get(v, 'high_risk_stop'), ''))}"
    ],
    '"\\(.verdict)/\\(.reason), stop: \\(.stop)"': lambda v: [
        f"{_text(_get(v, 'verdict'))}/{_text(_get(v, 'reason'))}, stop: {_text(_get(v, 'stop'))}"
    ],
    "select(.requires_user_review) | .review_reason": lambda v: (
        [_get(v, "review_reason")] if _alt(_get(v, "requires_user_review"), None) is not None else []
    ),
}


def compile_filter(text: str) -> Callable[[Any], list[Any]] | None:
    if text in FILTERS:
        return FILTERS[text]
    m = re.fullmatch(r"\.([A-Za-z_][A-Za-z0-9_]*)", text)
    if m:
        key = m[1]
        return lambda v: [_get(v, key)]
    m = re.fullmatch(r"\.([A-Za-z_][A-Za-z0-9_]*) // empty", text)
    if m:  # the field, or nothing when it is null, false or missing
        key = m[1]
        return lambda v: [] if _alt(_get(v, key), None) is None else [_get(v, key)]
    return None


def _values(data: str) -> Iterator[Any]:
    decoder = json.JSONDecoder()
    i = 0
    while True:
        while i < len(data) and data[i].isspace():
            i += 1
        if i >= len(data):
            return
        value, i = decoder.raw_decode(data, i)
        yield value


def run(argv: list[str], data: str | None = None) -> tuple[int, str, str]:
    """Run ``jq ARGV`` over ``data`` (or the file named in ARGV): exit code, stdout, stderr."""
    raw = compact = False
    rest: list[str] = []
    for arg in argv:
        if arg in ("-r", "-c", "-rc", "-cr"):
            raw |= "r" in arg
            compact |= "c" in arg
        else:
            rest.append(arg)
    if not rest:
        return 2, "", "jq shim: no filter\n"
    fn = compile_filter(rest[0])
    if fn is None:
        return 3, "", f"jq shim: unsupported filter {rest[0]!r} (add it to tests/jq_shim.py)\n"
    if len(rest) > 1:
        with open(rest[1], encoding="utf-8") as fh:
            data = fh.read()
    out: list[str] = []
    try:
        for value in _values(data or ""):
            for result in fn(value):
                if raw and isinstance(result, str):
                    out.append(result)
                elif compact:
                    out.append(json.dumps(result, separators=(",", ":"), ensure_ascii=False))
                else:
                    out.append(json.dumps(result, indent=2, ensure_ascii=False))
    except json.JSONDecodeError as exc:
        return 2, "".join(x + "\n" for x in out), f"jq: error (at <stdin>): {exc}\n"
    return 0, "".join(x + "\n" for x in out), ""


def main(argv: list[str]) -> int:
    has_file = len([a for a in argv if not a.startswith("-")]) > 1
    code, out, err = run(argv, None if has_file else sys.stdin.read())
    sys.stdout.write(out)
    sys.stderr.write(err)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
