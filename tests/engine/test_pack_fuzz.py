"""Fuzzing packs: mutated default packs never crash ``check``, and generated packs evaluate
exactly as the reference semantics says.

- mutated packs (structure-aware mutations of ``policies/`` plus odd YAML: tags, anchors,
  alias bombs, non-string keys, binary, deep nesting, huge values) through the Python API
  and through real ``stoprule check`` processes: a result or diagnostics, never a
  traceback, a signal or a hang; every diagnostic line well formed;
- generated packs (hypothesis: fields of every type, literals and offsets at the edges of
  their ranges, globs with classes and escapes, sets, quantifiers, ``not``, affixes) and
  generated facts: the engine's matched rules and high-risk stop equal the reference
  interpreter's on every accepted fact.

The default run is short; ``pytest -m torture tests/test_pack_fuzz.py -s`` runs long and
prints its figures.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterable
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from factgen import random_fact
from packgen import DIAG_LINE, facts, mutated_pack, packs
from stoprule.diagnostics import FactError, PolicyError
from stoprule.engine.build import compile_pack
from stoprule.engine.evaluator import Evaluator
from stoprule.engine.interpret import evaluate
from stoprule.limits import SAFE_INT
from torture import scaled

FAST = settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
LONG = settings(max_examples=scaled(2000), deadline=None, suppress_health_check=list(HealthCheck))


def _agree(ctx, rng: random.Random, n: int, stats: dict[str, int]) -> None:  # noqa: ANN001
    """Engine and reference agree on random facts of the default pack's vocabulary."""
    ev = Evaluator(ctx.compiled)
    for _ in range(n):
        raw = random_fact(rng)
        for key in ("turn", "max_turns"):
            if key in raw and rng.random() < 0.3:
                raw[key] = rng.choice([SAFE_INT, -SAFE_INT, SAFE_INT - 1, -SAFE_INT + 2, 0])
        try:
            fact = ev.validate(raw)
        except FactError:
            continue
        stats["facts"] += 1
        engine = {r.id for r in ev.matched_rules(fact)}
        reference = {r.id for r in ctx.checked.rules if evaluate(r.when, fact)}
        stats["disagreements"] += engine != reference
        assert engine == reference, fact


def _check_mutations(tmp_path: Path, seeds: range, facts_per_pack: int = 0) -> dict[str, int]:
    stats = {"packs": 0, "accepted": 0, "refused": 0, "slow": 0, "facts": 0, "disagreements": 0}
    for seed in seeds:
        root = mutated_pack(tmp_path / f"m{seed}", random.Random(seed))
        t0 = time.monotonic()
        try:
            ctx = compile_pack(root)
            stats["accepted"] += 1
            _agree(ctx, random.Random(seed), facts_per_pack, stats)
        except PolicyError as exc:
            stats["refused"] += 1
            for line in exc.render().splitlines():
                assert DIAG_LINE.match(line), (seed, line)
            assert len(exc.render().splitlines()) == len(exc.diagnostics) + (exc.total > len(exc.diagnostics))
            assert all(d.line >= 1 and d.column >= 1 for d in exc.diagnostics)
        stats["packs"] += 1
        stats["slow"] += time.monotonic() - t0 > 20
    assert stats["slow"] == 0, stats
    return stats


@pytest.mark.integration
def test_mutated_packs_give_diagnostics(tmp_path: Path) -> None:
    stats = _check_mutations(tmp_path, range(20), facts_per_pack=20)  # 2,000 more in the torture tier
    assert stats["refused"] > 7, stats  # the mutations do reach the diagnostics


@pytest.mark.torture
def test_mutated_packs_give_diagnostics_long(tmp_path: Path) -> None:
    stats = _check_mutations(tmp_path, range(1000, 1000 + scaled(2000)), facts_per_pack=scaled(400, 50))
    print("mutated packs (API):", stats)


def _check_cli(run_cli, tmp_path: Path, seeds: Iterable[int]) -> dict[str, int]:  # noqa: ANN001
    stats = {"runs": 0, "exit0": 0, "exit2": 0}
    for seed in seeds:
        root = mutated_pack(tmp_path / f"c{seed}", random.Random(seed))
        proc = run_cli("check", "--policy", str(root))
        assert proc.returncode in (0, 2), (seed, proc.returncode, proc.stderr[-2000:])
        assert "Traceback" not in proc.stderr, (seed, proc.stderr[-2000:])
        if proc.returncode == 2:
            lines = proc.stdout.splitlines()
            assert lines and all(DIAG_LINE.match(line) for line in lines), (seed, proc.stdout[-2000:])
        stats["runs"] += 1
        stats[f"exit{proc.returncode}"] += 1
    return stats


def test_mutated_packs_through_the_cli(run_cli, tmp_path: Path) -> None:  # noqa: ANN001
    # seeds whose packs were a SIGSEGV (3, 8), a hang (49), or a ValueError (28), RecursionError
    # (52, 67) or IndexError (66) traceback before the limits
    _check_cli(run_cli, tmp_path, (3, 8, 28, 49, 52, 66, 67))


@pytest.mark.torture
def test_mutated_packs_through_the_cli_long(run_cli, tmp_path: Path) -> None:  # noqa: ANN001
    print("mutated packs (CLI):", _check_cli(run_cli, tmp_path, range(5000, 5000 + scaled(300, 30))))


STATS = {"packs": 0, "refused": 0, "facts": 0, "rejected_facts": 0, "disagreements": 0}


def _differential(tmp_path_factory: pytest.TempPathFactory, pack: dict, fact_list: list[dict]) -> None:
    root = tmp_path_factory.mktemp("gen")
    (root / "p.yaml").write_text(yaml.safe_dump(pack, allow_unicode=True))
    try:
        ctx = compile_pack(root)
    except PolicyError as exc:
        STATS["refused"] += 1
        # what the generator writes is valid but for constructs the engine cannot negate
        # (or beyond a documented limit: alternatives per rule and per pack)
        limits = {"condition.unsupported", "condition.too_complex", "limit.alternatives"}
        assert {d.code for d in exc.diagnostics} <= limits, exc.render()
        return
    STATS["packs"] += 1
    ev = Evaluator(ctx.compiled)
    for raw in fact_list:
        try:
            fact = ev.validate(raw)
        except FactError:
            STATS["rejected_facts"] += 1
            continue
        STATS["facts"] += 1
        engine = {r.id for r in ev.matched_rules(fact)}
        reference = {r.id for r in ctx.checked.rules if evaluate(r.when, fact)}
        stops = [s.id for s in ctx.checked.stops if evaluate(s.when, fact)]
        stop = ev.evaluate(fact).high_risk_stop
        if engine != reference or stop != (stops[0] if stops else None):
            STATS["disagreements"] += 1
        assert engine == reference, (pack, fact)
        assert stop == (stops[0] if stops else None), (pack, fact)


@pytest.mark.integration
@FAST
@given(pack=packs(), fact_list=st.lists(facts(), min_size=5, max_size=30))
def test_generated_packs_engine_equals_reference(tmp_path_factory: pytest.TempPathFactory, pack, fact_list) -> None:  # noqa: ANN001
    _differential(tmp_path_factory, pack, fact_list)


@pytest.mark.torture
@LONG
@given(pack=packs(), fact_list=st.lists(facts(), min_size=20, max_size=60))
def test_generated_packs_long(tmp_path_factory: pytest.TempPathFactory, pack, fact_list) -> None:  # noqa: ANN001
    _differential(tmp_path_factory, pack, fact_list)


@pytest.mark.torture
def test_generated_packs_figures() -> None:
    """Run after test_generated_packs_long (same module): print the figures."""
    print("generated packs:", STATS)
