"""``closure``: what the agent declared in a trailer at the very end of its last message.

The trailer is one or more final lines, each ``stoprule: KEY=VALUE`` (nothing after them
but blank lines)::

    stoprule: closure=<state>
    stoprule: review=The migration needs a production credential only you have.

``closure`` gives the reply's closure state (``closure.state``; a word of ``a-z`` and
``_``); ``review`` asks for user review with the given reason (``closure.review`` true and
``closure.review_reason``). Text elsewhere in the message is never read for the trailer.

The message is also read for a question to the user (:mod:`stoprule.agent.hook.questions`,
by the pack's ``agent/triage.json`` ``question`` patterns): ``closure.question_asked``
(bool), ``closure.question`` (the sentence that decided), ``closure.question_why`` (why it
is, or is not, a question: observed only) and ``closure.question_again`` (a question was
already seen at an earlier stop of this turn: the policy pushes back once).

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

from stoprule._util.regex import compiled
from stoprule.agent.hook.event import HookEvent
from stoprule.agent.hook.questions import explain_question, find_question

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from stoprule.agent.hook.providers.context import Context

__all__ = ["find_question", "parse_trailer", "provide"]

# compiled on first use (stoprule._util.regex): most messages have no trailer
_LINE = r"^\s*stoprule:\s*(closure|review)\s*=\s*(.*?)\s*$"
_WORD = r"^[a-z_]+$"


def parse_trailer(message: str | None) -> tuple[dict[str, Any], list[str]]:
    if not message or "stoprule:" not in message:
        return {}, []
    obs: dict[str, Any] = {}
    notes: list[str] = []
    lines = message.rstrip().split("\n")
    for line in reversed(lines):
        m = compiled(_LINE).match(line)
        if m is None:
            break
        key, value = m.groups()
        if key == "closure" and "state" not in obs:
            if compiled(_WORD).match(value):
                obs["state"] = value
            else:
                notes.append(f"closure value {value!r} is not a word of a-z and _: ignored")
        elif key == "review" and "review" not in obs and value:
            obs["review"] = True
            obs["review_reason"] = value
    return obs, notes


def provide(event: HookEvent, ctx: Context) -> tuple[dict[str, Any], list[str]]:
    obs, notes = parse_trailer(event.last_message)
    if event.last_message is None:
        return obs, notes
    from stoprule.agent.hook.pack_data import pack_data
    from stoprule.agent.hook.providers._turn import fresh_turn

    found = explain_question(event.last_message, pack_data(ctx.pack).get("question") or {})
    question = found["sentence"] if found and found["asked"] else None
    if found is not None:
        obs["question_why"] = f"{found['why']}: {found['sentence'][:200]}"
    seen = ctx.session.get("question")
    seen = seen if isinstance(seen, dict) else {}
    again = bool(seen.get("asked")) and not fresh_turn(event, ctx.session)
    obs["question_asked"] = question is not None
    if question is not None:
        obs["question"] = question
        obs["question_again"] = again
        ctx.session["question"] = {"asked": True}
    elif fresh_turn(event, ctx.session):
        ctx.session["question"] = {"asked": False}
    return obs, notes
