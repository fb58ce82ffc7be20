"""The conformance corpus (``tests/conformance/*.yaml``, see README.md there): every case
through the Python path (one fact, and a batch), the reference interpreter, the C accelerator
(where it is built) and every backend registered under the ``stoprule.backends`` entry-point
group."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from stoprule.diagnostics import EvaluationError
from stoprule.engine import batches, speedups
from stoprule.engine.backends import BUILT_IN, backend_names, select_backend
from stoprule.engine.build import compile_pack
from stoprule.engine.compiled import CompiledPolicy
from stoprule.engine.evaluator import Evaluator, Verdict
from stoprule.engine.plan import Plan
from stoprule.engine.protocols import Backend, Runner

HERE = Path(__file__).resolve().parent
FILES = sorted(HERE.glob("*.yaml"))
RESULTS = ("verdict", "error", "data", "projection")


def interpreter_backend(plan: Plan) -> Runner:
    """A backend matching every rule with the reference interpreter (decided and rendered
    as the Python path does): holds the engine's lowering to the reference semantics."""

    def run(fact: Any) -> Verdict | None:
        try:
            data, warnings = plan.check(fact)
            return plan.decide(data, plan.interpret(data), tuple(warnings))
        except EvaluationError:
            return None  # the Python path names the error

    return run


def _backends() -> dict[str, Backend | None]:
    """Every backend by name, each given explicitly (so used from a batch's first fact)."""
    found: dict[str, Backend | None] = {"python": None, "interpreter": interpreter_backend}
    if speedups.load() is not None:
        found["c"] = select_backend("c")
    for name in backend_names():
        if name not in BUILT_IN:
            found[name] = select_backend(name)  # the plug-ins of the stoprule.backends group
    return found


BACKENDS = _backends()
_COMPILED: dict[Path, CompiledPolicy] = {}


def _compiled(path: Path, files: dict[str, str], tmp: Path) -> CompiledPolicy:
    if path not in _COMPILED:
        for name, text in files.items():
            (tmp / name).write_text(text, encoding="utf-8")
        _COMPILED[path] = compile_pack(tmp).compiled
    return _COMPILED[path]


def _cases() -> list[Any]:
    out = []
    for path in FILES:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        for case in doc["cases"]:
            for backend in BACKENDS:
                out.append(pytest.param(path, doc["pack"], case, backend, id=f"{path.stem}:{case['name']}:{backend}"))
    return out


def test_the_corpus_is_well_formed() -> None:
    assert FILES, "no conformance files"
    for path in FILES:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        assert set(doc) == {"description", "pack", "cases"}, path
        for case in doc["cases"]:
            assert sum(k in case for k in RESULTS) == 1, (path, case["name"])
            assert set(case) <= {"name", "fact", "strict", *RESULTS}, (path, case["name"])


def _outcome(ev: Evaluator, fact: Any, strict: bool, batch: bool) -> Verdict | EvaluationError:
    if batch:
        (out,) = ev.evaluate_many([fact], on_error="return", strict=strict)
        return out
    try:
        return ev.evaluate(fact, strict=strict)
    except EvaluationError as exc:
        return exc


@pytest.mark.parametrize(("path", "pack", "case", "backend"), _cases())
def test_case(tmp_path: Path, path: Path, pack: dict[str, str], case: dict[str, Any], backend: str) -> None:
    ev = Evaluator(_compiled(path, pack, tmp_path), BACKENDS[backend])
    fact, strict = case["fact"], case.get("strict", False)
    if backend == "c" and ("data" in case or "projection" in case):
        _c_projection(ev, fact, case)
    if "data" in case:
        assert ev.validate(fact) == case["data"]
        return
    if "projection" in case:
        assert ev.projection(fact) == case["projection"]
        return
    # a plugged-in backend runs batches; the Python path runs both
    for batch in (True,) if backend != "python" else (False, True):
        got = _outcome(ev, fact, strict, batch)
        if "error" in case:
            assert isinstance(got, EvaluationError), got
            assert {"code": got.code, "field": got.field} == case["error"]
        else:
            assert isinstance(got, Verdict), got
            envelope = got.to_dict()
            envelope.pop("policy")
            want = case["verdict"]
            assert {k: envelope.get(k) for k in want} == want


def _c_projection(ev: Evaluator, fact: Any, case: dict[str, Any]) -> None:
    """The C runner's validated data and projection text, where it takes the fact."""
    run = batches.runner(ev)
    got = None if run is None else run.__self__.project(fact)  # type: ignore[attr-defined]
    if got is None:  # left to the Python path
        return
    data, text = got
    if "data" in case:
        assert data == case["data"]
    if "projection" in case and len(case["projection"]) == 1:
        assert json.loads("{" + text) == case["projection"][0]


@pytest.mark.skipif("c" not in BACKENDS, reason="the C accelerator is not built")
def test_the_c_accelerator_takes_most_valid_cases(tmp_path: Path) -> None:
    """The "c" cases are not the Python path under another name: the runner decides most
    verdict cases itself (the rest, such as non-ASCII text, it leaves to the Python path)."""
    taken = total = 0
    for path in FILES:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        (tmp_path / path.stem).mkdir()
        ev = Evaluator(_compiled(path, doc["pack"], tmp_path / path.stem), BACKENDS["c"])
        run = batches.runner(ev)
        for case in doc["cases"]:
            if "verdict" in case and run is not None:
                total += 1
                taken += run(case["fact"]) is not None
    assert total and taken >= total * 0.6, (taken, total)
