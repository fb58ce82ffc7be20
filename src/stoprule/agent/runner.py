"""One stop, start to finish: payload -> event -> settings -> facts -> verdict -> loop guard,
fail and observe policy -> the harness's output. Never raises; stdout gets one JSON object
or nothing, everything else goes to stderr and the log.

    result = run_hook("claude-code", None, stdin_bytes, cwd=os.getcwd())
    result.output      # dict to print as JSON, or None (print nothing: allow)

Failure policy: anything that keeps stoprule from deciding (bad payload, bad config, a
pack that does not compile, an invalid merged fact, the time budget spent) is an internal
error: with ``fail: open`` (default) the stop is allowed and the user told why (where
the harness has a user channel); with ``fail: closed`` it is blocked with the fixed
``closed_message``. The loop guard applies to every block, so neither loops forever.
"""

from __future__ import annotations

import json
import os
import sys
import time

from stoprule.agent.adapters import adapter, decode_payload
from stoprule.agent.event import Decision, HookEvent
from stoprule.agent.settings import default_settings, hook_settings
from stoprule.project import find_project

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

    from stoprule.engine.evaluator import Evaluator

__all__ = ["HookResult", "run_hook", "state_home", "user_state_dir"]

LOG_FILE = "hook.log"
LOG_MAX_BYTES = 4 << 20


class BudgetSpent(Exception):
    """The hook's time budget (``hook.budget_ms``) ran out."""


class HookResult:
    """``output``: what to print (None: nothing); ``entry``: the log entry (also what
    ``--explain-facts`` prints)."""

    __slots__ = ("decision", "entry", "output")

    def __init__(self, output: dict[str, Any] | None, decision: Decision, entry: dict[str, Any]) -> None:
        self.output, self.decision, self.entry = output, decision, entry


def user_state_dir(env: Mapping[str, str]) -> str:
    """Where state and the log go when no ``.stoprule/`` is found."""
    if env.get("STOPRULE_STATE_DIR"):
        return env["STOPRULE_STATE_DIR"]
    base = env.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(base, "stoprule")


def state_home(start: str | None, env: Mapping[str, str]) -> tuple[str | None, str]:
    """``(project, home)``: the nearest ``.stoprule/`` (or None) and where state lives."""
    project = find_project(start)
    return project, project or user_state_dir(env)


def _fresh_turn(event: HookEvent, guard: dict[str, Any]) -> bool:
    """Whether this stop starts a new series (the blocks before it no longer count)."""
    if event.turn_id is not None:
        return event.turn_id != guard.get("turn")
    if event.loop_count is not None:
        return event.loop_count == 0
    if event.flag_known:
        return not event.stop_hook_active
    return False  # no turn id and no flag: only an allowed stop ends a series


def _guard(rec: dict[str, Any], event: HookEvent, block: bool, cap: int) -> tuple[dict[str, Any], int, bool]:
    """Apply the loop guard to the session record: (new record, blocks so far, capped)."""
    guard: dict[str, Any] = rec["guard"] if isinstance(rec.get("guard"), dict) else {}
    blocks = 0 if _fresh_turn(event, guard) else int(guard.get("blocks", 0))
    if event.loop_count is not None:
        blocks = max(blocks, event.loop_count)
    capped = block and blocks >= cap
    new_blocks = blocks + 1 if block and not capped else 0
    rec = dict(rec, guard={"turn": event.turn_id, "blocks": new_blocks, "at": round(time.time(), 3)})
    return rec, blocks, capped


def _alarm(seconds: float) -> Callable[[], None]:
    """Raise BudgetSpent in the main thread after ``seconds`` (POSIX); returns the disarm."""
    try:
        from stoprule._util.command import _signal

        signal = _signal()
        if not hasattr(signal, "setitimer"):
            return lambda: None

        def fire(signum: int, frame: object) -> None:
            raise BudgetSpent(f"time budget of {seconds * 1000:.0f} ms spent")

        old = signal.signal(signal.SIGALRM, fire)
        signal.setitimer(signal.ITIMER_REAL, seconds)

        def disarm() -> None:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)

        return disarm
    except (ImportError, ValueError, OSError):  # ValueError: not the main thread
        return lambda: None


def _peek_fail_closed(path: str | None) -> bool:
    """For a config that does not load: was ``fail: closed`` meant? (read as text)"""
    import re

    try:
        with open(path or "", encoding="utf-8", errors="replace") as fh:
            return re.search(r"(?m)^\s+fail:\s*['\"]?closed", fh.read()) is not None
    except OSError:
        return False


def run_hook(
    harness: str,
    event_name: str | None,
    data: bytes,
    *,
    cwd: str | None = None,
    env: Mapping[str, str] | None = None,
    policy: str | None = None,
    record: Callable[[str, str, Evaluator, dict[str, Any]], str | None] | None = None,
) -> HookResult:
    """Decide one stop. ``record(ledger_dir, run, evaluator, fact)`` records the decision
    (when the ledger is on) and returns the node id."""
    t0 = time.monotonic()
    env = os.environ if env is None else env
    mod = adapter(harness)
    entry: dict[str, Any] = {"ts": round(time.time(), 3), "harness": harness}
    event = HookEvent(harness=harness, event=event_name or "stop")
    settings = default_settings()
    project: str | None = None
    home = user_state_dir(env)
    fail_closed = False
    disarm: Callable[[], None] = lambda: None  # noqa: E731
    verdict = None
    evaluator = None
    fact: dict[str, Any] | None = None
    try:
        event = mod.parse(decode_payload(data), event_name)
        entry.update(event=event.event, session=event.session_id, turn=event.turn_id)
        workdir = event.cwd if event.cwd and os.path.isdir(event.cwd) else (cwd or os.getcwd())
        project, home = state_home(workdir, env)
        entry["project"] = project
        cfg_path = os.path.join(project, "config.yaml") if project else None
        try:
            settings = hook_settings(cfg_path)
        except Exception:
            fail_closed = _peek_fail_closed(cfg_path)
            raise
        hook = settings["hook"]
        fail_closed = hook["fail"] == "closed"
        disarm = _alarm(hook["budget_ms"] / 1000.0)
        from stoprule.engine.packs import load_policy, pack_path

        pack = pack_path(policy, env, workdir)
        entry["pack"] = pack
        evaluator = load_policy(pack)
        from stoprule.agent.providers import Context, gather
        from stoprule.agent.state import read_session

        rec = read_session(home, event.session_id)
        ctx = Context(project, home, workdir, settings["providers"], rec)
        ctx.pack = pack
        fact, prov = gather(event, ctx)
        entry["fact"] = fact
        entry["provenance"] = prov.to_dict()
        verdict = evaluator.evaluate(fact, strict=hook["strict"])
        disarm()
        entry["verdict"] = {k: v for k, v in verdict.to_dict().items() if k != "matched"}
        if verdict.stop == "block":
            decision = Decision(True, verdict.message)
        elif verdict.requires_user_review:
            decision = Decision(False, notice=f"stoprule: user review needed: {verdict.review_reason}")
        elif not verdict.ok:
            decision = Decision(False, notice=f"stoprule: {verdict.verdict} ({verdict.reason}): {verdict.message}")
        else:
            decision = Decision(False)
        observe = hook["mode"] == "observe"
        entry["mode"] = hook["mode"]
        decision = _apply_guard(home, event, decision, hook["loop_cap"], entry, ctx.session, observe)
        if observe:
            entry["would"] = "block" if decision.block else "allow"
            decision = Decision(False, notice=None if decision.block else decision.notice)
    except BaseException as exc:  # noqa: BLE001 - the hook never fails the harness
        disarm()
        if isinstance(exc, (KeyboardInterrupt, SystemExit)) and not isinstance(exc, BudgetSpent):
            raise
        what = f"{type(exc).__name__}: {exc}".strip()
        if hasattr(exc, "render") and callable(exc.render):
            what = f"{type(exc).__name__}: {exc.render()}"
        entry["error"] = what[:4000]
        entry["fail"] = "closed" if fail_closed else "open"
        if fail_closed:
            decision = Decision(True, settings["hook"]["closed_message"])
            try:
                decision = _apply_guard(home, event, decision, settings["hook"]["loop_cap"], entry, None, False)
            except Exception as exc2:  # noqa: BLE001
                entry["guard_error"] = str(exc2)
                decision = Decision(False, notice=f"stoprule hook error (fail closed, guard unusable): {what[:300]}")
        else:
            decision = Decision(False, notice=f"stoprule could not decide, so this stop is allowed (fail open): "
                                              f"{what.splitlines()[0][:300]}")  # fmt: skip
    entry["decision"] = {"block": decision.block, "message": decision.message, "notice": decision.notice}
    if (
        record is not None
        and fact is not None
        and evaluator is not None
        and settings["hook"].get("ledger")
        and project is not None
    ):
        try:
            entry["ledger_node"] = record(project, event.session_id or f"{harness}-unknown-session", evaluator, fact)
        except Exception as exc:  # noqa: BLE001 - a ledger problem is logged, the decision stands
            entry["ledger_error"] = f"{type(exc).__name__}: {exc}"
    entry["ms"] = round((time.monotonic() - t0) * 1000, 2)
    try:
        output = mod.render(decision, event)
    except Exception as exc:  # noqa: BLE001
        entry["render_error"] = str(exc)
        output = {}
    _log(home, settings["hook"].get("log", True), entry)
    return HookResult(output, decision, entry)


def _apply_guard(
    home: str,
    event: HookEvent,
    decision: Decision,
    cap: int,
    entry: dict[str, Any],
    session: dict[str, Any] | None,
    observe: bool,
) -> Decision:
    """Count consecutive blocks for the session and turn; past ``cap`` the stop is allowed."""
    from stoprule.agent.state import update_session

    out: dict[str, Any] = {}

    def change(rec: dict[str, Any]) -> dict[str, Any]:
        if session is not None:  # providers' updates (transcript position)
            rec = {**rec, **{k: v for k, v in session.items() if k != "guard"}}
        if observe:
            return rec
        rec, blocks, capped = _guard(rec, event, decision.block, cap)
        out.update(blocks=blocks, capped=capped)
        return rec

    update_session(home, event.session_id, change)
    entry["loop"] = {"blocks_before": out.get("blocks", 0), "cap": cap, "capped": out.get("capped", False)}
    if out.get("capped"):
        return Decision(
            False,
            notice=(
                f"stoprule allowed this stop after {out['blocks']} consecutive blocks (loop cap {cap}); "
                f"the agent did not act on: {decision.message}"
            ),
        )
    return decision


def _log(home: str, log: bool | str, entry: dict[str, Any]) -> None:
    """Append the entry as one JSON line to the log (rotated once at 4 MiB); never raises."""
    if log is False:
        return
    path = log if isinstance(log, str) else os.path.join(home, LOG_FILE)
    try:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        try:
            if os.path.getsize(path) > LOG_MAX_BYTES:
                os.replace(path, path + ".1")
        except OSError:
            pass
        line = json.dumps(entry, ensure_ascii=False, default=str) + "\n"
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode("utf-8"))
        finally:
            os.close(fd)
    except OSError as exc:
        sys.stderr.write(f"stoprule hook: cannot write the log {path}: {exc}\n")
