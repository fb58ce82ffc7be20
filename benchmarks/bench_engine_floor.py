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
again), the same facts asserted in batches (``assert_facts`` on arrays of 500, one drain and
one ``retract_facts`` per batch), ``Evaluator.evaluate_many`` and the plain-Python baseline
(``baseline.decide``) are timed, all alternating within each round so load hits all alike.

Before timing it prints what a decision memo could spare the engine: how many of the facts'
projections (the engine's whole input) are distinct, and for the engine rules with the most,
how many distinct values the keys each reads take.

Prints median CPU time (process time: the machine is shared) and wall time per fact, the
floor's ratio to the baseline (the engine's calls alone), and the ratios of the medians
(targets: evaluate_many <= 1.5x the floor, <= 12x the baseline).
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
BATCH = 500  # facts per assert_facts call


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
    """(best sequence, older sequence, batches) as zero-argument callables over all facts."""
    from stoprule.engine.durable import _dre as dre  # the engine stoprule runs on

    assert_fact, start, nxt, retract = (
        dre.assert_fact,
        dre.start_action_for_state,
        dre.complete_and_start_action,
        dre.retract_fact,
    )
    assert_facts, retract_facts = dre.assert_facts, dre.retract_facts
    defs = [json.dumps(rs) for rs in ev.compiled.rulesets]
    pid = os.getpid()
    best_h = [dre.create_ruleset(f"floor-best-{pid}-{i}", d) for i, d in enumerate(defs)]
    old_h = [dre.create_ruleset(f"floor-old-{pid}-{i}", d) for i, d in enumerate(defs)]
    batch_h = [dre.create_ruleset(f"floor-batch-{pid}-{i}", d) for i, d in enumerate(defs)]

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

    def batched() -> None:
        for h, (texts, retracts, _) in zip(batch_h, inputs, strict=True):
            for k in range(0, len(texts), BATCH):
                r = assert_facts(h, "[" + ",".join(texts[k : k + BATCH]) + "]")
                s = r[1]
                if start(h, s):
                    while nxt(h, s):
                        pass
                retract_facts(h, "[" + ",".join(retracts[k : k + BATCH]) + "]")

    return best, old, batched


def memo_figures(ev, inputs) -> None:
    """What a decision memo could spare the engine: the distinct projections (the engine's whole
    input), and for each engine rule the distinct values of the keys it reads (a memo per rule)."""
    from stoprule.engine.lowering import _used_keys

    n = len(inputs[0][2])
    distinct = len(set(zip(*(plain for _, _, plain in inputs), strict=True)))
    print(
        f"distinct projections (the engine's whole input): {distinct} of {n} facts: a memo of the engine's"
        f" answer keyed on them would spare it {n - distinct} ({(n - distinct) / n:.1%})"
    )
    c = ev.compiled
    top = {s.key for s in c.slots} | {k for ls in c.lists for k in (ls.key, ls.len_key)}
    per_rule = []
    for rs, (_, _, plain) in zip(c.rulesets, inputs, strict=True):
        rows = [json.loads(t) for t in plain]
        for name, body in rs.items():
            keys = sorted(_used_keys(body, set()) & top)  # item keys are read inside their list's key
            seen = {json.dumps([r.get(k, "<absent>") for k in keys]) for r in rows}
            per_rule.append((len(seen), name, len(keys)))
    per_rule.sort(reverse=True)
    most = ", ".join(f"{name} {d} ({k} keys)" for d, name, k in per_rule[:3])
    print(f"distinct inputs per engine rule (the projected keys it reads), the most: {most}")


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
    memo_figures(ev, inputs)
    best, old, batched = floor_runs(ev, inputs)
    ev.evaluate_many(facts[:1000])  # warm the per-thread handles
    best()  # warm the floor handles (the engine allocates on first use)
    old()
    batched()
    gc.collect()
    runs = {
        "floor: best C call sequence": best,
        "older C call sequence (content retract)": old,
        f"C calls on batches of {BATCH} (assert_facts)": batched,
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
    batch_cpu = med[f"C calls on batches of {BATCH} (assert_facts)"][1]
    r_floor, r_base = ev_cpu / floor_cpu, ev_cpu / base_cpu
    print(f"\n  older sequence / floor:       {old_cpu / floor_cpu:5.2f}x")
    print(f"  batches / floor:              {batch_cpu / floor_cpu:5.2f}x")
    print(f"  floor / baseline:             {floor_cpu / base_cpu:5.2f}x  (the engine's calls alone)")
    verdict_floor = "MET" if r_floor <= FLOOR_TARGET else "NOT MET"
    verdict_base = "MET" if r_base <= BASELINE_TARGET else "NOT MET"
    print(f"  evaluate_many / floor:        {r_floor:5.2f}x  (target <= {FLOOR_TARGET}x: {verdict_floor})")
    print(f"  evaluate_many / baseline:     {r_base:5.2f}x  (target <= {BASELINE_TARGET}x: {verdict_base})")
    print(f"  load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
