"""``guard``: the agent's refused attempts this session (the guard's and the CLI's journal,
:mod:`stoprule.agent.guard.journal`), read from the project's ``.stoprule/`` and the user's
state directory. It always runs (``providers.enabled`` cannot turn it off: the agent may have
written that list). Observation ``attempts``: each attempt as one line (``via: tool: what``),
the newest :data:`SHOWN`; ``ctx.session["attempts_seen"]`` counts those already named to the
user, and ``ctx.new_attempts`` holds the ones the next answer names.

Claude Code's own deny rules (``permissions.deny``, which ``init`` writes as a second line)
refuse some calls before any hook sees them: those refusals are read from the session's
transcript (a tool result "denied by your permission settings" / "has been denied" for a call
the guard would refuse too) and journaled once each (by the call's id).

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

from stoprule.agent.hook.event import HookEvent

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["describe", "provide"]

SHOWN = 20


def describe(attempt: dict[str, Any]) -> str:
    """One line: ``guard: Bash: runs `stoprule blockers off` ...``."""
    parts = [str(attempt.get(k)) for k in ("via", "tool") if attempt.get(k)]
    return ": ".join([*parts, str(attempt.get("what", ""))])[:400]


_DENIALS = (b"denied by your permission settings", b"has been denied")
_OVERLAP = max(map(len, _DENIALS)) - 1  # bytes read again before the last stop's end: a refusal across it
TAIL_BYTES = 4 << 20


def _denied_by_the_harness(event: HookEvent, ctx: Any, known: set[str]) -> list[dict[str, Any]]:
    """Claude Code's deny-rule refusals in the transcript's tail that the guard would refuse too,
    not journaled yet (``known``: the ids journaled). The tail is read only when what the
    transcript gained since the last stop (``ctx.session["denials_mark"]``) names a refusal: a
    transcript of several MB costs a stop the bytes it gained, not its last 4 MB."""
    from stoprule._util import oslite as os
    from stoprule._util.jsonin import loads
    from stoprule._util.jsonout import dumps

    path = event.transcript_path
    if event.harness != "claude-code" or not path:
        return []
    from stoprule._util.regular import read_appended, read_regular

    # what the transcript gained since the last stop looked (a FIFO there: nothing, never blocks)
    appended = read_appended(path, TAIL_BYTES, ctx.session.get("denials_mark"), _OVERLAP)
    if appended is None:
        return []
    new, ctx.session["denials_mark"] = appended
    if not any(d in new for d in _DENIALS):
        return []
    data = read_regular(path, TAIL_BYTES, tail=True) or b""  # the tail: the calls a refusal answers
    from stoprule.agent.guard.paths import Places
    from stoprule.agent.guard.rules import Call, check

    uses: dict[str, tuple[str, dict[str, Any]]] = {}
    out: list[dict[str, Any]] = []
    root = os.path.dirname(ctx.project) if ctx.project else ctx.workdir
    places = Places(os.environ)
    for line in data.split(b"\n"):
        if b'"tool_use"' not in line and not any(d in line for d in _DENIALS):
            continue
        try:
            content = loads(line).get("message", {}).get("content")
        except (ValueError, AttributeError):
            continue
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_use" and isinstance(block.get("input"), dict):
                uses[str(block.get("id"))] = (str(block.get("name")), block["input"])
            elif block.get("type") == "tool_result" and block.get("is_error"):
                text = dumps(block.get("content"))
                tid = str(block.get("tool_use_id"))
                if tid in known or tid not in uses or not any(d.decode() in text for d in _DENIALS):
                    continue
                name, args = uses[tid]
                paths = [args[k] for k in ("file_path", "notebook_path") if isinstance(args.get(k), str)]
                command = args.get("command") if isinstance(args.get("command"), str) else None
                refusal = check(Call(name, root, command, paths), places, {"HOME": os.path.expanduser("~")})
                if refusal is not None:
                    out.append(
                        {
                            "via": "harness",
                            "tool": name,
                            "kind": refusal.kind,
                            "id": tid,
                            "what": f"{refusal.what} (refused by the harness's deny rules)",
                        }
                    )
                    known.add(tid)
    return out


def provide(event: HookEvent, ctx: Any) -> tuple[dict[str, Any], list[str]]:
    from stoprule._util import oslite as os
    from stoprule.agent.guard.journal import read_attempts, record_attempt, user_state_dir

    homes = dict.fromkeys(h for h in (ctx.project, ctx.home, user_state_dir(os.environ)) if h)
    found: list[dict[str, Any]] = []
    for home in homes:
        found += read_attempts(home, event.session_id)
    for attempt in _denied_by_the_harness(event, ctx, {str(a.get("id")) for a in found if a.get("id")}):
        record_attempt(ctx.home, event.session_id, attempt)
        found.append(attempt)
    found.sort(key=lambda a: a.get("at", 0) if isinstance(a.get("at"), (int, float)) else 0)
    seen = ctx.session.get("attempts_seen")
    seen = seen if isinstance(seen, int) and 0 <= seen <= len(found) else 0
    ctx.new_attempts = [describe(a) for a in found[seen:]]
    ctx.session["attempts_seen"] = len(found)
    if not found:
        return {}, []
    notes = [f"{len(found)} attempt(s) refused this session, {len(found) - seen} new"]
    return {"attempts": [describe(a) for a in found[-SHOWN:]]}, notes
