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

from stoprule._util.regex import compiled

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
    return head.lower().startswith(_ITEM_WORDS) or any(c in head for c in _FOLDS_TO_ASCII)


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
    words (:func:`required`) the text does not hold cannot match it: it is not even compiled
    (the pack holds about a hundred patterns; a stop compiling them all spends ~5 ms)."""
    low = None
    ascii_text = text.isascii()
    for p in patterns:
        needs, beyond_ascii = _read(p)
        if beyond_ascii and ascii_text:
            continue
        if needs:
            if low is None:  # a character that folds to an ASCII letter: no shortcut for this text
                low = "" if any(c in text for c in _FOLDS_TO_ASCII) else text.lower()
            if low and not all(any(w in low for w in words) for words in needs):
                continue
        if compiled(p, _IGNORECASE).search(text):
            return p
    return None


# the characters re.IGNORECASE matches with an ASCII letter that str.lower() does not map to it
_FOLDS_TO_ASCII = ("\u0130", "\u0131", "\u017f", "\u212a")
_META = frozenset(".^$*+?{}[]()|\\")
_READ: dict[str, tuple[tuple[tuple[str, ...], ...], bool]] = {}


def required(pattern: str) -> tuple[tuple[str, ...], ...]:
    """What every match of ``pattern`` holds, read conservatively from its top level: a tuple of
    requirements, each a tuple of words (lower case, for a case-insensitive search) one of which
    is in the match: a run of literal characters outside groups, classes and optional atoms, or
    a group's alternatives (each read up to its first optional or special part). ``()`` where
    this reading does not cover the pattern (a top-level ``|``, a quantifier in braces, verbose
    mode, escapes that stand for more than a character): it is then always compiled and searched."""
    return _read(pattern)[0]


def beyond_ascii(pattern: str) -> bool:
    """Whether every match of ``pattern`` holds a character outside ASCII (an ASCII text cannot match)."""
    return _read(pattern)[1]


def _read(pattern: str) -> tuple[tuple[tuple[str, ...], ...], bool]:
    found = _READ.get(pattern)
    if found is None:
        found = _READ[pattern] = _requirements(pattern)
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


def _literal(ch: str) -> str | None:
    """``ch`` as a case-insensitive search compares it (lower case ASCII, a character without
    case as it is), or None for a cased letter outside ASCII (its folding is not str.lower's)."""
    if ch.isascii():
        return ch.lower()
    return ch if ch.lower() == ch == ch.upper() else None


def _foreign(ch: str) -> bool:
    """A character outside ASCII that no ASCII character matches case-insensitively."""
    return not ch.isascii() and ch not in _FOLDS_TO_ASCII


def _class_end(p: str, j: int) -> int:
    """The index after the class that starts at ``p[j] == "["``."""
    j += 1
    j += p[j : j + 1] == "^"
    j += p[j : j + 1] == "]"
    while j < len(p) and p[j] != "]":
        j += 2 if p[j] == "\\" else 1
    return j + 1


def _class_chars(body: str) -> tuple[str, ...] | None:
    """The characters a class of plain characters (``[?？؟]``) matches, as :func:`_literal`
    compares them; None for any other class (negated, with a range or an escape)."""
    if not body or body[0] == "^" or "-" in body or "\\" in body or "[" in body:
        return None
    out = []
    for ch in body:
        lit = _literal(ch)
        if lit is None:
            return None
        out.append(lit)
    return tuple(dict.fromkeys(out))


def _group_end(p: str, i: int) -> int:
    """The index of the ``)`` closing the group that opens at ``p[i] == "("`` (or ``len(p)``)."""
    depth, j = 0, i
    while j < len(p):
        if p[j] == "\\":
            j += 2
            continue
        if p[j] == "[":
            j = _class_end(p, j)
            continue
        if p[j] == "(":
            depth += 1
        elif p[j] == ")":
            depth -= 1
            if depth == 0:
                return j
        j += 1
    return j


def _split(body: str) -> list[str]:
    """A group's alternatives (its top-level ``|``)."""
    out, depth, start, k = [], 0, 0, 0
    while k < len(body):
        c = body[k]
        if c == "\\":
            k += 2
            continue
        if c == "[":
            k = _class_end(body, k)
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "|" and depth == 0:
            out.append(body[start:k])
            start = k + 1
        k += 1
    out.append(body[start:])
    return out


def _prefix(alt: str) -> tuple[str, bool]:
    """The literal text every match of ``alt`` starts with (lower case; up to its first optional,
    special or cased non-ASCII part), and whether every match of it holds a foreign character."""
    text: list[str] = []
    foreign = False
    k = 0
    while k < len(alt):
        c = alt[k]
        if c == "\\":
            nxt = alt[k + 1 : k + 2]
            if not nxt or nxt.isalnum():
                break
            c, k = nxt, k + 2
        elif c in _META:
            break
        else:
            k += 1
        after = alt[k : k + 1]
        if after in ("?", "*", "{"):
            break
        foreign = foreign or _foreign(c)
        lit = _literal(c)
        if lit is None:
            break
        text.append(lit)
        if after == "+":
            break
    return "".join(text), foreign


def _alternatives(body: str) -> tuple[tuple[str, ...] | None, bool]:
    """A group's requirement (the literal start of each alternative; None when one has none) and
    whether each of its alternatives needs a foreign character."""
    if body.startswith("?:"):
        body = body[2:]
    elif body.startswith("?"):  # a look-around, a named group, flags: no requirement
        return None, False
    starts = [_prefix(alt) for alt in _split(body)]
    words = tuple(w for w, _ in starts)
    return (words if all(words) else None), all(f for _, f in starts)


def _requirements(p: str) -> tuple[tuple[tuple[str, ...], ...], bool]:
    if compiled(r"\(\?[a-zA-Z]*x").match(p):  # verbose mode: spaces and # mean something else
        return (), False
    needs: list[tuple[str, ...]] = []
    cur: list[str] = []
    foreign = False

    def flush() -> None:
        if len(cur) >= 2:
            needs.append(("".join(cur),))
        cur.clear()

    i, n = 0, len(p)
    while i < n:
        c = p[i]
        if c == "\\":
            nxt = p[i + 1 : i + 2]
            if not nxt or nxt.isalnum():  # \b \w \d \s \A \Z, back references, \x41 ...: no literal
                if nxt in ("x", "u", "U", "N") or nxt.isdigit() or not nxt:
                    return (), False
                flush()
                i += 2
                continue
            ch, i = nxt, i + 2
        elif c == "[":
            flush()
            end = _class_end(p, i)
            chars = _class_chars(p[i + 1 : end - 1])
            if chars and p[end : end + 1] not in ("?", "*", "{"):  # one of its characters is there
                needs.append(chars)
            i = end
            continue
        elif c == "(":
            flush()
            end = _group_end(p, i)
            after = p[end + 1 : end + 2]
            if after == "{" or end >= n:
                return (), False
            if after not in ("?", "*"):
                words, all_foreign = _alternatives(p[i + 1 : end])
                if words is not None:
                    needs.append(words)
                foreign = foreign or all_foreign
            i = end + 1
            continue
        elif c in "|{)":
            return (), False
        elif c in _META:  # . ^ $, or a quantifier after a group or a class
            flush()
            i += 1
            continue
        else:
            ch, i = c, i + 1
        after = p[i : i + 1]
        if after == "{":
            return (), False
        if after in ("*", "?"):  # the character may be absent
            flush()
            continue
        foreign = foreign or _foreign(ch)
        lit = _literal(ch)
        if lit is None:  # a cased letter outside ASCII: compared otherwise
            flush()
            continue
        cur.append(lit)
        if after == "+":  # one or more: the run stops after its first
            flush()
    flush()
    return tuple(needs), foreign


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
