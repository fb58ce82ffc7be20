"""Build hook: compile the durable_rules engine into stoprule (``stoprule.engine.durable_rules_engine``).

The engine is durable-rules 2.0.28's C code, vendored with a one-line fix for Python 3.13
(``third_party/durable-rules-*``; its ``STOPRULE.md`` says what changed). It is built here,
as part of stoprule's own wheel, for every Python version, so the published metadata names
no local path and no unmaintained package: a wheel (tagged for its Python and platform)
holds the compiled engine; an sdist holds the sources and compiles them when installed (a
C compiler is needed, as durable-rules itself needs one). An editable install compiles it
into ``src/stoprule/engine/`` (git-ignored).

It also compiles the optional accelerator ``stoprule.engine._speedups``
(``src/stoprule/engine/_speedups.c``) in the manner of markupsafe's speedups: a failed build
is reported and tolerated (stoprule then evaluates in Python, with the same results), and
``STOPRULE_NO_SPEEDUPS=1`` skips it. ``STOPRULE_SPEEDUPS_CFLAGS`` adds compiler flags (``.ci/run``
gives one the compiler refuses, to check that a wheel without the accelerator works).

And, alike (optional, the same switches), ``stoprule._util._native`` (``src/stoprule/_util/_native.c``):
flock, poll, crc32 and adler32 in one small module, so a stop loads one shared library for them
instead of three of the standard library's (without it, ``stoprule._util.native`` uses those).
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

HERE = Path(__file__).resolve().parent
MODULE = "durable_rules_engine"
SPEEDUPS = "_speedups"
NATIVE = "_native"


def _engine_source() -> Path:
    found = sorted(HERE.glob("third_party/durable-rules-*/src"))
    if not found:
        raise RuntimeError("third_party/durable-rules-*/src is missing: the engine cannot be built")
    return found[-1]


def _build(ext: Any, out_dir: Path) -> Path:
    """Compile one extension module into ``out_dir``; return the file written."""
    from setuptools import Distribution
    from setuptools.command.build_ext import build_ext

    with tempfile.TemporaryDirectory(prefix="stoprule-build-") as tmp:
        dist = Distribution({"name": ext.name, "ext_modules": [ext]})
        cmd = build_ext(dist)
        cmd.build_lib = os.path.join(tmp, "lib")
        cmd.build_temp = os.path.join(tmp, "temp")
        cmd.ensure_finalized()
        cmd.run()
        (built,) = Path(cmd.build_lib).glob(f"{ext.name}*")
        out_dir.mkdir(parents=True, exist_ok=True)
        target = out_dir / (ext.name + sysconfig.get_config_var("EXT_SUFFIX"))
        shutil.copyfile(built, target)
    return target


def build_engine(out_dir: Path) -> Path:
    """Compile the engine extension into ``out_dir``; return the file written."""
    from setuptools import Extension

    src = _engine_source()
    rules = [str(src / "rules" / f"{name}.c") for name in ("json", "rete", "state", "events", "regex")]
    ext = Extension(
        MODULE,
        sources=[str(src / "rulespy" / "rules.c"), *rules],
        include_dirs=[str(src / "rules")],
        extra_compile_args=["-std=c99", "-D_GNU_SOURCE", "-fcommon"],
    )
    return _build(ext, out_dir)


def build_speedups(out_dir: Path, name: str = SPEEDUPS, folder: str = "engine") -> Path | None:
    """Compile an optional C module (the accelerator; ``_native``) into ``out_dir``: the file
    written, or None when it is skipped (``STOPRULE_NO_SPEEDUPS=1``) or its build fails (reported,
    not fatal)."""
    if os.environ.get("STOPRULE_NO_SPEEDUPS") == "1":
        return None
    from setuptools import Extension

    flags = ["-O2", "-std=c11", *shlex.split(os.environ.get("STOPRULE_SPEEDUPS_CFLAGS", ""))]
    source = HERE / "src" / "stoprule" / folder / f"{name}.c"
    ext = Extension(name, sources=[str(source)], extra_compile_args=flags, extra_link_args=flags[2:])
    try:
        return _build(ext, out_dir)
    except Exception as exc:  # noqa: BLE001 - any failure: stoprule runs without it
        if name == SPEEDUPS:
            what = f"the optional accelerator was not built ({exc}); evaluation runs in Python"
        else:
            what = f"the optional {name} module was not built ({exc}); the standard library's are used"
        print(f"stoprule: {what}", file=sys.stderr)
        return None


class EngineBuildHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel":
            return
        if version == "editable":  # the package is imported from src/: build the engine there
            build_engine(HERE / "src" / "stoprule" / "engine")
            build_speedups(HERE / "src" / "stoprule" / "engine")
            build_speedups(HERE / "src" / "stoprule" / "_util", NATIVE, "_util")
        else:
            self._tmp = tempfile.mkdtemp(prefix="stoprule-engine-")
            for out in (build_engine(Path(self._tmp)), build_speedups(Path(self._tmp))):
                if out is not None:
                    build_data["force_include"][str(out)] = f"stoprule/engine/{out.name}"
            native = build_speedups(Path(self._tmp) / "util", NATIVE, "_util")
            if native is not None:
                build_data["force_include"][str(native)] = f"stoprule/_util/{native.name}"
        build_data["pure_python"] = False
        build_data["infer_tag"] = True

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        tmp = getattr(self, "_tmp", None)
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
