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

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

import sys
import time

from stoprule._util import oslite as os
from stoprule._util.jsonout import dumps
from stoprule._util.redact import redact, redact_obj
from stoprule._util.text import clean, clean_obj
from stoprule.agent.hook.adapters import adapter, decode_payload
from stoprule.agent.hook.event import MAX_PAYLOAD_BYTES, Decision, HookEvent
from stoprule.config.defaults import DEFAULT_HOOK, PROVIDER_ORDER
from stoprule.config.reader import default_settings, settings_for
from stoprule.diagnostics import AgentError
from stoprule.project import CONFIG_FILE, find_project

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

    from stoprule.config.reader import Settings
    from stoprule.engine.evaluator import Evaluator, Verdict

__all__ = [
    "MAX_PAYLOAD_BYTES",
    "HookResult",
    "decision_of",
    "name_attempts",
    "run_hook",
    "state_home",
    "user_state_dir",
]

LOG_FILE = "hook.log"
LOG_MAX_BYTES = 4 << 20


class BudgetSpent(AgentError):
    """The hook's time budget (``hook.budget_ms``) ran out."""


class HookResult:
    """``output``: what to print (None: nothing); ``entry``: the log entry (also what
    ``--explain-facts`` prints); ``settings``: the settings the stop was decided with."""

    __slots__ = ("decision", "entry", "output", "settings")

    def __init__(
        self, output: dict[str, Any] | None, decision: Decision, entry: dict[str, Any], settings: Settings
    ) -> None:
        self.output, self.decision, self.entry, self.settings = output, decision, entry, settings


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


def continued_by(event: HookEvent, guard: dict[str, Any]) -> str | None:
    """Who continued the session into this stop, as far as the harness shows it: ``stoprule``
    (its last answer in this turn was a block), ``another stop hook`` (the harness says a stop
    hook continued it, stoprule had allowed: Claude Code's and Codex's ``/goal``, or a
    user's own hook), None (a fresh turn, or nothing to tell)."""
    if not event.stop_hook_active or _fresh_turn(event, guard) or "last" not in guard:
        return None
    return "stoprule" if guard.get("last") == "block" else "another stop hook"


def _guard(rec: dict[str, Any], event: HookEvent, block: bool, cap: int) -> tuple[dict[str, Any], int, bool]:
    """Apply the loop guard to the session record: (new record, blocks so far, capped). A
    continuation by another stop hook (``/goal``) counts against the same budget: one loop
    budget for every engine that keeps the session going."""
    guard: dict[str, Any] = rec["guard"] if isinstance(rec.get("guard"), dict) else {}
    blocks = 0 if _fresh_turn(event, guard) else int(guard.get("blocks", 0))
    if guard.get("last") == "allow" and not event.stop_hook_active:
        blocks = 0  # stoprule allowed the last stop and no hook continued since: a new series
    if continued_by(event, guard) == "another stop hook":
        blocks += 1
    if event.loop_count is not None:
        blocks = max(blocks, event.loop_count)
    capped = block and blocks >= cap
    # an allow ends the series, except that a turn id keeps it for another hook's continuation
    new_blocks = blocks + 1 if block and not capped else (blocks if event.turn_id is not None and not capped else 0)
    last = "block" if block and not capped else "allow"
    rec = dict(rec, guard={"turn": event.turn_id, "blocks": new_blocks, "last": last, "at": round(time.time(), 3)})
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
    """For a config that does not load: was ``fail: closed`` meant? Read as text, in any
    style (block or flow YAML, JSON); a file that cannot be read safely counts as not."""
    import re

    if path is None:
        return False
    try:
        from stoprule._util.files import read_bounded

        text = read_bounded(path, 1 << 20).decode("utf-8", "replace")
    except OSError:
        return False
    return re.search(r"""(?m)^[^#\n]*?\bfail['"]?[ \t]*:[ \t]*['"]?closed\b""", text) is not None


def _stateless_guard(event: HookEvent, decision: Decision, cap: int, entry: dict[str, Any], why: str) -> Decision:
    """The loop guard when the session record cannot be written: a block stands unless the
    harness says this stop already follows a block (its counter past ``cap``, or its
    stop-hook-active flag), so an unwritable ``.stoprule/`` neither allows a block nor loops."""
    entry["state_error"] = why[:1000]
    if event.loop_count is not None:
        repeat = event.loop_count >= cap
    else:
        repeat = bool(event.flag_known and event.stop_hook_active)
    entry["loop"] = {"blocks_before": None, "cap": cap, "capped": decision.block and repeat, "stateless": True}
    if decision.block and repeat:
        return Decision(
            False,
            notice=f"stoprule allowed this stop: the session state cannot be written "
            f"({why[:200]}) and this stop already follows a block; the agent did not act on: "
            f"{decision.message}",
        )
    return decision


def run_hook(
    harness: str,
    event_name: str | None,
    data: bytes,
    *,
    cwd: str | None = None,
    env: Mapping[str, str] | None = None,
    policy: str | None = None,
    record: Callable[[str, str, Evaluator, dict[str, Any], Verdict, Settings], dict[str, str]] | None = None,
    server: str | None = None,
    via: str | None = None,
) -> HookResult:
    """Decide one stop. ``record(ledger_dir, run, evaluator, fact, verdict, settings)`` records the
    decision (when the ledger is on) and returns what to log about it. With a server (``server`` URL, or the
    config's ``server:`` section) the facts are gathered here and the server decides.
    Never raises: every failure goes through one error path that honours ``fail: open|closed``
    and is logged. ``via``: what ran it, when not a process of its own (logged: ``resident``)."""
    t0 = time.monotonic()
    env = os.environ if env is None else env
    mod = adapter(harness)
    entry: dict[str, Any] = {"ts": round(time.time(), 3), "harness": harness}
    if via:
        entry["via"] = via
    st = _Stop(harness, event_name)
    disarm = _alarm(DEFAULT_HOOK["budget_ms"] / 1000.0)  # armed before anything is read
    try:
        decision = _decide(st, mod, data, entry, cwd, env, policy, t0, server)
    except BaseException as exc:  # noqa: BLE001 - the one error path: the hook never fails the harness
        if isinstance(exc, (KeyboardInterrupt, SystemExit)) and not isinstance(exc, BudgetSpent):
            disarm()
            raise
        decision = _failed(st, exc, entry)
    finally:
        disarm()
        st.disarm()
        if st.git_early:  # what git started early and no provider collected (a stop that failed first) ends
            from stoprule.agent.hook.providers.git_provider import discard_early

            discard_early()
    entry["decision"] = {"block": decision.block, "message": decision.message, "notice": decision.notice}
    ledger = st.settings.hook.get("ledger") and st.project is not None and st.evaluator is not None
    if record is not None and ledger and st.fact is not None and st.verdict is not None:
        try:
            run = redact(clean(st.event.session_id or f"{harness}-unknown-session"))  # the run id is stored
            entry.update(record(st.project, run, st.evaluator, st.fact, st.verdict, st.settings))  # type: ignore[arg-type]
        except Exception as exc:  # noqa: BLE001 - a ledger problem is logged, the decision stands
            entry["ledger_error"] = f"{type(exc).__name__}: {exc}"
    entry["ms"] = round((time.monotonic() - t0) * 1000, 2)
    try:
        output = mod.render(decision, st.event)
    except Exception as exc:  # noqa: BLE001
        entry["render_error"] = f"{type(exc).__name__}: {exc}"
        output = {}
    safe = _safe_entry(entry)
    _log(st.home, st.settings.hook.get("log", True), safe)
    return HookResult(output, decision, safe, st.settings)


class _Stop:
    """What one stop has learnt so far (read by the error path)."""

    def __init__(self, harness: str, event_name: str | None) -> None:
        self.harness = harness
        self.event = HookEvent(harness=harness, event=event_name or "stop")
        self.event_name = event_name
        self.settings = default_settings()
        self.project: str | None = None
        self.home = ""
        self.fail_closed = False
        self.evaluator: Evaluator | None = None
        self.fact: dict[str, Any] | None = None
        self.verdict: Verdict | None = None  # the evaluator's (not a server's)
        self.disarm: Callable[[], None] = lambda: None
        self.nested: str | None = None  # a .stoprule/ below the project root (the agent's), ignored
        self.frozen: dict[str, Any] | None = None  # the session's frozen record
        self.git_early = False  # the git provider's command was started before the providers ran


def _decide(
    st: _Stop,
    mod: Any,
    data: bytes,
    entry: dict[str, Any],
    cwd: str | None,
    env: Mapping[str, str],
    policy: str | None,
    t0: float,
    server: str | None,
) -> Decision:
    st.home = user_state_dir(env)
    payload_error: BaseException | None = None
    try:
        if len(data) > MAX_PAYLOAD_BYTES:
            from stoprule.agent.hook.event import PayloadError

            raise PayloadError(f"stdin holds more than {MAX_PAYLOAD_BYTES} bytes: not parsed")
        payload = decode_payload(data)
        st.event = mod.parse(payload, st.event_name)
    except Exception as exc:  # noqa: BLE001 - raised below, once the fail policy is known
        payload_error = exc
        payload = None
    event = st.event
    entry.update(event=event.event, session=event.session_id, turn=event.turn_id)
    workdir = event.cwd if event.cwd and os.path.isdir(event.cwd) else (cwd or os.getcwd())
    from stoprule.agent.hook.frozen import anchor

    root = anchor(st.harness, env)  # the harness's own project dir: a .stoprule/ the agent made below is not it
    st.project, st.home = state_home(root or workdir, env)
    nested = find_project(workdir) if root else None
    st.nested = nested if nested is not None and nested != st.project else None
    if root is not None:  # the providers look at the project (its repository), wherever the agent cd'd
        workdir = os.path.dirname(st.project) if st.project else root
    entry["project"] = st.project
    cfg_path = os.path.join(st.project, CONFIG_FILE) if st.project else None
    try:
        st.settings = settings_for(st.project, event.session_id)
    except Exception:
        st.fail_closed = _peek_fail_closed(cfg_path)
        raise
    hook = st.settings.hook
    st.fail_closed = hook["fail"] == "closed"
    if payload_error is not None:
        raise payload_error
    from stoprule.agent.hook.state import StateError, read_session

    notes: list[str] = []
    try:
        rec = read_session(st.home, event.session_id, notes)
    except StateError as exc:  # unreadable: decide without it (the guard then goes stateless)
        rec = {}
        notes.append(str(exc))
    if notes:
        entry["state_notes"] = notes
    if "git" in st.settings.providers.get("enabled", PROVIDER_ORDER):  # git runs while the pack loads
        from stoprule.agent.hook.providers.git_provider import start_status

        st.git_early = True
        start_status(workdir, rec)
    remaining = hook["budget_ms"] / 1000.0 - (time.monotonic() - t0)
    if remaining <= 0:
        raise BudgetSpent(f"time budget of {hook['budget_ms']} ms spent before evaluation")
    st.disarm = _alarm(remaining)
    remote = None
    if server or st.settings.server.get("url") or env.get("STOPRULE_SERVER"):
        from stoprule.agent.hook.remote import Remote

        remote = Remote.configured(st.settings.server, server, env, remaining)
    from stoprule.engine.packs import load_policy, pack_path

    selected = pack_path(policy, env, workdir)
    frozen_pack = _frozen_session(st, event, env, rec, workdir, selected, explicit=policy is not None)
    if frozen_pack is not None:
        selected = frozen_pack
    if remote is None:
        entry["pack"] = selected
        st.evaluator = load_policy(selected)
    else:
        entry["pack"] = remote.url
    from stoprule.agent.hook.providers import Context, gather

    ctx = Context(st.project, st.home, workdir, st.settings.providers, rec, st.settings.blockers)
    ctx.pack = selected  # the pack's data (triage patterns) for the providers
    ctx.frozen = st.frozen
    ctx.env, ctx.mode_setting = env, (st.settings.session or {}).get("mode")  # the session mode
    st.fact, prov = gather(event, ctx)
    entry["fact"] = st.fact
    entry["provenance"] = prov.to_dict()
    if remote is None:
        assert st.evaluator is not None
        verdict = st.verdict = st.evaluator.evaluate(st.fact, strict=hook["strict"])
    else:
        from stoprule.engine.verdict import Verdict

        recorded = st.settings.server.get("record", True)
        run = (event.session_id or f"{st.harness}-unknown-session") if recorded else None
        answer = remote.hook(st.harness, payload or {}, st.fact, event.event, run)
        verdict = Verdict.from_dict(answer["verdict"])
        entry["server"] = {"url": remote.url, "policy": answer.get("policy"), "node": answer["verdict"].get("node")}
    st.disarm()
    entry["verdict"] = {k: v for k, v in verdict.to_dict().items() if k != "matched"}
    decision = decision_of(verdict)
    observe = hook["mode"] == "observe"
    entry["mode"] = hook["mode"]
    decision = _apply_guard(st.home, event, decision, hook["loop_cap"], entry, ctx.session, observe)
    if observe:
        entry["would"] = "block" if decision.block else "allow"
        decision = Decision(False, notice=None if decision.block else decision.notice)
    seen = _what_the_gate_saw(st.fact, prov, st.settings.providers.get("fields", {}))
    if seen and not decision.block:  # a declaration may end in review, never hide what the gate saw
        decision = Decision(False, decision.message, f"{decision.notice}\n{seen}" if decision.notice else seen)
    if ctx.new_attempts:
        entry["attempts_named"] = len(ctx.new_attempts)
        decision = name_attempts(decision, ctx.new_attempts)
    return decision


def _what_the_gate_saw(fact: dict[str, Any], prov: Any, fields: Mapping[str, str | None]) -> str | None:
    """For a stop that is allowed: the work the gate observed (uncommitted files, open tasks, open
    blockers) and the declarations it ignored over an observation, in one line (None: nothing)."""
    parts: list[str] = []
    files, tasks = fields.get("git.files"), fields.get("transcript.available_tasks")
    blockers = fields.get("blockers.openBlockers")
    if files and fact.get(fields.get("git.dirty") or "") is True:
        listed = fact.get(files)
        shown: list[Any] = listed if isinstance(listed, list) else []
        count = fact.get(fields.get("git.count") or "")
        more = f"; {count} in all" if isinstance(count, int) and count > len(shown) else ""
        parts.append(f"uncommitted work ({', '.join(map(str, shown)) or 'files'}{more})")
    if tasks and isinstance(fact.get(tasks), list) and fact[tasks]:
        parts.append(f"open tasks ({', '.join(map(str, fact[tasks][:5]))})")
    if blockers and isinstance(fact.get(blockers), list) and fact[blockers]:
        questions = [str(b.get("question")) for b in fact[blockers] if isinstance(b, dict)][:5]
        parts.append(f"open blockers ({'; '.join(questions)})")
    ignored = [c for c in prov.conflicts if c.get("declared")]
    if ignored:
        parts.append(
            "declarations ignored over what was observed: "
            + ", ".join(
                f"{c['field']}={dumps(c['ignored']['value'])[:60]} ({c['kept']['provider']} saw "
                f"{dumps(c['kept']['value'])[:60]})"
                for c in ignored[:5]
            )
        )
    return ("stoprule: the gate saw " + "; ".join(parts)) if parts else None


def name_attempts(decision: Decision, attempts: list[str]) -> Decision:
    """The decision with the agent's refused attempts named: to the user (the notice, shown where
    the harness has a user channel) and, on a block, to the agent (its instruction says so too)."""
    shown = "; ".join(attempts[:5]) + (f"; and {len(attempts) - 5} more" if len(attempts) > 5 else "")
    text = (
        f"stoprule refused {len(attempts)} attempt(s) by the agent to change stoprule's settings, state or "
        f"the harness's hooks since the last stop: {shown}"
    )
    notice = f"{decision.notice}\n{text}" if decision.notice else text
    message = (
        f"{decision.message}\n\n({text}. The user is told.)"
        if decision.block and decision.message
        else decision.message
    )
    return Decision(decision.block, message, notice)


def _frozen_session(
    st: _Stop, event: HookEvent, env: Mapping[str, str], rec: dict[str, Any], workdir: str, pack: str, *, explicit: bool
) -> str | None:
    """Freeze the session at its first stop when its start did not (:mod:`stoprule.agent.hook.frozen`),
    else journal what changed since, once each; the frozen pack copy to decide with (None: the
    selected one, ``--policy`` given or no copy)."""
    from stoprule.agent.hook import frozen as fz

    if not event.session_id:
        return None
    record = fz.load(st.home, event.session_id)
    gone = None
    if record is None:
        gone = fz.lost(st.home, event.session_id, rec)
        root = os.path.dirname(st.project) if st.project else workdir
        record = fz.freeze(st.project, st.home, event.session_id, root, pack, env)
        fz.save(st.home, event.session_id, record, first=gone is None)
        record = fz.load(st.home, event.session_id) or record  # another process may have frozen it first
    st.frozen = record
    copy = fz.pack_of(record, st.home)
    new = fz.changes(record, st.project, env, st.nested, pack, copy is not None)
    if gone is not None:
        new.insert(
            0,
            (
                "frozen-lost",
                f"the session's frozen record was removed or damaged mid-session ({gone}): it was made "
                "again from stoprule's files as they are now, so review what changed in .stoprule/",
            ),
        )
    frozen_pack = record.get("pack")
    restamped = isinstance(frozen_pack, dict) and frozen_pack.pop(fz.RESTAMPED, False)
    if new or restamped:  # what was named (each change once); the pack's stamps taken again
        fz.save(st.home, event.session_id, record)
    if new:
        from stoprule.agent.guard.journal import record_attempt

        for _, what in new:
            record_attempt(st.home, event.session_id, {"via": "stop", "kind": "changed", "what": what})
    return None if explicit else copy


def _failed(st: _Stop, exc: BaseException, entry: dict[str, Any]) -> Decision:
    """The one error path: log what went wrong; ``fail: closed`` blocks (loop-guarded), open allows."""
    try:
        what = f"{type(exc).__name__}: {exc}".strip()
        if hasattr(exc, "render") and callable(exc.render):
            what = f"{type(exc).__name__}: {exc.render()}"
    except Exception:  # noqa: BLE001 - an exception whose text cannot be made
        what = type(exc).__name__
    what = redact(clean(what))
    entry["error"] = what[:4000]
    entry["fail"] = "closed" if st.fail_closed else "open"
    hook = st.settings.hook
    if not st.fail_closed:
        first = (what.splitlines() or [""])[0][:300]
        return Decision(False, notice=f"stoprule could not decide, so this stop is allowed (fail open): {first}")
    decision = Decision(True, hook["closed_message"])
    try:
        return _apply_guard(st.home, st.event, decision, hook["loop_cap"], entry, None, False)
    except BaseException as exc2:  # noqa: BLE001 - even the guard failing keeps the stop blocked once
        return _stateless_guard(st.event, decision, hook["loop_cap"], entry, f"{type(exc2).__name__}: {exc2}")


def _safe_entry(entry: dict[str, Any]) -> dict[str, Any]:
    """The log entry as it may be written: strings normalised (no lone surrogate, no control
    character) and redacted."""
    try:
        safe: dict[str, Any] = redact_obj(clean_obj(entry))
        return safe
    except Exception as exc:  # noqa: BLE001
        return {
            "ts": entry.get("ts"),
            "harness": entry.get("harness"),
            "decision": entry.get("decision"),
            "log_error": f"{type(exc).__name__}",
        }


def decision_of(verdict: Verdict) -> Decision:
    """What a verdict tells the harness, before the loop guard and observe mode."""
    if verdict.stop == "block":
        return Decision(True, verdict.message)
    if verdict.requires_user_review:
        return Decision(False, notice=f"stoprule: user review needed: {verdict.review_reason}")
    if not verdict.ok:
        return Decision(False, notice=f"stoprule: {verdict.verdict} ({verdict.reason}): {verdict.message}")
    return Decision(False)


def _apply_guard(
    home: str,
    event: HookEvent,
    decision: Decision,
    cap: int,
    entry: dict[str, Any],
    session: dict[str, Any] | None,
    observe: bool,
) -> Decision:
    """Count consecutive blocks for the session and turn; past ``cap`` the stop is allowed.
    When the record cannot be written, :func:`_stateless_guard` decides."""
    from stoprule.agent.hook.state import StateError, update_session

    out: dict[str, Any] = {}

    def change(rec: dict[str, Any]) -> dict[str, Any]:
        if session is not None:  # providers' updates (transcript position)
            rec = {**rec, **{k: v for k, v in session.items() if k != "guard"}}
        if observe:
            return rec
        by = continued_by(event, rec["guard"] if isinstance(rec.get("guard"), dict) else {})
        rec, blocks, capped = _guard(rec, event, decision.block, cap)
        out.update(blocks=blocks, capped=capped, by=by)
        return rec

    try:
        update_session(home, event.session_id, change)
    except (StateError, OSError) as exc:
        return decision if observe else _stateless_guard(event, decision, cap, entry, str(exc))
    entry["loop"] = {"blocks_before": out.get("blocks", 0), "cap": cap, "capped": out.get("capped", False)}
    if out.get("by"):
        entry["loop"]["continued_by"] = out["by"]
    if out.get("capped"):
        return Decision(
            False,
            notice=(
                f"stoprule allowed this stop after {out['blocks']} consecutive blocks (loop cap {cap}); "
                f"the agent did not act on: {decision.message}"
            ),
        )
    return decision


def _file_size_limit() -> int | None:
    """The process's soft limit on the size of a file it writes (None: unlimited or unknown): from
    Linux's ``/proc/self/limits`` (``resource`` is a shared library to load: the cold start), else
    from ``resource``."""
    try:
        with open("/proc/self/limits", "rb") as fh:
            for line in fh:
                if line.startswith(b"Max file size "):
                    word = line[len(b"Max file size ") :].split()[0]
                    return None if word == b"unlimited" else int(word)
    except (OSError, ValueError, IndexError):
        pass
    try:
        import resource
    except ImportError:  # POSIX only
        return None
    soft = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    return None if soft == resource.RLIM_INFINITY or soft < 0 else soft


def _log(home: str, log: bool | str, entry: dict[str, Any]) -> None:
    """Append the entry as one JSON line to the log (rotated once at 4 MiB); never raises.

    The line goes out in one ``O_APPEND`` write, so concurrent hooks never interleave. A line
    that would pass the process's file-size limit is not written; a short write (a disk
    filling up meanwhile) is reported on stderr and its fragment ended by a newline, never
    cut back: other processes may have appended after it."""
    if log is False:
        return
    path = log if isinstance(log, str) else os.path.join(home, LOG_FILE)
    try:
        line = dumps(entry, ensure_ascii=False, default=str) + "\n"
        data = line.encode("utf-8", "backslashreplace")
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        try:
            if os.path.getsize(path) > LOG_MAX_BYTES:
                os.replace(path, path + ".1")
        except OSError:
            pass
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            limit = _file_size_limit()
            if limit is not None and os.fstat(fd).st_size + len(data) > limit:
                raise OSError(f"the line ({len(data)} bytes) would pass the file-size limit ({limit} bytes)")
            written = os.write(fd, data)
            if written != len(data):
                if written > 0:
                    try:  # noqa: SIM105 - contextlib costs the cold start ~1 ms
                        os.write(fd, b"\n")  # the next line starts on its own
                    except OSError:
                        pass
                raise OSError(f"short write ({written} of {len(data)} bytes): the line is incomplete")
        finally:
            os.close(fd)
    except Exception as exc:  # noqa: BLE001 - a log problem never changes the decision
        try:  # noqa: SIM105 - contextlib costs the cold start ~1 ms
            sys.stderr.write(f"stoprule hook: cannot write the log {path}: {exc}\n")
        except Exception:  # noqa: BLE001, S110 - stderr may be gone too
            pass
