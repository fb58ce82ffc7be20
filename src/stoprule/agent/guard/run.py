"""One guard call: the harness's pre-tool (or settings-change) payload in, its answer out. Never raises.

    output, refusal = run_guard("claude-code", stdin_bytes)

The project is found from the harness's own project directory (``$CLAUDE_PROJECT_DIR``,
``$GEMINI_PROJECT_DIR``: the hook's environment, which the agent's shell cannot change), the
payload's ``cwd`` and the process's. A refusal is written to the session's attempts journal.
The user's switch ``stoprule guard off`` (a ``.stoprule/guard.off`` file) lets every call
through, unless the session started with the guard on (then it holds until the session ends).
Anything that keeps the guard from reading the call lets it through (an error on stderr): the
guard never stops the agent's work for a fault of its own.

On the cold path when the guard runs, before every tool call (tools/import_graph.py,
COLD_PATH_WHEN): its imports stay few, light and lazy.
"""

from __future__ import annotations

from stoprule._util import oslite as os
from stoprule.agent.guard.calls import allow, call_cwd, deny, event_of, session_of, tool_call
from stoprule.agent.guard.paths import Places
from stoprule.agent.guard.rules import Call, Refusal, check
from stoprule.project import GUARD_OFF_FILE, find_project

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import IO, Any

__all__ = ["MESSAGE", "OFF_FILE", "answer", "run_guard"]

OFF_FILE = GUARD_OFF_FILE  # in .stoprule/: the user's switch (stoprule guard off)
MESSAGE = (
    "stoprule refused this call: {what}. stoprule's settings and state and the harness's hooks are the "
    "user's to change; if you need such a change, log it with the `blocker` tool (category permission) and "
    "go on with other work. The user is told of this attempt."
)
_PACKAGE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _project(payload: dict[str, Any], env: Mapping[str, str], cwd: str) -> str | None:
    starts = [env.get("CLAUDE_PROJECT_DIR"), env.get("GEMINI_PROJECT_DIR"), payload.get("cwd")]
    roots = payload.get("workspace_roots")
    if isinstance(roots, list):
        starts += [r for r in roots if isinstance(r, str)]
    starts.append(cwd)
    for start in starts:
        if isinstance(start, str) and start and os.path.isdir(start):
            found = find_project(start)
            if found:
                return found
    return None


def _frozen(project: str | None, session: str | None) -> dict[str, Any]:
    """What the session start recorded for the guard (its frozen record: the switch, the wiring)."""
    if project is None or session is None:
        return {}
    from stoprule._util.jsonin import loads
    from stoprule._util.regular import read_regular
    from stoprule.project import state_file

    data = read_regular(state_file(project, "frozen", session), 16 << 20)
    try:
        frozen = loads(data) if data else {}
    except ValueError:
        return {}
    return frozen if isinstance(frozen, dict) else {}


def _config_change(payload: dict[str, Any], frozen: dict[str, Any]) -> Refusal | None:
    from stoprule._util.files import read_bounded
    from stoprule._util.jsonin import loads
    from stoprule.agent.guard.settings import settings_refusal

    path = payload.get("file_path")
    if not isinstance(path, str) or not path:
        return None
    try:
        data = loads(read_bounded(path, 4 << 20) or b"{}")
    except FileNotFoundError:
        data = {}
    except (OSError, ValueError):
        data = None
    wiring = frozen.get("wiring")
    old = wiring.get(os.path.abspath(path)) if isinstance(wiring, dict) else None
    why = settings_refusal(old if isinstance(old, dict) else None, data, path)
    return Refusal("settings", why, path) if why else None


def run_guard(
    harness: str, data: bytes, *, cwd: str | None = None, env: Mapping[str, str] | None = None
) -> tuple[dict[str, Any] | None, Refusal | None]:
    """``(output, refusal)``: what to print (None: nothing) and why the call was refused (None: it was not)."""
    env = os.environ if env is None else env
    cwd = cwd or os.getcwd()
    from stoprule._util.jsonin import loads

    try:
        payload = loads(data.decode("utf-8-sig") or "{}")
        if not isinstance(payload, dict):
            raise ValueError("the payload is not a JSON object")
    except (UnicodeDecodeError, ValueError) as exc:
        import sys

        sys.stderr.write(f"stoprule guard: cannot read the payload ({exc}); the call is not judged\n")
        return allow(harness), None
    event = event_of(payload)
    session = session_of(payload)
    given = payload.get("cwd")
    here: str = given if isinstance(given, str) and os.path.isdir(given) else cwd
    project = _project(payload, env, here)
    frozen = _frozen(project, session)
    if project is not None and os.path.exists(os.path.join(project, OFF_FILE)) and frozen.get("guard") != "on":
        return allow(harness), None
    if event == "config-change":
        refusal = _config_change(payload, frozen)
        tool = "settings"
    else:
        places = Places(env)
        places.dirs.append((_PACKAGE, "stoprule's own code"))
        tool, command, paths = tool_call(payload, here)
        words: dict[str, str] = {"HOME": env.get("HOME") or os.path.expanduser("~"), "PWD": here}
        if project:
            words["CLAUDE_PROJECT_DIR"] = os.path.dirname(project)
        refusal = check(Call(tool, call_cwd(payload, here), command, paths), places, words)
    if refusal is None:
        return allow(harness), None
    from stoprule.agent.guard.journal import record_attempt, user_state_dir

    record_attempt(
        project or user_state_dir(env),
        session,
        {
            "via": "guard",
            "harness": harness,
            "tool": tool,
            "kind": refusal.kind,
            "what": refusal.what,
        },
    )
    return deny(harness, event, MESSAGE.format(what=refusal.what)), refusal


MAX_PAYLOAD_BYTES = 8 << 20


def answer(harness: str, stdin: IO[bytes], stdout: IO[str], stderr: IO[str]) -> int:
    """Read the payload, print the harness's answer (a refusal named on stderr); always 0."""
    try:
        data = stdin.read(MAX_PAYLOAD_BYTES)
    except (OSError, ValueError):
        data = b""
    try:
        output, refusal = run_guard(harness, data)
    except Exception as exc:  # noqa: BLE001 - never a traceback, always exit 0 (the call is not judged)
        stderr.write(f"stoprule guard: internal error, the call is not judged: {type(exc).__name__}: {exc}\n")
        return 0
    if output is not None:
        import json

        stdout.write(json.dumps(output, ensure_ascii=False) + "\n")
    if refusal is not None:
        stderr.write(f"stoprule guard: {harness}: refused: {refusal.what}\n")
    return 0
