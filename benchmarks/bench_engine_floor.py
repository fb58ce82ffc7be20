"""The engine floor: ``evaluate_many`` vs the raw durable_rules C calls on the same rulesets and facts.

    python benchmarks/bench_engine_floor.py [--n 50000] [--repeats 7] [--seed 20250101] [--pack DIR]

The floor is the best correct call sequence we know for one fact, driven straight from a
Python loop with everything else done beforehand: the projection JSON-encoded in advance
with a unique ``id`` per fact, ``assert_fact``, drain the action queue
(``start_action_for_state`` / ``complete_and_start_action``), ``retract_fact`` by
``{"id": ...}`` (pre-encoded too). It runs on fresh handles of the pack's compiled
rulesets (``CompiledPolicy.rulesets``: what the evaluator sends to the engine), with the
per-ruleset key subsets when the pack has them. No Python-side change can beat it.

For comparison the same loop with the older sequence (no ``id``; the engine hashes the
content, and ``retract_fact`` is given the whole fact again, which it parses and hashes
again) is timed, along with ``Evaluator.evaluate_many`` and the plain-Python baseline
(``baseline.decide``), all alternating within each round so load hits all alike.
Prints median CPU time (process time: the machine is shared) and wall time per fact,
and the ratios of the medians (targets: evaluate_many <= 1.5x the floor, <= 12x the baseline).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import print_header, timed  # noqa: E402
from baseline import decide  # noqa: E402

from facts import generate  # noqa: E402
from stoprule import load_policy  # noqa: E402

PACK = HERE.parent / "policies"
FLOOR_TARGET = 1.5
BASELINE_TARGET = 12.0


def encoded_inputs(ev, facts):
    """Per ruleset: (texts with a unique id, retract texts by id, texts without id), each text
    the projection the evaluator sends that ruleset."""
    validate = ev.compiled.schema.validate
    data = [validate(f) for f in facts]
    parts = ev._project_parts  # one projector for every ruleset, or one per ruleset
    out = []
    for i in range(len(ev.compiled.rulesets)):
        project = parts[0] if len(parts) == 1 else parts[i]
        with_id, by_id, plain = [], [], []
        for n, d in enumerate(data):
            body = project(d)
            plain.append("{" + body)
            with_id.append(f'{{"id":{n},' + body)
            by_id.append(f'{{"id":{n}}}')
        out.append((with_id, by_id, plain))
    return out


def floor_runs(ev, inputs):
    """(best sequence, older sequence) as zero-argument callables over all facts."""
    from stoprule.engine.durable import _dre as dre  # the engine stoprule runs on

    assert_fact, start, nxt, retract = (
        dre.assert_fact,
        dre.start_action_for_state,
        dre.complete_and_start_action,
        dre.retract_fact,
    )
    defs = [json.dumps(rs) for rs in ev.compiled.rulesets]
    pid = os.getpid()
    best_h = [dre.create_ruleset(f"floor-best-{pid}-{i}", d) for i, d in enumerate(defs)]
    old_h = [dre.create_ruleset(f"floor-old-{pid}-{i}", d) for i, d in enumerate(defs)]

    def best() -> None:
        for h, (texts, retracts, _) in zip(best_h, inputs, strict=True):
            for t, rt in zip(texts, retracts, strict=True):
                r = assert_fact(h, t)
                if r[0] == 0:
                    s = r[1]
                    a = start(h, s)
                    if a:
                        while nxt(h, s):
                            pass
                    retract(h, rt)

    def old() -> None:
        for h, (_, _, texts) in zip(old_h, inputs, strict=True):
            for t in texts:
                r = assert_fact(h, t)
                if r[0] == 0:
                    s = r[1]
                    a = start(h, s)
                    if a:
                        while nxt(h, s):
                            pass
                    retract(h, t)

    return best, old


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=50_000)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--seed", type=int, default=20250101)
    ap.add_argument("--pack", default=str(PACK))
    args = ap.parse_args()
    print_header(args.pack)
    ev = load_policy(args.pack, cache=False)
    facts = generate(args.n, args.seed)
    n = len(facts)
    rules = sum(len(rs) for rs in ev.compiled.rulesets)
    print(f"{n} facts (seed {args.seed}); {len(ev.compiled.rulesets)} ruleset(s), {rules} engine rules")
    inputs = encoded_inputs(ev, facts)
    distinct = len(set(zip(*(plain for _, _, plain in inputs), strict=True)))
    print(
        f"distinct projections (the engine's whole input): {distinct} of {n} facts; a decision memo keyed on"
        f" them would spare the engine {n - distinct} ({(n - distinct) / n:.1%})"
    )
    best, old = floor_runs(ev, inputs)
    ev.evaluate_many(facts[:1000])  # warm the per-thread handles
    best()  # warm the floor handles (the engine allocates on first use)
    old()
    gc.collect()
    runs = {
        "floor: best C call sequence": best,
        "older C call sequence (content retract)": old,
        "stoprule evaluate_many": lambda: ev.evaluate_many(facts),
        "plain-Python baseline decide": lambda: [decide(f) for f in facts],
    }
    times: dict[str, list[tuple[float, float]]] = {k: [] for k in runs}
    for _ in range(args.repeats):  # interleaved: machine noise hits every side alike
        for label, fn in runs.items():
            times[label].append(timed(fn))
    med = {
        k: (statistics.median(w for w, _ in v) / n * 1e6, statistics.median(c for _, c in v) / n * 1e6)
        for k, v in times.items()
    }
    print(f"\n== per fact, median of {args.repeats} interleaved rounds (CPU time is the figure to quote)")
    for label, (w, c) in med.items():
        print(f"  {label:<42} cpu {c:7.2f} us ({1e6 / c:>9,.0f}/s)   wall {w:7.2f} us")
    ev_cpu = med["stoprule evaluate_many"][1]
    floor_cpu = med["floor: best C call sequence"][1]
    base_cpu = med["plain-Python baseline decide"][1]
    old_cpu = med["older C call sequence (content retract)"][1]
    r_floor, r_base = ev_cpu / floor_cpu, ev_cpu / base_cpu
    print(f"\n  older sequence / floor:       {old_cpu / floor_cpu:5.2f}x")
    verdict_floor = "MET" if r_floor <= FLOOR_TARGET else "NOT MET"
    verdict_base = "MET" if r_base <= BASELINE_TARGET else "NOT MET"
    print(f"  evaluate_many / floor:        {r_floor:5.2f}x  (target <= {FLOOR_TARGET}x: {verdict_floor})")
    print(f"  evaluate_many / baseline:     {r_base:5.2f}x  (target <= {BASELINE_TARGET}x: {verdict_base})")
    print(f"  load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
