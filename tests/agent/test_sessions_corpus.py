"""The public-sessions corpus (tests/fixtures/sessions/): question detection on a fixed sample of
labelled closing messages, and every transcript read stop by stop — by replay and by the hook,
which must agree with each other and with the facts written beside the transcript.
``benchmarks/bench_questions.py`` measures the whole corpus."""

from __future__ import annotations

import pytest

from sessions_corpus import PACK, compare_stops, hook_stops, load_closings, replay_stops, transcript_cases
from stoprule.agent.hook.pack_data import pack_data
from stoprule.agent.hook.questions import explain_question

CASES = transcript_cases()


def test_the_corpus_is_what_its_readme_says() -> None:
    rows = load_closings()
    assert len(rows) >= 300 and len({r["source"] for r in rows}) >= 6
    assert {r["harness"] for r in rows} >= {"claude-code", "codex", "copilot", "cursor", "gemini", "opencode"}
    assert {r["label"] for r in rows} == {"question", "not_question"}
    formats = {"claude", "codex", "gemini", "copilot", "cursor", "antigravity"}
    assert len(CASES) >= 30 and {c.fmt for c in CASES} >= formats


def test_a_fixed_sample_of_closings_is_labelled_as_the_detector_reads_it() -> None:
    """Every 7th message (71), in the order of the file; the known misses are left out."""
    spec = pack_data(PACK)["question"]
    known_misses = {"c113", "c280"}  # listed in benchmarks/README.md
    sample = [r for r in load_closings()[::7] if r["id"] not in known_misses]
    wrong = [
        (r["id"], r["label"])
        for r in sample
        if bool((explain_question(r["text"], spec) or {}).get("asked")) != (r["label"] == "question")
    ]
    assert len(sample) >= 40 and wrong == []


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_replay_reads_the_expected_facts_at_every_stop(case) -> None:  # type: ignore[no-untyped-def]
    diffs, _ = compare_stops(case)
    assert diffs == []


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_hook_and_replay_derive_the_same_facts_stop_by_stop(case) -> None:  # type: ignore[no-untyped-def]
    replayed = replay_stops(case)
    hooked = hook_stops(case)
    if case.path.read_bytes().lstrip().startswith((b"{\n", b"[\n")):
        replayed = replayed[-1:]
    assert hooked == replayed
