"""Question detection skips a pattern whose required words a sentence does not hold (it is not
compiled): the words are read conservatively, so the answer is always the one searching every
pattern gives. Held over every pattern of the default pack and every sentence of the question
endings and the public-sessions corpus, and over texts built to trip a shortcut (case folding
outside ASCII, the characters ``re.IGNORECASE`` matches with ASCII letters)."""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

import pytest

from stoprule._util.regex import FOLDS_TO_ASCII
from stoprule.agent.hook import question_patterns, questions
from stoprule.agent.hook.question_patterns import beyond_ascii, required
from stoprule.agent.hook.questions import explain_question, sentences
from tiers import first_by_default

REPO = Path(__file__).resolve().parents[2]
SPEC = json.loads((REPO / "policies" / "agent" / "triage.json").read_text(encoding="utf-8"))["question"]
LISTS = {k: v for k, v in SPEC.items() if isinstance(v, list) and all(isinstance(p, str) for p in v)}
PATTERNS = sorted({p for v in LISTS.values() for p in v} | {questions._ASK})
TRICKY = [
    "PLEASE CONFIRM THAT it works", "Let Me Know Which one", "pleaſe confirm that", "\u212aeep going?",
    "İs there anything else", "ıs there anything", "Would you like me to push?", "Вы хотите продолжить?",
    "请确认一下", "ご確認ください。", "let me know\twhich", "and let's see", "and lets see", "WHAT'S NEXT",
    "Send me the log", "tell me whether", "", "?", "choose: one", "I CAN also do it if you WANT",
]  # fmt: skip


@cache
def texts() -> list[str]:
    out = list(TRICKY)
    for line in (REPO / "tests" / "fixtures" / "questions" / "endings.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            out += sentences(json.loads(line)["text"])
    for line in (REPO / "tests" / "fixtures" / "sessions" / "closings.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            out += sentences(json.loads(line)["text"])
    return out


def _plain(patterns: list[str], text: str) -> str | None:
    return next((p for p in patterns if re.search(p, text, re.I)), None)


@pytest.mark.parametrize("kind", first_by_default(sorted(LISTS), 4))
def test_the_shortcut_gives_what_searching_every_pattern_gives(kind: str) -> None:
    for text in texts():
        assert questions._any(LISTS[kind], text) == _plain(LISTS[kind], text), (kind, text)


@pytest.mark.integration
def test_every_requirement_holds_in_every_match() -> None:
    for p in PATTERNS:
        needs = required(p)
        for text in texts():
            if not re.search(p, text, re.I):
                continue
            assert not (beyond_ascii(p) and text.isascii()), (p, text)
            if needs and not any(c in text for c in FOLDS_TO_ASCII):
                low = text.lower()
                assert all(any(w in low for w in words) for words in needs), (p, text, needs)


def test_the_words_read_from_a_pattern() -> None:
    assert required(r"\blet me know (which|whether)\b") == (("let me know ",), ("which", "whether"))
    assert required(r"\band let'?s see\b") == (("and let",), ("s see",))
    assert required(r"^(please )?(choose|pick) (one|an option)\b") == (("choose", "pick"), ("one", "an option"))
    for uncovered in (r"a|b", r"ab{2}", r"(?x) a b", r"\x41bc", r"(ab){2}", r"\1ab", r"(?=ab)cd"):
        assert all(len(words) for words in required(uncovered))  # no empty requirement, or none at all
    assert required(r"a|b") == () and required(r"(?x) a b") == () and required(r"ab{2}") == ()
    assert required(r"(?=ab)cd") == (("cd",),)  # a look-ahead requires nothing it can be trusted for
    assert required(r"Вы хотите") == ()  # letters whose case folding is not str.lower's: not used
    assert beyond_ascii(r"Вы хотите") and beyond_ascii(r"(что-то|что-нибудь) ещё")
    assert not beyond_ascii(r"(да|yes)") and not beyond_ascii("\u017fome")  # ſ matches an ASCII s
    assert required(r"\b(melde dich,? (wenn|falls)|sonst noch)\b") == (("melde dich", "sonst noch"),)


def test_a_class_of_plain_characters_is_a_requirement() -> None:
    assert required(questions._ASK) == (("?", "？", "؟"),)
    assert required(r"[ab]+c") == (("a", "b"),) and required(r"[ab]?cd") == (("cd",),)
    for uncovered in (r"[a-z]x", r"[^?]", r"[\s?]", r"[?]*", "[\u212a]"):
        assert required(uncovered) == (), uncovered


def test_the_sentence_split_and_the_item_check_agree_with_their_regexes() -> None:
    """Read without compiling: a sentence ends where ``_END`` splits, and ``_ITEM`` never matches
    a line the cheap check turns away (over the corpus's lines and texts built to trip them)."""
    import random

    rnd = random.Random(5)
    ends, items = "ab. !?。*_ \t\n\u3000？؟x", "-*•+(1١²aZяé).: \tOoptionВариант opçãoİıſ\u212a"
    lines = [ln for t in texts() for ln in t.split("\n")]
    for text in lines + ["".join(rnd.choice(ends) for _ in range(rnd.randint(0, 30))) for _ in range(20_000)]:
        assert questions._sentences(text) == re.split(questions._END, text), text
    made = ["".join(rnd.choice(items) for _ in range(rnd.randint(0, 12))) for _ in range(20_000)]
    for line in lines + made + ["Option " + m for m in made[:2000]] + ["optİon " + m for m in made[:2000]]:
        if re.match(questions._ITEM, line):
            assert questions._item_possible(line), line


def test_a_character_without_case_is_matched_only_by_itself() -> None:
    """Where a requirement keeps a character outside ASCII as it is, no other character matches it
    case-insensitively (what ``re.IGNORECASE`` compares: lower case, and its own case-fix table)."""
    kept = {c for p in PATTERNS for words in required(p) for w in words for c in w if not c.isascii()}
    chars = map(chr, (*range(0xD800), *range(0xE000, 0x110000)))  # every code point but the surrogates
    others = [(ch, low) for ch in chars if (low := ch.lower()) in kept and low != ch]
    assert not others, others
    assert kept, "the default pack has patterns in scripts without case"


def test_the_characters_that_fold_to_ascii_are_the_ones_re_folds() -> None:
    """The detector's check of a text and the reading of a pattern share one table
    (``stoprule._util.regex.FOLDS_TO_ASCII``): the characters outside ASCII that
    ``re.IGNORECASE`` matches with an ASCII letter."""
    letter = re.compile("[a-z]", re.I)
    chars = map(chr, (*range(0x80, 0xD800), *range(0xE000, 0x110000)))  # every code point beyond ASCII
    folds = {ch for ch in chars if letter.fullmatch(ch)}
    assert folds == set(FOLDS_TO_ASCII)


def test_the_detector_decides_as_before() -> None:
    """The whole detector, with the shortcut and without it (every pattern searched), on every
    ending of the question fixtures and the corpus."""
    endings = [
        json.loads(x)["text"]
        for x in (REPO / "tests" / "fixtures" / "questions" / "endings.jsonl").read_text(encoding="utf-8").splitlines()
        if x.strip()
    ]
    fast = [explain_question(t, SPEC) for t in endings]
    saved = questions._any
    try:
        questions._any = _plain  # type: ignore[assignment]
        slow = [explain_question(t, SPEC) for t in endings]
    finally:
        questions._any = saved
    assert fast == slow


def test_the_readings_are_kept_in_the_cache_and_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STOPRULE_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(questions, "_READ", {})
    monkeypatch.setattr(questions, "_LOADED", set())
    message = "Committed notes.txt. Should I also push it?"
    want = explain_question(message, SPEC)
    (entry,) = tmp_path.glob("questions-*.json")
    assert json.loads(entry.read_text())["patterns"] == sorted(PATTERNS)
    reads = []
    real = question_patterns.read_pattern
    monkeypatch.setattr(question_patterns, "read_pattern", lambda p: reads.append(p) or real(p))
    for damage in (None, lambda e: e["read"].pop(), lambda e: e["patterns"].reverse(), lambda e: e.clear()):
        if damage is not None:
            data = json.loads(entry.read_text())
            damage(data)
            entry.write_text(json.dumps(data))
        monkeypatch.setattr(questions, "_READ", {})
        monkeypatch.setattr(questions, "_LOADED", set())
        reads.clear()
        assert explain_question(message, SPEC) == want
        assert bool(reads) == (damage is not None)  # read from the entry, or again when it does not hold
