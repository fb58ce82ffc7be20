"""Throughput: ``Evaluator.evaluate_many`` vs the hand-written baseline, same facts, same run.

    python benchmarks/bench_throughput.py [--n 100000] [--repeats 5] [--seed 20250101]
                                          [--profile-n 100000] [--no-profile]

1. generates N facts (``facts.py``), checks the baseline against stoprule on every
   one (winning verdict/reason, every matched rule, the high-risk stop) and prints
   the distribution of winning reasons;
2. times ``evaluate_many`` and the baseline alternately, ``--repeats`` times each,
   and prints the median facts/s (wall clock and process CPU time: the machine is
   shared, CPU time is the steadier figure) and the ratio (target: >= 50,000 facts/s);
3. times the Python path's stages separately (validate, project + encode, engine match,
   pick the winner + render the message + build the Verdict) and the rest (its whole run
   minus stages, so the lines add up), the C engine floor: the raw C calls with the best
   call sequence on pre-encoded JSON (``bench_engine_floor.py`` has the full comparison),
   and the default install's run (with the C accelerator where it is built);
4. profiles one ``evaluate_many`` run with cProfile (CPU time): top 15 by cumulative and by own time.

Uses the evaluator's private attributes (``_project_json``, ``_project``, ``_engine``,
``_decide``) for the stage breakdown only.
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import gc
import io
import json
import os
import pstats
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import print_header, timed  # noqa: E402
from baseline import decide, matched  # noqa: E402

from facts import EDGE_FACTS, ROWS, generate_with_targets  # noqa: E402
from stoprule import load_policy  # noqa: E402
from stoprule.engine.evaluator import Evaluator  # noqa: E402

TARGET = 50_000
PACK = HERE.parent / "policies"


def check_agreement(ev, pairs) -> None:
    facts = [f for _, f in pairs]
    verdicts = ev.evaluate_many(facts)
    want = {r: reason for r, _, reason in ROWS}
    eng_dist: collections.Counter[str] = collections.Counter()
    base_dist: collections.Counter[str] = collections.Counter()
    winner_off: collections.Counter[tuple] = collections.Counter()
    matched_off: collections.Counter[tuple] = collections.Counter()
    stop_off = 0
    examples: dict[tuple, dict] = {}
    target_miss = 0
    for (row, fact), v in zip(pairs, verdicts, strict=True):
        b = decide(fact)
        brules, bstop = matched(fact)
        eng_dist[v.reason] += 1
        base_dist[b[1]] += 1
        if b[1] != want[row]:
            target_miss += 1
        erules = [m.rule for m in v.matched]
        if (v.verdict, v.reason) != b:
            winner_off[(b, (v.verdict, v.reason))] += 1
        if set(erules) != set(brules):
            key = (
                tuple(sorted(set(brules) - set(erules))),  # the pack says yes, the engine no
                tuple(sorted(set(erules) - set(brules))),  # the engine says yes, the pack no
            )
            matched_off[key] += 1
            examples.setdefault(key, fact)
        if v.high_risk_stop != bstop:
            stop_off += 1
    n = len(pairs)
    print(f"\n== winning reasons over {n} facts (engine / baseline; fair share = {n / len(ROWS):.0f} per row)")
    for row, verdict, reason in ROWS:
        e, b = eng_dist[reason], base_dist[reason]
        print(
            f"  {row:>2} {verdict + ' / ' + reason:<52} engine {e:>6} ({100 * e / n:4.1f}%)"
            f"   baseline {b:>6} ({100 * b / n:4.1f}%)"
        )
    print(f"  facts whose baseline winner is not the row the generator built them for: {target_miss}")

    total_winner = sum(winner_off.values())
    print(f"\n== baseline vs stoprule: {total_winner} of {n} facts disagree on the winning (verdict, reason)")
    for (b, e), c in winner_off.most_common():
        print(f"  {c:>6}  baseline {b[0]}/{b[1]}  ->  stoprule {e[0]}/{e[1]}")
    total_matched = sum(matched_off.values())
    print(
        f"\n== {total_matched} facts disagree on the set of matched rules;"
        " by rule (pack-says-yes-engine-no | engine-yes-pack-no):"
    )
    for (missing, extra), c in matched_off.most_common():
        print(f"  {c:>6}  engine misses {list(missing) or '-'}  engine adds {list(extra) or '-'}")
    print(f"  high_risk_stop disagreements: {stop_off}")
    edge_off = []
    for name, fact in EDGE_FACTS.items():
        v = ev.evaluate(fact)
        brules, bstop = matched(fact)
        if (v.verdict, v.reason) != decide(fact) or [m.rule for m in v.matched] != brules or v.high_risk_stop != bstop:
            edge_off.append(name)
            examples.setdefault(("edge: " + name,), fact)
    print(
        f"  hand-written edge facts (facts.EDGE_FACTS): {len(EDGE_FACTS) - len(edge_off)} of {len(EDGE_FACTS)} agree"
        + (f"; disagree: {edge_off}" if edge_off else "")
    )
    if examples:
        print("\n== one example fact per kind of disagreement (first 6 kinds)")
        for key, fact in list(examples.items())[:6]:
            v = ev.evaluate(fact)
            if len(key) == 1:
                print(f"  {key[0]}: engine matched {[m.rule for m in v.matched]}, baseline {matched(fact)[0]}")
            else:
                print(f"  engine misses {list(key[0]) or '-'}, adds {list(key[1]) or '-'}:")
            print(f"    stoprule: {v.verdict}/{v.reason} ({v.rule}); baseline: {'/'.join(decide(fact))}")
            print("    " + json.dumps(fact, sort_keys=True))


def engine_floor(ev, texts):
    """The C calls alone with the best call sequence we know (see bench_engine_floor.py): each
    fact pre-encoded with a unique id, assert, drain the actions, retract by id; on a fresh
    handle of the same ruleset(s). Not just the evaluator's own sequence: the floor."""
    from stoprule.engine.durable import _dre as dre  # the engine stoprule runs on

    defs = [json.dumps(rs) for rs in ev.compiled.rulesets]
    handles = [dre.create_ruleset(f"bench-floor-{os.getpid()}-{i}", d) for i, d in enumerate(defs)]
    assert_fact, start, nxt, retract = (
        dre.assert_fact,
        dre.start_action_for_state,
        dre.complete_and_start_action,
        dre.retract_fact,
    )
    with_id = [(f'{{"id":{n},' + t[1:], f'{{"id":{n}}}') for n, t in enumerate(texts)]

    def run() -> None:
        for t, rt in with_id:
            for h in handles:
                r = assert_fact(h, t)
                if r[0] == 0:
                    s = r[1]
                    a = start(h, s)
                    while a:
                        a = nxt(h, s)
                    retract(h, rt)

    return run


def stage_breakdown(ev, facts, repeats: int) -> None:
    """Each stage of evaluate_many alone, stages interleaved within each repeat (CPU time).

    The stages are the evaluator's own steps of its Python path on pre-computed inputs; what
    the whole run of that path costs beyond their sum (the loop, result list, GC, per-call
    glue) is printed as its own line, so the lines add up to the whole."""
    check = ev.compiled.schema.check
    project_json = ev._project_json
    assert project_json is not None, "the default pack's rulesets are sent the whole projection"
    match_text = ev._engine.text_matcher()
    decide_ = ev._decide
    data = [check(f)[0] for f in facts]
    texts = [project_json(d) for d in data]
    names = [match_text(t) for t in texts]
    n = len(facts)

    def each(fn, items):  # results dropped at once, as evaluate_many does (no GC build-up)
        def run() -> None:
            for x in items:
                fn(x)

        return run

    def decide_all() -> None:
        for d, s in zip(data, names, strict=True):
            decide_(d, s)

    stages = [
        ("validate + unknown fields (FactSchema.check)", each(check, facts)),
        ("project + JSON-encode (Evaluator._project_json)", each(project_json, data)),
        ("engine match on the text (Engine.text_matcher)", each(match_text, texts)),
    ]
    floor_texts = ["{" + t for t in texts]
    python_path = Evaluator(ev.compiled, backend=None)  # the stages are the Python path's
    stages += [
        ("decide (Evaluator._decide: rank, render, Verdict)", decide_all),
        ("  C engine floor: best call sequence, JSON given", engine_floor(ev, floor_texts)),
        ("evaluate_many, default install", lambda: ev.evaluate_many(facts)),
        ("whole evaluate_many", lambda: python_path.evaluate_many(facts)),
    ]
    cpu: dict[str, list[float]] = {label: [] for label, _ in stages}
    for _ in range(repeats):
        for label, fn in stages:
            cpu[label].append(timed(fn)[1])
    print(f"\n== stage breakdown over {n} facts (CPU time, median of {repeats}, stages interleaved)")
    total = 0.0
    for label, _ in stages[:-3]:
        us = statistics.median(cpu[label]) / n * 1e6
        total += us
        print(f"  {label:<52} {us:7.2f} us/fact")
    whole = statistics.median(cpu["whole evaluate_many"]) / n * 1e6
    print(f"  {'rest: loop, result list, GC, per-call glue':<52} {whole - total:7.2f} us/fact  (whole - stages)")
    print(f"  {'= whole evaluate_many, Python path':<52} {whole:7.2f} us/fact  (= {1e6 / whole:,.0f} facts/s)")
    floor = statistics.median(cpu[stages[-3][0]]) / n * 1e6
    default = statistics.median(cpu["evaluate_many, default install"]) / n * 1e6
    print(
        f"  C engine floor (best call sequence, no Python work): {floor:.2f} us/fact (~{1e6 / floor:,.0f} facts/s);"
        f" Python path / floor = {whole / floor:.2f}x"
    )
    print(
        f"  evaluate_many, default install (backend: {ev.backend}): {default:.2f} us/fact"
        f" (~{1e6 / default:,.0f} facts/s); / floor = {default / floor:.2f}x"
    )


def profile(ev, facts) -> None:
    pr = cProfile.Profile(time.process_time)  # CPU time: another process's load does not count
    pr.enable()
    ev.evaluate_many(facts)
    pr.disable()
    for key, label in (("cumulative", "cumulative"), ("tottime", "own (tottime)")):
        buf = io.StringIO()
        st = pstats.Stats(pr, stream=buf).strip_dirs().sort_stats(key)
        st.print_stats(15)
        lines = buf.getvalue().splitlines()
        start = next(i for i, ln in enumerate(lines) if ln.lstrip().startswith("ncalls"))
        print(f"\n== cProfile of evaluate_many over {len(facts)} facts: top 15 by {label}")
        head = [ln for ln in lines[:start] if "function calls" in ln]
        for ln in head:
            print("  " + ln.strip())
        for ln in lines[start : start + 16]:
            print("  " + ln)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--seed", type=int, default=20250101)
    ap.add_argument("--profile-n", type=int, default=100_000)
    ap.add_argument("--stage-n", type=int, default=30_000)
    ap.add_argument("--no-profile", action="store_true")
    ap.add_argument("--pack", default=str(PACK))
    args = ap.parse_args()

    print_header(args.pack)
    ev = load_policy(args.pack, cache=False)
    t0 = time.perf_counter()
    pairs = generate_with_targets(args.n, args.seed)
    facts = [f for _, f in pairs]
    print(f"generated {len(facts)} facts (seed {args.seed}) in {time.perf_counter() - t0:.1f}s")

    check_agreement(ev, pairs)

    n = len(facts)
    gc.collect()
    ev.evaluate_many(facts[:1000])  # warm the per-thread engine handles
    runs: dict[str, list[tuple[float, float]]] = {"stoprule": [], "baseline": []}
    for _ in range(args.repeats):  # alternate, so machine noise hits both sides alike
        runs["stoprule"].append(timed(lambda: ev.evaluate_many(facts)))
        runs["baseline"].append(timed(lambda: [decide(f) for f in facts]))
    rate = {
        k: (n / statistics.median(w for w, _ in v), n / statistics.median(c for _, c in v)) for k, v in runs.items()
    }
    print(
        f"\n== throughput over {n} facts, median of {args.repeats} alternating repeats"
        " (wall clock and process CPU time)"
    )
    for k, label in (("stoprule", "stoprule evaluate_many"), ("baseline", "baseline decide")):
        w, c = rate[k]
        print(
            f"  {label:<24} wall {w:>11,.0f} facts/s ({1e6 / w:6.2f} us/fact)   cpu {c:>11,.0f} facts/s"
            f" ({1e6 / c:6.2f} us/fact)   runs: " + ", ".join(f"{x:.2f}s" for x, _ in runs[k])
        )
    sw, sc = rate["stoprule"]
    bw, bc = rate["baseline"]
    print(f"  ratio baseline/stoprule: wall {bw / sw:.1f}x, cpu {bc / sc:.1f}x (evaluation backend: {ev.backend})")
    print(
        f"  target >= {TARGET:,} facts/s: {'MET' if sw >= TARGET else 'NOT MET'} "
        f"(wall {sw / TARGET:.2f}x, cpu {sc / TARGET:.2f}x of target)"
    )

    stage_breakdown(ev, facts[: args.stage_n], args.repeats)
    if not args.no_profile:
        profile(ev, facts[: args.profile_n])


if __name__ == "__main__":
    main()
