"""Does the agent's last message hand a question to the user? Structure-aware, patterns from the pack.

The message is read as a person reads its end: code blocks, inline code, quotes and the
closure trailer are left out; a list (numbered, bulleted, lettered options) belongs to the
sentence that introduces it; the last ``window`` sentences are read from the end. A sentence
is a question to the user when

- it ends with a question mark (``?``, ``？``, ``؟``) and is the last sentence, introduces the
  list that ends the message (its options or plan), or is addressed to the user (``addressed``:
  "should I", "do you", "would you prefer" ...) with only its rationale, options or plan after it;
- or it matches ``requests`` (asking without a question mark: "please confirm", "let me know
  which", "try it and tell me" ...), as a sentence or as a step of the list that ends the
  message ("2. Try the formatting test again").

A question that only heads the list answering it ("Why these keys?", ``rhetorical``) is not one.

An open-ended invitation with nothing pending (``invitations``: "let me know if you need
anything else", "what would you like to work on next?") is never a question, nor is a
sentence matching ``ignore``. The pack's ``question`` data holds every pattern (Python
regular expressions, matched case-insensitively), so a team adds its language or its
agents' phrasing there, never in code.

On the cold path (tools/import_graph.py): its regexes through :mod:`stoprule._util.regex`.
"""

from __future__ import annotations

from stoprule._util.regex import FOLDS_TO_ASCII, compiled

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["explain_question", "find_question", "sentences"]

# compiled on first use (re's cache), each only for a text that holds what it needs (a short
# message compiles few of them: every compilation costs a stop's start about a tenth of a ms)
_FENCE = r"(?s)```.*?(?:```|\Z)"
_OPEN_TAG = r"<([A-Za-z_][\w-]*)>"
_CLOSE_TAG = r"</[A-Za-z_][\w-]*>"
_DECOR = r"(?:\s*\[[A-Z?!]{1,8}\])+\s*$"  # trailing status marks an export left: [OK] [EMOJI]
_TRAILER = r"(?i)^\s*stoprule:\s*(closure|review)\s*="
_ITEM = (
    r"(?i)^\s*(?:[-*•+]\s+|\d{1,2}[.)]\s+|\(?[A-Za-zА-Яа-я][).]\s+|\**\(?[A-F][).:]\**\s+"
    r"|\**(?:option|opção|opción|вариант)\s*\w{1,3}\b)"
)
_FIELD = r"^\s*\**\w[\w .-]{0,28}:\**\s+\S.*[^:?？]\s*$"  # "Time: ~3h", a list's line too
_SYMBOLS = r"[\s\u2190-\u2bff\u2600-\u27bf\U0001f000-\U0001faff\ufe0f]+$"
_END = r"(?<=[.!?。！？؟])[*_]*\s+"
_ENDS = ".!?。！？؟"  # what _END follows: a text without one is one sentence
_ASK = r"[?？؟][*_\s\"'»」』]*$"
_IGNORECASE = 2  # re.I: every pattern of the pack is matched case-insensitively


def _tag_break(m: Any) -> str:
    """An opening tag as the heading of what follows it."""
    return f"\n\n{m.group(1)}:\n"


def _units(message: str) -> list[tuple[str, str]]:
    """The message as ``(kind, text)`` units in order: ``sentence`` or ``list`` (one per list
    block; its text is the items joined). Lines of one paragraph are joined (terminals wrap
    them); headings stand alone."""
    text = message.replace("\r\n", "\n")
    if text.count("```") % 2:  # the message's start was cut inside a code block (a tail read)
        text = text.split("```", 1)[1]
    if "```" in text:
        text = compiled(_FENCE).sub("\n\n", text)
    if "`" in text:
        text = compiled(r"`[^`\n]*`").sub("code", text)
    if "<" in text:
        text = compiled(_CLOSE_TAG).sub("", compiled(_OPEN_TAG).sub(_tag_break, text))
    units: list[tuple[str, str]] = []

    def prose(lines: list[str]) -> None:
        joined = " ".join(lines)
        for s in _sentences(joined) if any(c in joined for c in _ENDS) else (joined,):
            if s.strip(" \t*_#-|"):
                units.append(("sentence", s.strip()))

    for block in compiled(r"\n\s*\n").split(text) if "\n" in text else (text,):
        lines = [
            ln
            for ln in block.split("\n")
            if ln.strip() and not ln.lstrip().startswith(">") and not (":" in ln and compiled(_TRAILER).match(ln))
        ]
        items: list[str] = []
        para: list[str] = []
        for line in lines:
            if (
                (_item_possible(line) and compiled(_ITEM).match(line))
                or (":" in line and compiled(_FIELD).match(line))
                or (items and line.startswith((" ", "\t")))
            ):
                if para:
                    prose(para)
                    para = []
                items.append(_strip(line))
                continue
            if items:
                units.append(("list", "\n".join(items)))
                items = []
            if line.lstrip().startswith("#"):
                if para:
                    prose(para)
                    para = []
                prose([_strip(line)])
            else:
                para.append(_strip(line))
        if para:
            prose(para)
        if items:
            units.append(("list", "\n".join(items)))
    return units


def _sentences(text: str) -> list[str]:
    """``re.split(_END, text)`` without the regex: split after ``.!?。！？؟`` where ``*``/``_`` marks
    and then whitespace follow (the marks and the whitespace dropped)."""
    out: list[str] = []
    start, i, n = 0, 0, len(text)
    while i < n:
        if text[i] in _ENDS:
            j = i + 1
            while j < n and text[j] in "*_":
                j += 1
            k = j
            while k < n and text[k].isspace():
                k += 1
            if k > j:
                out.append(text[start : i + 1])
                start = i = k
                continue
        i += 1
    out.append(text[start:])
    return out


_ITEM_WORDS = ("option", "opção", "opción", "вариант")


def _item_possible(line: str) -> bool:
    """Whether ``_ITEM`` can match ``line``: its first character opens a list item (a bullet, a
    digit, ``(`` or ``*``), its second is ``)``, ``.`` or ``:`` after a letter, or it starts with
    an option word; read without compiling the regex (most lines are prose)."""
    s = line.lstrip()
    if not s:
        return False
    if s[0] in "-*•+(" or s[0].isdigit() or s[1:2] in (")", ".", ":"):
        return True
    head = s[:8]
    return head.lower().startswith(_ITEM_WORDS) or any(c in head for c in FOLDS_TO_ASCII)


def _strip(line: str) -> str:
    s = line.strip()
    if "]" in s:
        s = compiled(_DECOR).sub("", s)
    if not s.isascii() or s[-1:].isspace():  # (an ASCII line stripped ends with neither space nor symbol)
        s = compiled(_SYMBOLS).sub("", s)
    return s.strip().strip("*_#|").strip()


def sentences(message: str) -> list[str]:
    """The message's sentences and list items, as the detector reads them (for tests and explain)."""
    return [t for _, t in _units(message)]


def _any(patterns: list[str], text: str) -> str | None:
    """The first of ``patterns`` found in ``text`` (case-insensitively). A pattern whose required
    words (:func:`.question_patterns.required`) the text does not hold cannot match it: it is not even compiled
    (the pack holds about a hundred patterns; a stop compiling them all spends ~5 ms)."""
    low = None
    ascii_text = text.isascii()
    for p in patterns:
        needs, beyond_ascii = _read(p)
        if beyond_ascii and ascii_text:
            continue
        if needs:
            if low is None:  # a character that folds to an ASCII letter: no shortcut for this text
                low = "" if any(c in text for c in FOLDS_TO_ASCII) else text.lower()
            if low and not all(any(w in low for w in words) for words in needs):
                continue
        if compiled(p, _IGNORECASE).search(text):
            return p
    return None


_READ: dict[str, tuple[tuple[tuple[str, ...], ...], bool]] = {}


def _read(pattern: str) -> tuple[tuple[tuple[str, ...], ...], bool]:
    found = _READ.get(pattern)
    if found is None:  # not among the readings the cache held (_preload): read here
        from stoprule.agent.hook.question_patterns import read_pattern

        found = _READ[pattern] = read_pattern(pattern)
    return found


_LOADED: set[str] = set()  # the pattern sets whose readings this process has


def _preload(spec: dict[str, Any]) -> None:
    """Read the spec's patterns once per distinct set, and keep the readings in the cache
    (:mod:`stoprule._util.cache`, keyed by the patterns' text, which the entry holds and is
    checked against): a stop reads them there instead of reading each pattern again (~4 ms)."""
    patterns = sorted({p for v in spec.values() if isinstance(v, list) for p in v if isinstance(p, str)} | {_ASK})
    blob = "\0".join(patterns)
    if blob in _LOADED:
        return
    _LOADED.add(blob)
    from stoprule._util.cache import cache_file, content_key, read_entry, write_entry
    from stoprule._util.jsonin import loads
    from stoprule._util.jsonout import dumps

    entry = cache_file(f"questions-{content_key(blob.encode())}.json")
    raw = read_entry(entry, 1 << 20) if entry is not None else None
    try:
        hit = loads(raw) if raw is not None else None
        if isinstance(hit, dict) and hit.get("format") == 2 and hit.get("patterns") == patterns:
            readings = []
            for needs, foreign in hit["read"]:  # (plain loops: a stop checks ~100 readings)
                if type(foreign) is not bool or type(needs) is not list:
                    raise ValueError("a malformed reading")
                for words in needs:
                    if type(words) is not list or not words:
                        raise ValueError("a malformed reading")
                    for w in words:
                        if type(w) is not str or not w:
                            raise ValueError("a malformed reading")
                readings.append((tuple(map(tuple, needs)), foreign))
            for p, reading in zip(patterns, readings, strict=True):  # (ValueError: another count)
                _READ.setdefault(p, reading)
            return
    except (ValueError, TypeError, KeyError):
        pass
    read = [_read(p) for p in patterns]
    if entry is not None:
        write_entry(entry, dumps({"format": 2, "patterns": patterns, "read": read}).encode())


def explain_question(message: str | None, spec: dict[str, Any]) -> dict[str, Any] | None:
    """``{"asked": bool, "sentence": ..., "why": ...}`` for the sentence that decided, or None
    when nothing in the window looks like a question or an invitation."""
    if not message or not spec:
        return None
    window = spec.get("window", 3)
    window = window if isinstance(window, int) and window > 0 else 3
    asks = spec.get("asks") or [_ASK]
    addressed, requests = spec.get("addressed", []), spec.get("requests", [])
    invitations, ignore = spec.get("invitations", []), spec.get("ignore", [])
    options, rhetorical, answers = spec.get("options", []), spec.get("rhetorical", []), spec.get("answers", [])
    _preload(spec)
    units = _units(message)
    seen = 0
    invitation: dict[str, Any] | None = None
    listed: str | None = None  # the list right after this sentence (towards the end): its options or plan
    answered = False  # the sentence right after this one answers it
    list_questions: list[str] = []  # the questions among that list's items
    for kind, text in reversed(units):
        if kind == "list":
            questions = [
                item
                for item in text.split("\n")
                if _any(asks, item) and not _any(rhetorical, item) and not _any(invitations, item)
            ]
            if seen <= 1 and any(seen == 0 or _any(addressed, item) for item in questions):
                return {"asked": True, "sentence": questions[0][:300], "why": "a list of questions to the user"}
            if seen == 0:  # the steps that end the message: one of them asks the user to act and report
                items = [compiled(_ITEM).sub("", i, count=1) for i in text.split("\n")]
                asking = next((i for i in items if _any(requests, i) and not _any(invitations, i)), None)
                if asking:
                    return {
                        "asked": True,
                        "sentence": asking[:300],
                        "why": "asks the user to act, in the steps that end it",
                    }
            listed, list_questions = text, questions if seen <= 1 else []
            continue
        if seen >= window:
            break
        if _any(ignore, text):
            listed, answered = None, False
            continue
        if _any(invitations, text):  # a politeness appendix: it does not use up the window
            invitation = invitation or {
                "asked": False,
                "sentence": text[:300],
                "why": "an open-ended invitation: nothing is pending",
            }
            listed, answered = None, False
            continue
        last, introduces, was_answered = seen == 0, listed is not None, answered
        seen += 1
        listed, answered = None, bool(_any(answers, text))
        if _any(requests, text):
            return {"asked": True, "sentence": text[:300], "why": "asks the user to decide, confirm or act"}
        if introduces and list_questions and _any(addressed, text):
            return {
                "asked": True,
                "sentence": f"{text} {list_questions[0]}"[:300],
                "why": "asks the user the questions listed after it",
            }
        if not _any(asks, text):
            if introduces and text.rstrip().endswith((":", "：")) and _any(options, text):
                return {
                    "asked": True,
                    "sentence": text[:300],
                    "why": "asks the user to choose among the options after it",
                }
            continue
        if introduces and _any(rhetorical, text):  # "Why these keys?" over the list that answers it
            continue
        if last or (introduces and seen <= 2):
            where = "introduces the options or plan after it" if introduces else "is the last sentence"
            return {"asked": True, "sentence": text[:300], "why": f"a question that {where}"}
        if was_answered or _any(rhetorical, text):
            continue
        if _any(addressed, text):
            return {
                "asked": True,
                "sentence": text[:300],
                "why": "a question to the user, followed only by its rationale, options or plan",
            }
    return invitation


def find_question(message: str | None, spec: dict[str, Any]) -> str | None:
    """The sentence of ``message`` that asks the user something, or None."""
    found = explain_question(message, spec)
    return found["sentence"] if found and found["asked"] else None
