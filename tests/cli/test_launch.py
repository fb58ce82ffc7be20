"""The command ``stoprule init`` wires: this interpreter on ``stoprule/launch.py`` with ``-I -S``
(a hook's process skips ``site``'s start). It answers as the console script does, finds a
dependency outside its own folder (``site``'s start, run on the miss), and never imports a
module from the project it runs in."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import stoprule
from clirunner import invoke
from hookharness import FIXTURES, continues, payload
from stoprule.cli.init_cmd import default_command, stoprule_argv

LAUNCHER = Path(stoprule.__file__).resolve().parent / "launch.py"


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STOPRULE_")}
    env.update(
        STOPRULE_CACHE_DIR=str(tmp_path / "cache"),
        HOME=str(tmp_path / "home"),
        XDG_STATE_HOME=str(tmp_path / "state"),
        XDG_RUNTIME_DIR=str(tmp_path / "no-run"),
    )
    return env


def test_init_wires_this_interpreter_on_the_launcher(tmp_path: Path) -> None:
    assert stoprule_argv() == [sys.executable, "-I", "-S", str(LAUNCHER)]
    assert shlex.split(default_command("codex")) == [*stoprule_argv(), "hook", "codex"]
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    r = invoke(["init", "--harness", "claude-code"], cwd=tmp_path, env=_env(tmp_path))
    assert r.returncode == 0, r.stderr
    settings = json.loads((tmp_path / ".claude" / "settings.local.json").read_text())  # --local, the default
    commands = [h["command"] for e in settings["hooks"]["Stop"] for h in e["hooks"]]
    assert commands == [default_command("claude-code")]
    r = invoke(["init", "--harness", "claude-code", "--shared"], cwd=tmp_path, env=_env(tmp_path))
    assert r.returncode == 0, r.stderr
    shared = json.loads((tmp_path / ".claude" / "settings.json").read_text())  # the team's: portable
    assert [h["command"] for e in shared["hooks"]["Stop"] for h in e["hooks"]] == ["stoprule hook claude-code"]


def test_the_wired_command_answers_as_the_console_script_does(tmp_path: Path) -> None:
    root = tmp_path / "p"
    root.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    env = _env(tmp_path)
    assert invoke(["init", "--harness", "claude-code"], cwd=root, env=env).returncode == 0
    (root / "t.jsonl").write_bytes((FIXTURES / "claude-code" / "transcript.jsonl").read_bytes())
    (root / "json.py").write_text("raise SystemExit('a project module was imported')\n")  # -I: never
    stop = dict(payload("claude-code"), cwd=str(root), transcript_path=str(root / "t.jsonl"))
    answers = []
    for argv in (
        [*shlex.split(default_command("claude-code"))],
        [sys.executable, "-I", "-m", "stoprule", "hook", "claude-code"],  # as the console script: no cwd on the path
    ):
        p = subprocess.run(argv, input=json.dumps(stop).encode(), cwd=root, env=env, capture_output=True, timeout=120)
        assert p.returncode == 0, p.stderr.decode()
        answers.append(json.loads(p.stdout))
    assert answers[0] == answers[1] and continues("claude-code", answers[0])  # the fixture's open task


@pytest.mark.parametrize("how", ["absolute", "dotted", "relative"])
def test_the_launcher_and_the_guards_entry_find_the_package_from_any_path_to_them(tmp_path: Path, how: str) -> None:
    """As init writes them (absolute and normal), and by a path with ``.``/``..`` parts or relative to
    the working directory: each puts the folder holding the package on the path, and runs."""
    pkg = LAUNCHER.parent
    entries = {"launch.py": (["--version"], "stoprule"), "agent/guard/__main__.py": (["nonesuch"], "usage:")}
    for entry, (args, said) in entries.items():
        script = pkg / entry
        if how == "dotted":
            arg, cwd = f"{pkg}/../{pkg.name}/./{entry}", tmp_path
        elif how == "relative":
            arg, cwd = f"./{entry}", pkg
        else:
            arg, cwd = str(script), tmp_path
        p = subprocess.run(
            [sys.executable, "-I", "-S", arg, *args], cwd=cwd, capture_output=True, text=True, timeout=60
        )
        assert p.returncode == 0 and said in p.stdout + p.stderr, (entry, p.stderr)
        assert "Traceback" not in p.stderr, p.stderr


def test_a_module_outside_its_folder_is_found_through_site(tmp_path: Path) -> None:
    """A top-level module no folder on the launcher's path holds runs ``site``'s start (here one
    that adds the folder holding it), once, and is found."""
    (tmp_path / "dep_of_stoprule.py").write_text("VALUE = 42\n")
    code = (
        "import site, sys\n"
        "calls = []\n"
        f"site.main = lambda: (calls.append(1), sys.path.append({str(tmp_path)!r}))\n"
        f"sys.path.append({str(LAUNCHER.parent.parent)!r})\n"  # as launch.py does
        "from stoprule._util.launcher import SiteOnMiss\n"
        "g = {'SiteOnMiss': SiteOnMiss}\n"
        "sys.meta_path.append(SiteOnMiss)\n"
        "import dep_of_stoprule\n"
        "try:\n"
        "    import no_such_module_anywhere\n"
        "except ImportError:\n"
        "    pass\n"
        "print(dep_of_stoprule.VALUE, len(calls), g['SiteOnMiss'] in sys.meta_path)\n"
    )
    p = subprocess.run([sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["42", "1", "False"]  # found; site's start ran once; the finder left


@pytest.mark.integration
def test_a_cold_cache_compiles_the_pack_through_the_launcher(tmp_path: Path, default_pack: Path) -> None:
    """Compiling a pack (PyYAML, pydantic: site-packages in a normal install; the venv's in an
    editable one) works from the launcher."""
    env = _env(tmp_path)
    p = subprocess.run(
        [*stoprule_argv(), "check", "--policy", str(default_pack)], env=env, capture_output=True, text=True, timeout=120
    )
    assert p.returncode == 0 and p.stdout.startswith("ok: "), p.stderr


def _own_modules() -> list[str]:
    """Every stoprule module and package in its folders (source and extension modules)."""
    import importlib.machinery

    root = Path(stoprule.__file__).resolve().parent
    out = []
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if "__pycache__" in rel.parts or "policies" in rel.parts:
            continue
        if path.is_dir() and (path / "__init__.py").is_file():
            out.append(".".join(("stoprule", *rel.parts)))
        for suffix in [".py", *importlib.machinery.EXTENSION_SUFFIXES]:  # the longest extension suffix first
            if path.is_file() and path.name.endswith(suffix) and path.name != "__init__.py":
                stem = path.name[: -len(suffix)]
                if stem.isidentifier():  # not another Python's build (``X.cpython-312-….so`` under 3.11)
                    out.append(".".join(("stoprule", *rel.parent.parts, stem)))
                break
    return out


def test_the_launchers_finder_finds_each_module_as_the_path_finder_does() -> None:
    """OwnModules (the wired command's finder of stoprule's modules): the same file, loader, and
    package folder as the path finder gives, for every module; no answer where it has none."""
    import importlib
    import importlib.machinery

    from stoprule._util.launcher import OwnModules

    names = _own_modules()
    assert "stoprule.engine.durable_rules_engine" in names and "stoprule.agent.hook.runner" in names
    for name in names:
        parent = importlib.import_module(name.rpartition(".")[0])
        want = importlib.machinery.PathFinder.find_spec(name, parent.__path__)
        got = OwnModules.find_spec(name, parent.__path__)
        assert want is not None and got is not None, name
        assert isinstance(got.loader, type(want.loader)), name  # its own source loader is one
        assert (got.origin, got.submodule_search_locations, got.cached, got.has_location, got.parent) == (
            want.origin,
            want.submodule_search_locations,
            want.cached,
            want.has_location,
            want.parent,
        ), name
    for name, path in [
        ("stoprule.no_such_module", stoprule.__path__),
        ("stoprule.policies", stoprule.__path__),  # a data folder (no __init__.py) beside the modules
        ("other.cli", [str(Path(stoprule.__file__).parent)]),  # not stoprule's
        ("stoprule.cli", None),  # a top-level search
    ]:
        assert OwnModules.find_spec(name, path) is None, name


@pytest.mark.parametrize("cache", ["matching", "stale", "hash-based", "none", "foreign magic"])
def test_the_launchers_loader_reads_the_code_the_path_finders_would(
    tmp_path: Path, cache: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SourceLoader takes a bytecode cache that matches its source (as SourceLoader.get_code checks
    it) and leaves every other case to the stock loader: the same code object either way."""
    import importlib.machinery
    import importlib.util
    import py_compile

    from stoprule._util.launcher import SourceLoader

    src = tmp_path / "probe_mod.py"
    src.write_text("VALUE = 1\n\ndef f():\n    return VALUE\n")
    cached = importlib.util.cache_from_source(str(src))
    if cache != "none":
        mode = py_compile.PycInvalidationMode
        py_compile.compile(
            str(src), cfile=cached, invalidation_mode=mode.CHECKED_HASH if cache == "hash-based" else mode.TIMESTAMP
        )
    if cache == "stale":  # the source edited after its cache was written (its size differs)
        src.write_text("VALUE = 22\n\ndef f():\n    return VALUE\n")
    if cache == "foreign magic":  # another Python's bytecode at this name
        data = Path(cached).read_bytes()
        Path(cached).write_bytes(b"\x00\x00" + data[2:])
    want = importlib.machinery.SourceFileLoader("probe_mod", str(src)).get_code("probe_mod")
    if cache == "matching":  # read without the stock loader's steps

        def stock(self: object, fullname: str) -> None:
            raise AssertionError("the stock get_code ran for a matching cache")

        monkeypatch.setattr(importlib.machinery.SourceFileLoader, "get_code", stock)
    loader = SourceLoader("probe_mod", str(src))
    loader.cached = cached
    got = loader.get_code("probe_mod")
    assert got == want and got.co_filename == str(src)
    namespace: dict[str, object] = {}
    exec(got, namespace)
    assert namespace["VALUE"] == (22 if cache == "stale" else 1)


def test_the_wired_command_imports_stoprule_through_its_finder(tmp_path: Path) -> None:
    probe = (
        "import sys; sys.argv[1:] = ['--version']\n"
        "from stoprule._util.launcher import OwnModules, start\nstart()\n"
        "import stoprule.cli.main, stoprule.engine.evaluator\n"
        "print(OwnModules in sys.meta_path, sorted(OwnModules._listings)[:1])\n"
    )
    out = subprocess.run(
        [sys.executable, "-I", "-S", "-c", f"import sys; sys.path.append({str(LAUNCHER.parent.parent)!r})\n{probe}"],
        capture_output=True,
        text=True,
        env=_env(tmp_path),
        check=True,
    )
    assert out.stdout.startswith("True ['"), out.stdout + out.stderr
