"""Build hook: compile the durable_rules engine into stoprule (``stoprule.engine.durable_rules_engine``).

The engine is durable-rules 2.0.28's C code, vendored with a one-line fix for Python 3.13
(``third_party/durable-rules-*``; its ``STOPRULE.md`` says what changed). It is built here,
as part of stoprule's own wheel, for every Python version, so the published metadata names
no local path and no unmaintained package: a wheel (tagged for its Python and platform)
holds the compiled engine; an sdist holds the sources and compiles them when installed (a
C compiler is needed, as durable-rules itself needs one). An editable install compiles it
into ``src/stoprule/engine/`` (git-ignored).
"""

from __future__ import annotations

import os
import shutil
import sysconfig
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

HERE = Path(__file__).resolve().parent
MODULE = "durable_rules_engine"


def _engine_source() -> Path:
    found = sorted(HERE.glob("third_party/durable-rules-*/src"))
    if not found:
        raise RuntimeError("third_party/durable-rules-*/src is missing: the engine cannot be built")
    return found[-1]


def build_engine(out_dir: Path) -> Path:
    """Compile the engine extension into ``out_dir``; return the file written."""
    from setuptools import Distribution, Extension
    from setuptools.command.build_ext import build_ext

    src = _engine_source()
    rules = [str(src / "rules" / f"{name}.c") for name in ("json", "rete", "state", "events", "regex")]
    ext = Extension(
        MODULE,
        sources=[str(src / "rulespy" / "rules.c"), *rules],
        include_dirs=[str(src / "rules")],
        extra_compile_args=["-std=c99", "-D_GNU_SOURCE", "-fcommon"],
    )
    with tempfile.TemporaryDirectory(prefix="stoprule-build-") as tmp:
        dist = Distribution({"name": MODULE, "ext_modules": [ext]})
        cmd = build_ext(dist)
        cmd.build_lib = os.path.join(tmp, "lib")
        cmd.build_temp = os.path.join(tmp, "temp")
        cmd.ensure_finalized()
        cmd.run()
        (built,) = Path(cmd.build_lib).glob(f"{MODULE}*")
        out_dir.mkdir(parents=True, exist_ok=True)
        target = out_dir / (MODULE + sysconfig.get_config_var("EXT_SUFFIX"))
        shutil.copyfile(built, target)
    return target


class EngineBuildHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel":
            return
        if version == "editable":  # the package is imported from src/: build the engine there
            build_engine(HERE / "src" / "stoprule" / "engine")
        else:
            self._tmp = tempfile.mkdtemp(prefix="stoprule-engine-")
            out = build_engine(Path(self._tmp))
            build_data["force_include"][str(out)] = f"stoprule/engine/{out.name}"
        build_data["pure_python"] = False
        build_data["infer_tag"] = True

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        tmp = getattr(self, "_tmp", None)
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
