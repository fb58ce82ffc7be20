"""One error tree: every exception class stoprule defines is a StopruleError (or an OSError, or
private to its module), each carries its exit code, and the command line has one handler."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import pytest

import stoprule.diagnostics as diagnostics
from clirunner import invoke
from srctree import SRC, modules
from stoprule import codes
from stoprule.diagnostics import EXIT_INVALID, EXIT_NOT_OK, CommandError, StopruleError

_BUILTIN = {"Exception": "other", "ValueError": "other", "OSError": "oserror", "StopruleError": "tree"}


def _exception_classes() -> dict[str, tuple[str, list[str]]]:
    """Every class of src/ (name -> (module file, base names as written))."""
    found: dict[str, tuple[str, list[str]]] = {}
    for path, module in modules():
        for node in ast.walk(module):
            if isinstance(node, ast.ClassDef):
                bases = [
                    b.id if isinstance(b, ast.Name) else b.attr if isinstance(b, ast.Attribute) else ""
                    for b in node.bases
                ]
                found[node.name] = (str(path.relative_to(SRC)), bases)
    return found


def _kind(name: str, classes: dict[str, tuple[str, list[str]]], seen: frozenset[str] = frozenset()) -> str:
    """``tree``, ``oserror``, ``other`` (an exception outside the tree) or ``none`` (not an exception)."""
    if name in _BUILTIN:
        return _BUILTIN[name]
    if name not in classes or name in seen:
        return "none"
    kinds = {_kind(b, classes, seen | {name}) for b in classes[name][1]}
    for kind in ("tree", "oserror", "other"):
        if kind in kinds:
            return kind
    return "none"


@pytest.mark.integration
def test_every_public_exception_is_in_the_tree() -> None:
    classes = _exception_classes()
    outside = sorted(
        f"{where}: {name}"
        for name, (where, _) in classes.items()
        if _kind(name, classes) == "other" and not name.startswith("_")
    )
    assert not outside, f"derive these from StopruleError (their package's base): {outside}"


def test_the_tree_is_drawn_where_it_is_defined() -> None:
    doc = inspect.getdoc(diagnostics) or ""
    for name, value in vars(diagnostics).items():
        if inspect.isclass(value) and issubclass(value, StopruleError):
            assert f" {name} " in doc, name


@pytest.mark.parametrize(
    ("argv", "code", "message"),
    [
        (["replay", "--jobs", "-1", "t.jsonl"], EXIT_INVALID, "stoprule: --jobs must be 0 (one per CPU) or more\n"),
        (["report", "show", "T-404"], EXIT_NOT_OK, "stoprule: no blocked report for task T-404"),
        (["eval", "--policy", "nowhere"], EXIT_INVALID, "stoprule: 1 error(s) in nowhere\n"),
    ],
)
def test_one_handler_prints_the_report_and_returns_the_code(
    tmp_path: Path, argv: list[str], code: int, message: str
) -> None:
    (tmp_path / ".stoprule").mkdir()
    r = invoke(argv, cwd=tmp_path, input="{}")
    assert r.returncode == code and message in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_a_command_error_carries_its_code() -> None:
    assert CommandError("x").exit_code == EXIT_INVALID and CommandError("x", EXIT_NOT_OK).exit_code == EXIT_NOT_OK
    assert CommandError("nothing here").report() == "stoprule: nothing here"


def test_no_command_returns_a_literal_error_code() -> None:
    literal = []
    for path, module in modules(SRC / "cli"):
        for node in ast.walk(module):
            if isinstance(node, ast.Return) and isinstance(node.value, ast.Constant) and node.value.value in (1, 2):
                literal.append(f"{path.name}:{node.lineno}")
    assert not literal, f"return EXIT_NOT_OK / EXIT_INVALID, or raise CommandError: {literal}"


# every code of stoprule.codes, and any string of a code's family (but ``hook.*``: observations
# such as ``hook.session_id`` are named so too); file names that look like codes are not
_CODES = {v for k, v in vars(codes).items() if k.isupper()}
_FAMILIES = sorted({v.split(".")[0] for v in _CODES} - {"hook"})
_FAMILY = re.compile(rf"^({'|'.join(_FAMILIES)})\.[a-z_]+$")
_NOT_CODES = {"config.yaml", "config.toml", "ledger.db", "ledger.keys"}


def test_error_codes_are_named_constants() -> None:
    inline = []
    for path, tree in modules():
        rel = path.relative_to(SRC).as_posix()
        if rel == "codes.py":
            continue
        for node in ast.walk(tree):
            value = node.value if isinstance(node, ast.Constant) else None
            if isinstance(value, str) and (value in _CODES or _FAMILY.match(value)) and value not in _NOT_CODES:
                inline.append(f"{rel}:{node.lineno}: {value}")
    assert not inline, f"use the constant of stoprule.codes: {inline}"


def test_each_code_is_spelt_once() -> None:
    spelt = [v for k, v in vars(codes).items() if k.isupper()]
    assert len(spelt) == len(set(spelt)) and all(re.fullmatch(r"[a-z_]+\.[a-z_]+", v) for v in spelt)
    assert all(k == v.replace(".", "_").upper() for k, v in vars(codes).items() if k.isupper())
