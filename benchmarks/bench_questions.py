"""Question detection and transcript reading, measured on public sessions nobody here wrote.

Part 1: every labelled closing message of ``tests/fixtures/sessions/closings.jsonl`` goes
through the closure provider's detector with the pack's patterns (``agent/triage.json``);
prints precision and recall (overall, per harness and per language) and lists every miss
(false question, missed question) with its sentence.

Part 2: every transcript of ``tests/fixtures/sessions/transcripts/`` is replayed stop by stop
through the hook's fact path; each stop's facts are compared with the expected facts written
beside it (``*.expected.json``); prints one line per transcript and every difference.

    .venv/bin/python benchmarks/bench_questions.py [--policy PACK] [--quiet]

Exit 0 always (a benchmark reports; the default test tier asserts a fixed sample).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter

from _common import REPO, print_header

sys.path.insert(0, str(REPO / "tests"))
from sessions_corpus import CLOSINGS, TRANSCRIPTS, compare_stops, load_closings, transcript_cases  # noqa: E402
from stoprule.agent.hook.pack_data import pack_data  # noqa: E402
from stoprule.agent.hook.providers.closure_provider import explain_question  # noqa: E402


def _pr(rows: list[tuple[bool, bool]]) -> tuple[float, float, int, int, int]:
    tp = sum(1 for want, got in rows if want and got)
    fp = sum(1 for want, got in rows if not want and got)
    fn = sum(1 for want, got in rows if want and not got)
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    return precision, recall, tp, fp, fn


def questions(policy: str | None, quiet: bool) -> None:
    spec = pack_data(policy).get("question") or {}
    rows = load_closings()
    t0 = time.perf_counter()
    found = [explain_question(r["text"], spec) for r in rows]
    ms = (time.perf_counter() - t0) * 1000
    pairs = [(r["label"] == "question", f is not None and f["asked"]) for r, f in zip(rows, found, strict=True)]
    p, rc, tp, fp, fn = _pr(pairs)
    print(
        f"\n{CLOSINGS.relative_to(REPO)}: {len(rows)} closing messages "
        f"({sum(1 for r in rows if r['label'] == 'question')} questions), "
        f"{len({r['source'] for r in rows})} sources; {ms / len(rows):.2f} ms per message"
    )
    print(f"precision {p:.3f}  recall {rc:.3f}  (tp {tp}, fp {fp}, fn {fn})")
    for key in ("harness", "lang"):
        groups: dict[str, list[tuple[bool, bool]]] = {}
        for r, pair in zip(rows, pairs, strict=True):
            groups.setdefault(r[key], []).append(pair)
        parts = []
        for name, g in sorted(groups.items()):
            gp, gr, *_ = _pr(g)
            parts.append(f"{name} {len(g)}: P {gp:.2f} R {gr:.2f}")
        print(f"by {key}: " + "; ".join(parts))
    misses = [(r, f) for r, f, (want, got) in zip(rows, found, pairs, strict=True) if want != got]
    print(f"misses: {len(misses)}")
    for r, f in misses:
        kind = "false question" if f and f["asked"] else "missed question"
        why = f"{f['why']}: {f['sentence']!r}" if f else "no sentence matched"
        tail = " ".join(r["text"][-160:].split())
        print(f"  {r['id']} [{r['harness']}, {r['lang']}] {kind} — {why}" + ("" if quiet else f"\n      …{tail}"))


def transcripts() -> None:
    cases = transcript_cases()
    print(f"\n{TRANSCRIPTS.relative_to(REPO)}: {len(cases)} transcripts")
    by_kind: Counter[str] = Counter()
    bad = 0
    for case in cases:
        diffs, stops = compare_stops(case)
        by_kind[case.harness] += 1
        mark = "ok " if not diffs else "BAD"
        bad += bool(diffs)
        print(f"  {mark} {case.name:58s} {case.harness:11s} {case.version:10s} stops {stops}")
        for d in diffs:
            print(f"        {d}")
    print(f"misread: {bad} of {len(cases)}; by harness: {dict(sorted(by_kind.items()))}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--policy", default=str(REPO / "policies"))
    ap.add_argument("--quiet", action="store_true", help="list misses without their text")
    args = ap.parse_args()
    print_header(args.policy)
    questions(args.policy, args.quiet)
    transcripts()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
