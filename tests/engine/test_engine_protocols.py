"""The engine's seams (stoprule.engine.protocols): every backend is a Backend, every runner it
makes a Runner, and each is given the plan alone."""

from __future__ import annotations

import pytest

from protocolcheck import mismatches
from stoprule.engine import speedups
from stoprule.engine.backends import backend_names, select_backend
from stoprule.engine.build import compile_pack
from stoprule.engine.compiled import rank
from stoprule.engine.evaluator import Evaluator
from stoprule.engine.packs import bundled_pack
from stoprule.engine.plan import Plan
from stoprule.engine.protocols import Backend, Runner
from stoprule.engine.verdict import Verdict

EV = Evaluator(compile_pack(bundled_pack()).compiled)
OK = {"status": "implemented", "taskState": "complete"}


@pytest.mark.parametrize("name", [n for n in backend_names() if n != "python"])
def test_every_backend_matches_the_protocol(name: str) -> None:
    backend = select_backend(name)
    assert backend is not None and isinstance(backend, Backend)
    assert mismatches(backend, Backend) == []


def test_the_plan_is_all_a_backend_gets() -> None:
    plan = EV.plan()
    assert isinstance(plan, Plan) and EV.plan() is plan
    assert [w.engine_name for w in plan.winners] == [r.engine_name for r in rank(EV.compiled.rules)]
    assert [name for name, _ in plan.stops] == [s.engine_name for s in EV.compiled.stops]
    data, warnings = plan.check(OK)
    assert plan.decide(data, plan.interpret(data), tuple(warnings)) == EV.evaluate(OK)


@pytest.mark.skipif(speedups.load() is None, reason="the C accelerator is not built here")
def test_the_c_runner_matches_the_protocol_and_the_python_path() -> None:
    run = speedups.c_backend(EV.plan())
    assert run is not None and isinstance(run, Runner)
    verdict = run(OK)
    assert isinstance(verdict, Verdict) and verdict == EV.evaluate(OK)


def test_python_is_no_backend_and_an_unknown_name_is_refused() -> None:
    from stoprule.diagnostics import CommandError

    assert select_backend("python") is None
    with pytest.raises(CommandError, match="unknown evaluation backend 'nope'"):
        select_backend("nope")


def test_the_check_sees_a_backend_of_another_shape() -> None:
    def wrong(plan: Plan, extra: int) -> Runner | None:
        return None

    assert mismatches(wrong, Backend) != []


@pytest.mark.parametrize(
    "fact",
    [OK, {"status": "partial", "nextDerivedAction": {"type": "deploy_production"}}, {**OK, "noSuchField": 1}],
)
def test_a_verdict_reads_back_from_its_dict(fact: dict[str, object]) -> None:
    """``Verdict.from_dict`` reads what ``to_dict`` wrote (a service's envelope, a journal line),
    its extra fields ignored: the same verdict, warnings included."""
    verdict = EV.evaluate(fact)
    assert Verdict.from_dict({**verdict.to_dict(), "run": "r1", "node": 3}) == verdict
    with pytest.raises(KeyError):
        Verdict.from_dict({k: v for k, v in verdict.to_dict().items() if k != "rule"})
