"""Does the agent's last message hand a question to the user? Structure-aware, patterns from the pack.

The message is read as a person reads its end: code blocks, inline code, quotes and the
closure trailer are left out; a list (numbered, bulleted, lettered options) belongs to the
sentence that introduces it; the last ``window`` sentences are read from the end. A sentence
is a question to the user when

- it ends with a question mark (``?``, ``？``, ``؟``) and is the last sentence, introduces the
  list that ends the message (its options or plan), or is addressed to the user (``addressed``:
  "should I", "do you", "would you prefer" ...) with only its rationale, options or plan after it;
- or it matches ``requests`` (asking without a question mark: "please confirm", "let me know
  which", "try it and tell me" ...).

An open-ended invitation with nothing pending (``invitations``: "let me know if you need
anything else", "what would you like to work on next?") is never a question, nor is a
sentence matching ``ignore``. The pack's ``question`` data holds every pattern (Python
regular expressions, matched case-insensitively), so a team adds its language or its
agents' phrasing there, never in code.

On the cold path (tools/import_graph.py): ``re`` only.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["explain_question", "find_question", "sentences"]

_FENCE = re.compile(r"```.*?(?:```|\Z)", re.S)
_OPEN_TAG = re.compile(r"<([A-Za-z_][\w-]*)>")
_CLOSE_TAG = re.compile(r"</[A-Za-z_][\w-]*>")
_DECOR = re.compile(r"(?:\s*\[[A-Z?!]{1,8}\])+\s*$")  # trailing status marks an export left: [OK] [EMOJI]
_TRAILER = re.compile(r"^\s*stoprule:\s*(closure|review)\s*=", re.I)
_ITEM = re.compile(
    r"^\s*(?:[-*•+]\s+|\d{1,2}[.)]\s+|\(?[A-Za-zА-Яа-я][).]\s+|\**\(?[A-F][).:]\**\s+"
    r"|\**(?:option|opção|opción|вариант)\s*\w{1,3}\b)",
    re.I,
)
_FIELD = re.compile(r"^\s*\**\w[\w .-]{0,28}:\**\s+\S.*[^:?？]\s*$")  # "Time: ~3h", a list's line too
_SYMBOLS = re.compile(r"[\s\u2190-\u2bff\u2600-\u27bf\U0001f000-\U0001faff\ufe0f]+$")
_END = re.compile(r"(?<=[.!?。！？؟])[*_]*\s+")
_ASK = r"[?？؟][*_\s\"'»」』]*$"


def _units(message: str) -> list[tuple[str, str]]:
    """The message as ``(kind, text)`` units in order: ``sentence`` or ``list`` (one per list
    block; its text is the items joined). Lines of one paragraph are joined (terminals wrap
    them); headings stand alone."""
    text = message.replace("\r\n", "\n")
    if text.count("```") % 2:  # the message's start was cut inside a code block (a tail read)
        text = text.split("```", 1)[1]
    text = _FENCE.sub("\n\n", text)
    text = re.sub(r"`[^`\n]*`", "code", text)
    text = _CLOSE_TAG.sub("", _OPEN_TAG.sub(r"\n\n\1:\n", text))
    units: list[tuple[str, str]] = []

    def prose(lines: list[str]) -> None:
        for s in _END.split(" ".join(lines)):
            if s.strip(" \t*_#-|"):
                units.append(("sentence", s.strip()))

    for block in re.split(r"\n\s*\n", text):
        lines = [
            ln for ln in block.split("\n") if ln.strip() and not ln.lstrip().startswith(">") and not _TRAILER.match(ln)
        ]
        items: list[str] = []
        para: list[str] = []
        for line in lines:
            if _ITEM.match(line) or _FIELD.match(line) or (items and line.startswith((" ", "\t"))):
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


def _strip(line: str) -> str:
    return _SYMBOLS.sub("", _DECOR.sub("", line.strip())).strip().strip("*_#|").strip()


def sentences(message: str) -> list[str]:
    """The message's sentences and list items, as the detector reads them (for tests and explain)."""
    return [t for _, t in _units(message)]


def _any(patterns: list[str], text: str) -> str | None:
    for p in patterns:
        if re.search(p, text, re.I):
            return p
    return None


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
