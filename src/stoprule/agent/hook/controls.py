"""The user's controls inside a session: ``/blockers on|off|status|list|export`` typed in the
harness (``stoprule hook claude-code --event prompt`` on Claude Code's ``UserPromptSubmit``,
which carries the line the user typed, before the model sees it; the plugin's or the project's
``/blockers`` command; Gemini CLI's ``BeforeAgent``, whose prompt is the command's expansion,
beginning with the typed line; Codex's ``UserPromptSubmit``, whose prompt is the typed line: in
its terminal ``$blockers off``, the project's skill, since the terminal refuses a slash command
it does not know; under ``codex exec`` either form). The agent cannot send those events: this
is the user's channel. A harness the agent started from its shell (``codex exec resume``,
``claude -p --resume``) or a second process holding the session sends them too: the hook
refuses those (:func:`stoprule.agent.blockers.procs.foreign_holder`), writes the attempt down
for the stop to show the user, and changes nothing; on Codex also a command in a turn its rollout
does not say the user started (:func:`codex_trigger`: ``codex queue``'s message, delivered when
the session is resumed). OpenCode's plugin refuses a command that arrives while a tool call runs.

``on``/``off`` set the session's own switch (:meth:`BlockerStore.set_enabled`); the project's
stays as ``stoprule blockers on|off`` left it. With the triage off, the three voices agree for
that session: this answer tells the agent to ask the user directly, the ``blocker`` tool logs
nothing and says so, and the stop no longer pushes a question back (``blockersOff``). Any other
prompt: no answer. Never raises.
"""

from __future__ import annotations

import json
import os
import time

from stoprule._util.regular import read_regular
from stoprule.agent.blockers.procs import foreign_holder
from stoprule.agent.blockers.service import open_service
from stoprule.agent.guard.journal import record_attempt, user_state_dir
from stoprule.agent.hook.adapters import decode_payload
from stoprule.project import STATE_DIR, project_root

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["codex_trigger", "parse_command", "run_prompt"]

NAMES = ("/blockers", "/stoprule:blockers")  # as typed: alone, or the plugin's qualified name
# harness -> its names where they differ: Codex's terminal knows no custom slash command (0.171.0:
# "Unrecognized command"); the user mentions the project's skill, ``$blockers``
HARNESS_NAMES = {"codex": ("$blockers", "/blockers")}
ACTIONS = ("on", "off", "status", "list", "export")
EXPORT_CHARS = 8000  # of blockers.md put into the context

OFF = (
    "The user turned stoprule's blocker triage off for this session (/blockers off). From now on "
    "in this session do not log blockers: when you need the user, ask them directly and stop. "
    "stoprule will not push the question back."
)
ON = (
    "The user turned stoprule's blocker triage back on for this session (/blockers on): triage "
    "questions with the `blocker` tool as instructed before."
)
REFUSED = (
    "stoprule: /blockers refused: {why}, so it may be the agent's; the triage setting is unchanged "
    "and the user is told. {retry}"
)
BUSY = ("it arrived while a tool call was running", "Type it again when the agent is idle.")
# who started a Codex turn, in its rollout (``task_started.turn_attribution.turn_trigger``,
# 0.171.0): the user in its terminal, ``codex exec``'s prompt; ``queue`` is a message someone sent
# with ``codex queue``, delivered when the session is resumed
TYPED = ("user", "exec")
ROLLOUT_TAIL = 1 << 20  # bytes of the rollout read from its end: the turn has just started


def parse_command(prompt: str, names: tuple[str, ...] = NAMES) -> str | None:
    """The action of a typed ``/blockers ACTION`` (one of ``names``; ``status`` when none;
    ``help`` when unknown), or None when the prompt is not that command."""
    words = prompt.strip().split()
    if not words or words[0].lower() not in names:
        return None
    action = words[1].lower() if len(words) > 1 else "status"
    return action if action in ACTIONS else "help"


def _gemini_typed(prompt: str) -> str:
    """Gemini CLI's ``BeforeAgent`` prompt without the hook context it prepends: under ``gemini -p``
    (0.61.0) the ``SessionStart`` hook's context comes first, as ``<hook_context>…</hook_context>``
    (so the typed ``/blockers off`` is not even expanded as a command). Gemini escapes ``<`` and
    ``>`` in a hook's context, so nothing inside one can close it early."""
    rest = prompt.lstrip()
    while rest.startswith("<hook_context>") and "</hook_context>" in rest:
        inner, _, after = rest[len("<hook_context>") :].partition("</hook_context>")
        if "<" in inner:
            break
        rest = after.lstrip()
    return rest


def _answer(action: str, session: str | None, cwd: str, name: str = "/blockers") -> tuple[str, str]:
    """(what the agent is told, what the user sees)."""
    service = open_service(cwd)
    store = service.store
    if action in ("on", "off"):
        store.set_enabled(action == "on", session=session)
        user = f"stoprule: blocker triage is {action} for this session (the project's setting is unchanged)"
        return (OFF if action == "off" else ON), user
    if action == "status":
        on, project = store.enabled(session), store.enabled()
        text = (
            f"stoprule: blocker triage is {'on' if on else 'off'} for this session "
            f"({'on' if project else 'off'} for the project); blockers file {os.path.relpath(store.markdown_path)}"
        )
        return text, text
    if action == "list":
        text = "stoprule: " + service.list_blockers(session).text
        return text, text
    if action == "export":
        md = service.export("md")
        cut = md if len(md) <= EXPORT_CHARS else md[:EXPORT_CHARS] + "\n[... cut: stoprule blockers export --format md]"
        return (
            f"stoprule: the blockers, exported for the user:\n{cut}",
            f"stoprule: exported the blockers ({len(md)} characters)",
        )
    text = f"stoprule: {name} on | off | status | list | export"
    return text, text


def _home(cwd: str) -> str:
    """The state directory of the project at ``cwd`` (the user's without one)."""
    root = project_root(cwd)
    return os.path.join(root, STATE_DIR) if root else user_state_dir(os.environ)


def _refused(harness: str, session: str | None, cwd: str, prompt: str, why: str, retry: str) -> str:
    """Write down a refused ``/blockers`` (the stop names it to the user); what the agent is told.
    Nothing is changed."""
    what = f"{' '.join(prompt.split())[:80]} refused: {why}"
    record_attempt(_home(cwd), session, {"via": "/blockers", "harness": harness, "tool": "command", "what": what})
    return REFUSED.format(why=why, retry=retry)


def codex_trigger(transcript: object, turn: object) -> str | None:
    """Who started Codex's turn ``turn`` according to its rollout ``transcript`` (the turn's
    ``task_started`` record, written before the prompt hook runs), or None when no record says."""
    if not isinstance(transcript, str) or not isinstance(turn, str) or not turn:
        return None
    for _ in range(10):  # a record still on its way to the file: a moment more
        for line in reversed((read_regular(transcript, ROLLOUT_TAIL, tail=True) or b"").splitlines()):
            if b"task_started" not in line or turn.encode() not in line:
                continue
            try:
                record = json.loads(line)
            except ValueError:
                continue
            body = record.get("payload") if isinstance(record, dict) else None
            who = body.get("turn_attribution") if isinstance(body, dict) else None
            if isinstance(body, dict) and body.get("type") == "task_started" and isinstance(who, dict):
                trigger = who.get("turn_trigger") if who.get("turn_id") == turn else None
                if trigger is not None:
                    return trigger if isinstance(trigger, str) else None
        time.sleep(0.05)
    return None


def _not_typed(harness: str, payload: dict[str, Any]) -> str | None:
    """Why a Codex prompt was not typed by the user (its turn was started by something else, or
    the rollout does not say who started it), or None. Other harnesses: None."""
    if harness != "codex":
        return None
    trigger = codex_trigger(payload.get("transcript_path"), payload.get("turn_id"))
    if trigger in TYPED:
        return None
    if trigger is None:
        return "Codex's record of this turn does not say the user typed it"
    return f"Codex's record of this turn says `{trigger}` started it (`queue`: a message sent with `codex queue`)"


def run_prompt(harness: str, data: bytes) -> dict[str, Any] | None:
    """The harness's answer to a prompt that is ``/blockers ...`` (None for any other)."""
    try:
        payload = decode_payload(data)
        prompt = payload.get("prompt")
        if harness == "gemini" and isinstance(prompt, str):
            prompt = _gemini_typed(prompt)
        names = HARNESS_NAMES.get(harness, NAMES)
        action = parse_command(prompt, names) if isinstance(prompt, str) else None
        if action is None:
            return None
        session = payload.get("session_id")
        sid = session if isinstance(session, str) and session else None
        given = payload.get("cwd")
        cwd = given if isinstance(given, str) else "."
        foreign = _not_typed(harness, payload) or foreign_holder(_home(cwd), sid)  # the agent's own harness
        if payload.get("refused") is True:  # the plugin saw a tool call running: maybe the agent's own
            agent = user = _refused(harness, sid, cwd, str(prompt), *BUSY)
        elif foreign is not None:
            retry = "Type it in the session's own terminal."
            agent = user = _refused(harness, sid, cwd, str(prompt), foreign, retry)
        else:
            agent, user = _answer(action, sid, cwd, names[0])
    except Exception as exc:  # noqa: BLE001 - a hook never fails the user's prompt
        agent = user = f"stoprule: /blockers failed: {type(exc).__name__}: {exc}"
    if harness == "gemini":  # BeforeAgent: the context is added to the prompt; systemMessage shown
        return {
            "hookSpecificOutput": {"hookEventName": "BeforeAgent", "additionalContext": agent},
            "systemMessage": user,
        }
    if harness not in ("claude-code", "codex"):
        return {"additionalContext": agent}
    return {  # Codex's UserPromptSubmit output schema allows exactly these keys (0.171.0)
        "hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": agent},
        "systemMessage": user,
    }
