"""The hook's events besides the stop: ``session-start`` and ``permission``. Never raise.

``session-start`` (Claude Code ``SessionStart``, Codex ``SessionStart``, Gemini CLI
``SessionStart``, Copilot ``sessionStart``, the OpenCode plugin): records the session's
baseline (the files already dirty, with content hashes: the ``git`` provider counts only
what changed since), links the harness process to the session for ``stoprule mcp``
(:mod:`stoprule.agent.blockers.procs`), and answers with the standing triage instructions, rendered
from the pack's ``agent/triage.json`` and its blocker categories.

Both follow the session mode (:mod:`stoprule.agent.hook.mode`): an interactive session gets
the pack's ``instructions_interactive`` (no "nobody will answer") and no permission triage.

``permission`` (Claude Code / Codex ``PermissionRequest``, Copilot ``permissionRequest``,
the OpenCode plugin on ``permission.asked``), opt-in with ``hook.permission_triage: true``: a permission
request is never approved by stoprule; it is denied with the pack's triage message (log a
``permission`` blocker, switch tasks). Off (the default), stoprule says nothing and the
harness asks the user as usual.

On the cold path when a session starts or a permission is requested (tools/import_graph.py,
COLD_PATH_WHEN): its imports stay few, light and lazy.
"""

from __future__ import annotations

import time
from typing import TypeVar

from stoprule._util import oslite as os
from stoprule._util.records import record
from stoprule.agent.hook.adapters import adapter, decode_payload

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

    from stoprule.agent.hook.event import HookEvent
    from stoprule.config.reader import Settings

_T = TypeVar("_T")

__all__ = ["instructions", "render_permission", "render_session_start", "run_permission", "run_session_start"]

# The harness's event name in each answer (Claude Code's and Codex's hookSpecificOutput).
_SPECIFIC = ("claude-code", "codex", "gemini")


def render_session_start(harness: str, text: str) -> dict[str, Any] | None:
    """The harness's answer that adds ``text`` to the agent's context."""
    if harness in _SPECIFIC:
        return {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text}}
    if harness == "copilot":
        return {"additionalContext": text}
    if harness == "opencode":
        return {"system": text}
    if harness == "cursor":
        return {"additional_context": text}
    return None


def render_permission(harness: str, message: str | None) -> dict[str, Any] | None:
    """A deny with ``message`` (None: no decision, the harness asks the user)."""
    if message is None:
        return {} if harness in ("copilot", "opencode", "gemini", "cursor") else None
    if harness in ("claude-code", "codex"):
        return {
            "hookSpecificOutput": {
                "hookEventName": "PermissionRequest",
                "decision": {"behavior": "deny", "message": message},
            }
        }
    if harness == "copilot":
        return {"behavior": "deny", "message": message}
    if harness == "opencode":
        return {"status": "deny", "message": message}
    if harness == "gemini":
        return {"decision": "deny", "reason": message}
    if harness == "cursor":
        return {"permission": "deny", "user_message": message, "agent_message": message}
    return None


def _categories(pack: str) -> dict[str, str]:
    from stoprule.engine.packs import load_policy

    sets = load_policy(pack).compiled.sets
    soft = list(sets.get("blocker_categories.soft", ()))
    hard = [c for c in sets.get("blocker_categories", ()) if c not in soft]
    closures = ", ".join(sets.get("legal_closure_states", ()))
    return {"hard": ", ".join(hard), "soft": ", ".join(soft), "closures": closures}


def instructions(pack: str, mode: str = "autonomous") -> str:
    """The standing instructions of ``pack`` for a session of ``mode`` (``instructions``, or
    ``instructions_interactive`` when a person is there; empty when the pack has none)."""
    from stoprule.agent.hook.pack_data import pack_data, render_text

    data = pack_data(pack)
    template = data.get("instructions_interactive") if mode == "interactive" else data.get("instructions")
    return render_text(template, _categories(pack)) if isinstance(template, str) else ""


@record
class _Begun:
    event: HookEvent
    workdir: str
    project: str | None
    home: str
    settings: Settings
    env: Mapping[str, str]


def _mode(b: _Begun, harness: str) -> tuple[str, str]:
    from stoprule.agent.hook.mode import resolve

    return resolve(harness, b.event.raw, b.env, (b.settings.session or {}).get("mode"), None)


def _handle(
    harness: str,
    name: str,
    data: bytes,
    cwd: str | None,
    env: Mapping[str, str] | None,
    body: Callable[[_Begun, dict[str, Any]], _T],
    fallback: _T,
) -> _T:
    """Parse the payload, find the project and its settings, run ``body``; any failure gives
    ``fallback`` (a hook never fails its harness). One log line either way."""
    from stoprule.agent.hook.runner import _log as log
    from stoprule.agent.hook.runner import state_home
    from stoprule.config.reader import settings_for

    env = os.environ if env is None else env
    entry: dict[str, Any] = {"ts": round(time.time(), 3), "harness": harness, "event": name}
    home, settings = None, None
    try:
        event = adapter(harness).parse(decode_payload(data), name)
        workdir = event.cwd if event.cwd and os.path.isdir(event.cwd) else (cwd or os.getcwd())
        from stoprule.agent.hook.frozen import anchor

        root = anchor(harness, env)  # the harness's own project dir, when it names one
        project, home = state_home(root or workdir, env)
        if root is not None:
            workdir = os.path.dirname(project) if project else root
        settings = settings_for(project, event.session_id)
        out = body(_Begun(event, workdir, project, home, settings, env), entry)
    except Exception as exc:  # noqa: BLE001 - a hook never fails its harness
        entry["error"] = f"{type(exc).__name__}: {exc}"[:2000]
        out = fallback
    if home is not None:
        log(home, settings.hook.get("log", True) if settings is not None else True, entry)
    return out


def _freeze(b: _Begun, policy: str | None) -> bool:
    """Freeze the session (:mod:`stoprule.agent.hook.frozen`) unless it is frozen already (a resumed
    session keeps what it started with); whether it is frozen now."""
    from stoprule.agent.hook import frozen as fz
    from stoprule.engine.packs import pack_path

    session = b.event.session_id
    assert session is not None
    if fz.load(b.home, session) is not None:
        return True
    root = os.path.dirname(b.project) if b.project else b.workdir
    record = fz.freeze(b.project, b.home, session, root, pack_path(policy, b.env, b.workdir), b.env)
    fz.save(b.home, session, record, first=True)
    return True


def run_session_start(
    harness: str,
    data: bytes,
    *,
    cwd: str | None = None,
    env: Mapping[str, str] | None = None,
    policy: str | None = None,
) -> dict[str, Any] | None:
    """Record the baseline, link the session, answer with the instructions."""

    def body(b: _Begun, entry: dict[str, Any]) -> dict[str, Any] | None:
        from stoprule.agent.blockers.procs import link_session
        from stoprule.agent.hook.providers.git_baseline import baseline
        from stoprule.agent.hook.state import update_session
        from stoprule.engine.packs import pack_path

        entry.update(session=b.event.session_id, project=b.project)
        try:
            base = baseline(b.workdir, b.project, b.settings.blockers)
        except Exception as exc:  # noqa: BLE001 - no git, a timeout: no baseline, every dirty file counts
            base, entry["baseline_error"] = None, f"{type(exc).__name__}: {exc}"
        if base is not None:

            def keep_first(rec: dict[str, Any]) -> dict[str, Any]:  # a resumed session keeps its baseline
                return rec if isinstance(rec.get("baseline"), dict) else {**rec, "baseline": base}

            rec = update_session(b.home, b.event.session_id, keep_first)
            entry["baseline"] = len(rec["baseline"].get("files", {}))
        if b.event.session_id:
            entry["linked"] = link_session(b.home, b.event.session_id, harness)
            entry["frozen"] = _freeze(b, policy)
        mode, source = _mode(b, harness)
        entry["session_mode"] = {"mode": mode, "source": source}
        text = instructions(pack_path(policy, b.env, b.workdir), mode)
        return render_session_start(harness, text) if text else None

    fallback: dict[str, Any] | None = {} if harness in ("gemini", "copilot", "opencode", "cursor") else None
    return _handle(harness, "session-start", data, cwd, env, body, fallback)


def run_permission(
    harness: str,
    data: bytes,
    *,
    cwd: str | None = None,
    env: Mapping[str, str] | None = None,
    policy: str | None = None,
) -> dict[str, Any] | None:
    """Deny with the triage message when ``hook.permission_triage`` is on; else no decision."""

    def body(b: _Begun, entry: dict[str, Any]) -> dict[str, Any] | None:
        from stoprule.agent.hook.pack_data import pack_data, render_text
        from stoprule.engine.packs import pack_path

        raw = b.event.raw
        tool = raw.get("tool_name") or raw.get("toolName") or raw.get("tool") or raw.get("permission") or "a tool"
        entry.update(session=b.event.session_id, tool=str(tool)[:200])
        message = None
        mode, source = _mode(b, harness)
        entry["session_mode"] = {"mode": mode, "source": source}
        if b.settings.hook.get("permission_triage") and mode == "autonomous":
            pack = pack_path(policy, b.env, b.workdir)
            template = pack_data(pack).get("permission")
            if isinstance(template, str):
                message = render_text(template, {"tool": str(tool)[:200], **_categories(pack)})
        quiet = "an interactive session: the user answers" if mode == "interactive" else "permission_triage is off"
        entry["decision"] = "deny" if message else f"none ({quiet})"
        return render_permission(harness, message)

    return _handle(harness, "permission", data, cwd, env, body, render_permission(harness, None))
