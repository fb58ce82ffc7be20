"""The policy page: the pack in force (rules in the order they are tried, verdict kinds), its
audit (findings with witness facts, the verdict map), the coverage of its last
``stoprule test --coverage``, and the packs the ledger's decisions name, with the diff between
consecutive ones.

A diff needs both packs' files, and the ledger keeps only digests: the console (and
``stoprule test --coverage``) keeps a copy of each pack it sees in ``packs/<digest>/`` beside
the project's state (:func:`keep_pack`); a digest with no copy is listed without a diff.
Audits and diffs run once per digest (the analysis holds one deadline for the process, so they
run one at a time).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from stoprule._util.files import atomic_write, read_bounded, stamp
from stoprule.analysis import audit_pack, diff_packs
from stoprule.analysis.backends import engine_of
from stoprule.engine.build import compile_pack
from stoprule.engine.evaluator import Evaluator
from stoprule.language.compiler import check_pack
from stoprule.language.files import pack_files
from stoprule.language.inventory import inspect_data

__all__ = ["COVERAGE_FILE", "PACKS_DIR", "PackState", "PolicyView", "keep_pack", "load_coverage", "save_coverage"]

COVERAGE_FILE = "coverage.json"  # in a project's .stoprule/: the last `stoprule test --coverage`
PACKS_DIR = "packs"  # in a project's .stoprule/: a copy of each pack seen, by digest
ANALYSIS_TIMEOUT_S = 20.0  # an audit or diff stops here and lists what it did not answer


def save_coverage(state_dir: str, pack: str, policy: str, summary: dict[str, Any], coverage: dict[str, Any]) -> str:
    """Keep a coverage run (``stoprule test --coverage``) as the project's last; returns the file."""
    path = os.path.join(state_dir, COVERAGE_FILE)
    record = {"pack": pack, "policy": policy, "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "summary": summary, "coverage": coverage}  # fmt: skip
    atomic_write(path, json.dumps(record, ensure_ascii=False) + "\n")
    return path


def load_coverage(state_dir: str | None) -> dict[str, Any] | None:
    """The project's last coverage run (None: none kept, or unreadable)."""
    if not state_dir:
        return None
    try:
        data = json.loads(read_bounded(os.path.join(state_dir, COVERAGE_FILE), 64 << 20))
    except (OSError, ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("coverage"), dict) else None


def _hex(digest: str) -> str:
    return digest.partition(":")[2] or digest


def keep_pack(packs_dir: str, root: str, digest: str) -> str | None:
    """Copy the pack at ``root`` (its YAML files, the global pack's it uses included) to
    ``packs_dir/<digest hex>/`` unless a copy is there; the copy's directory (None: not kept)."""
    target = os.path.join(packs_dir, _hex(digest))
    if os.path.isdir(target):
        return target
    try:
        os.makedirs(packs_dir, exist_ok=True)
        tmp = tempfile.mkdtemp(dir=packs_dir, prefix=".tmp-")
        try:
            for path in pack_files(root):
                shutil.copyfile(path, os.path.join(tmp, os.path.basename(path)))
            with open(os.path.join(tmp, "DIGEST"), "w", encoding="utf-8") as fh:
                fh.write(f"{digest}\n{os.path.abspath(root)}\n")
            os.rename(tmp, target)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    except FileExistsError:
        return target  # another process kept it meanwhile
    except OSError:
        return None
    return target


@dataclass(frozen=True)
class PackState:
    root: str
    digest: str
    inventory: dict[str, Any]  # language.inventory.inspect_data
    checked: Any
    compiled: Any


class PolicyView:
    """``pack()`` names the pack in force (it may change: ``serve`` reloads); ``state_dir`` is the
    project's ``.stoprule/`` (coverage), ``packs_dir`` where pack copies are kept (None: none)."""

    def __init__(self, pack: Callable[[], str], state_dir: str | None, packs_dir: str | None) -> None:
        self.pack = pack
        self.state_dir = state_dir
        self.packs_dir = packs_dir
        self._lock = threading.Lock()
        self._analysis = threading.Lock()
        self._state: tuple[tuple[Any, ...], PackState] | None = None
        self._audits: dict[str, dict[str, Any]] = {}
        self._diffs: dict[tuple[str, str], dict[str, Any]] = {}

    def current(self) -> PackState:
        """The pack in force, compiled (again only when its files change); its copy kept."""
        root = self.pack()
        key = (root, *((p, *stamp(p)) for p in pack_files(root)))
        with self._lock:
            if self._state is not None and self._state[0] == key:
                return self._state[1]
        ctx = compile_pack(root)
        state = PackState(root, ctx.checked.digest, inspect_data(ctx.checked, root), ctx.checked, ctx.compiled)
        if self.packs_dir:
            keep_pack(self.packs_dir, root, state.digest)
        with self._lock:
            self._state = (key, state)
        return state

    def coverage(self) -> dict[str, Any] | None:
        return load_coverage(self.state_dir)

    def audit(self) -> dict[str, Any]:
        """The audit of the pack in force (as ``stoprule audit --format json``), once per digest."""
        state = self.current()
        with self._analysis:
            if state.digest not in self._audits:
                report = audit_pack(
                    state.checked,
                    backend="auto",
                    timeout=ANALYSIS_TIMEOUT_S,
                    engine=engine_of(Evaluator(state.compiled)),
                )
                self._audits[state.digest] = report.to_dict()
            return self._audits[state.digest]

    def copies(self) -> dict[str, str]:
        """digest -> the directory of its kept copy."""
        out: dict[str, str] = {}
        if not self.packs_dir or not os.path.isdir(self.packs_dir):
            return out
        for name in sorted(os.listdir(self.packs_dir)):
            try:
                with open(os.path.join(self.packs_dir, name, "DIGEST"), encoding="utf-8") as fh:
                    digest = fh.readline().strip()
            except OSError:
                continue
            if digest:
                out[digest] = os.path.join(self.packs_dir, name)
        return out

    def diff(self, old: str, new: str) -> dict[str, Any] | None:
        """Where the packs ``old`` and ``new`` (digests) decide differently (``stoprule diff`` as JSON);
        None when a copy of either is not kept."""
        copies = self.copies()
        if old not in copies or new not in copies:
            return None
        with self._analysis:
            if (old, new) not in self._diffs:
                report = diff_packs(
                    check_pack(copies[old]), check_pack(copies[new]), backend="auto", timeout=ANALYSIS_TIMEOUT_S
                )
                self._diffs[(old, new)] = report.to_dict()
            return self._diffs[(old, new)]
