"""The blocker operations the MCP server and the CLI share: validate, redact, store, answer.

Each operation returns a :class:`Reply`: ``ok`` (False = the agent must fix its call),
``text`` for the agent or person, and ``data`` (JSON) for scripts. Everything a
caller passes is redacted (:mod:`.redact`) before it is validated, stored, recorded
in the ledger, rendered, or echoed back.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from stoprule._util.hints import closest
from stoprule._util.redact import redact, redact_obj
from stoprule._util.text import clean, clean_obj
from stoprule.agent.blockers.facts import DEFAULT_SESSION, bind_task, blockers_facts
from stoprule.agent.blockers.procs import linked_session
from stoprule.agent.blockers.reports import check_report, check_task_id, save_report
from stoprule.agent.blockers.session import declare_session_facts, read_session_facts
from stoprule.agent.blockers.store import Blocker, BlockerStore, StoreWriteError, render_markdown
from stoprule.agent.hook.state import StateError, read_session
from stoprule.config.fields import FIELDS, REPORT_SECTIONS
from stoprule.config.loader import load_config
from stoprule.config.sections import BlockerSettings
from stoprule.diagnostics import ConfigError, EvaluationError, StopruleError
from stoprule.engine.evaluator import Evaluator
from stoprule.engine.packs import load_policy, select_pack
from stoprule.project import STATE_DIR, ensure_state_dir, project_root

__all__ = ["DEFAULT_SESSION", "BlockerService", "LedgerRecorder", "Reply", "open_service", "session_id"]


@dataclass(frozen=True)
class Reply:
    ok: bool
    text: str
    data: dict[str, Any] = field(default_factory=dict)


def session_id(explicit: str | None = None) -> str:
    """The session: ``explicit``, else ``$STOPRULE_SESSION``, else ``default`` (normalised and
    redacted: it is written into the record, ``blockers.md`` and the ledger)."""
    raw = explicit or os.environ.get("STOPRULE_SESSION") or DEFAULT_SESSION
    return redact(" ".join(clean(str(raw)).split())[:200]) or DEFAULT_SESSION


def _inbound(args: dict[str, Any]) -> dict[str, Any]:
    """A caller's arguments as they may be stored: every string normalised (no NUL, control
    character or lone surrogate) and redacted."""
    out: dict[str, Any] = redact_obj(clean_obj(args))
    return out


def open_service(
    start: str | None = None, policy: str | None = None, recorder: LedgerRecorder | None = None
) -> BlockerService:
    """The service of the project found upward from ``start`` (a ``.stoprule/`` is created in
    ``start`` when none exists). Raises :class:`ConfigError` for a bad config."""
    root = project_root(start)
    if root is None:
        root = os.path.abspath(start or os.getcwd())
        ensure_state_dir(os.path.join(root, STATE_DIR))
    return BlockerService(root, policy=policy, recorder=recorder)


def _str(value: Any) -> bool:
    return isinstance(value, str)


# (service, session, fact) -> None: records one decision in the ledger (supplied by the CLI)
LedgerRecorder = Callable[["BlockerService", str, dict[str, Any]], None]


class BlockerService:
    def __init__(self, project_dir: str, policy: str | None = None, recorder: LedgerRecorder | None = None) -> None:
        self.project_dir = os.path.abspath(project_dir)
        self.config_file = os.path.join(self.project_dir, STATE_DIR, "config.yaml")
        self.settings: BlockerSettings = load_config(self.config_file, sections=("blockers",))["blockers"]
        self.store = BlockerStore(self.project_dir, self.settings, self.config_file)
        self.policy = policy
        self._evaluator: Evaluator | None = None
        self.pending: list[dict[str, Any]] = []  # blockers kept in the session state after a failed write
        self.recorder = recorder
        # (service, "blocker" | "report", item) -> None: copies them to a team server (set by the CLI)
        self.mirror: Callable[[BlockerService, str, dict[str, Any]], None] | None = None

    def session_of(self, explicit: str | None = None) -> str:
        """The session a call belongs to: ``explicit``, else ``$STOPRULE_SESSION``, else the session
        the harness process running this server linked at session start (:mod:`.procs`), else
        ``default``."""
        if explicit or os.environ.get("STOPRULE_SESSION"):
            return session_id(explicit)

        link = linked_session(os.path.join(self.project_dir, STATE_DIR))
        return link["session"] if link else DEFAULT_SESSION

    # ------------------------------------------------------------ pack

    @property
    def evaluator(self) -> Evaluator:
        if self._evaluator is None:
            self._evaluator = load_policy(select_pack(self.policy, cwd=self.project_dir))
        return self._evaluator

    def categories(self) -> tuple[list[str], list[str]]:
        """``(hard, soft)``: the pack's blocker categories (soft class plus the config's soft_categories)."""
        sets = self.evaluator.compiled.sets
        soft = list(dict.fromkeys([*sets.get("blocker_categories.soft", ()), *self.settings.soft_categories]))
        hard = [c for c in sets.get("blocker_categories", ()) if c not in soft]
        return hard, soft

    # ------------------------------------------------------------ blocker

    def log_blocker(self, session: str | None, args: dict[str, Any]) -> Reply:
        """The ``blocker`` tool: log a blocker of the session."""
        session = self.session_of(session)
        args = _inbound(args)
        problem = self._check_blocker(args)
        if problem:
            return Reply(False, problem, {"error": problem})
        if not self.store.enabled(session):
            where = "this session (the user's /blockers off)" if self.store.enabled() else "this project"
            return Reply(
                True,
                f"Blocker logging is off for {where}; nothing was logged. Decide yourself, or ask the "
                "user directly and stop: a question to the user is not pushed back while it is off.",
                {"status": "disabled"},
            )
        hard, soft = self.categories()
        entry = {
            "session": session,
            "category": args["category"],
            "soft": args["category"] in soft,
            "question": args["question"],
            "context": args.get("context") or "",
            "blocks_progress": bool(args["blocksProgress"]),
            "options": list(args.get("options") or []),
            "chosen_option": args.get("chosenOption"),
            "chosen_reasoning": args.get("chosenReasoning"),
        }
        retried = self._flush_pending()
        try:
            result = self.store.add(**entry)
        except StoreWriteError as exc:
            self.pending.append(entry)
            text = (
                f"⚠ Could not write the blockers file ({exc}). The blocker is kept in the session state "
                f"and will be retried on the next blocker call ({len(self.pending)} pending). "
                "Nothing was half-written."
            )
            return Reply(
                True,
                text + self._next_tasks_text(session, entry),
                {"status": "pending", "pending": len(self.pending), "error": str(exc)},
            )
        where = os.path.relpath(self.store.markdown_path, self.project_dir)
        if result.status == "limit":
            text = (
                f"Not logged: this session has reached the limit of {self.settings.max_per_run} blockers per run "
                "(blockers.max_per_run in .stoprule/config.yaml). Work on what is not blocked, or stop and "
                "summarise the open blockers for the user."
            )
            return Reply(True, text, {"status": "limit", "count": result.count})
        b = result.blocker
        assert b is not None
        task = args.get("task") if _str(args.get("task")) and args["task"].strip() else self._current_task(session)
        if task and result.status == "logged":
            bind_task(self.project_dir, b.id, task)
        entry["task"] = task
        if result.status == "duplicate":
            text = f"Already logged as {b.id} within the last {self.settings.cooldown_seconds:g} s; not written twice."
        else:
            kind = (
                "soft: your choice is recorded"
                if b.soft
                else ("hard, blocks progress" if b.blocksProgress else "hard, does not block progress")
            )
            text = f"✓ Blocker logged to {where} as {b.id} ({kind})."
            if result.render_error:
                text += f" (The record holds it; {where} will be rewritten on the next change: {result.render_error}.)"
            self._record_ledger(session)
            if self.mirror is not None:
                self.mirror(self, "blocker", b.to_dict())
        if retried:
            text += f" {retried} earlier pending blocker(s) were written too."
        data = {"status": result.status, "id": b.id, "file": where, "blocker": b.to_dict(),
                "next_tasks": self._next_tasks(session)}  # fmt: skip
        return Reply(True, text + self._next_tasks_text(session, entry), data)

    def _check_blocker(self, args: dict[str, Any]) -> str | None:
        hard, soft = self.categories()
        cat = args.get("category")
        if not _str(cat) or cat not in (*hard, *soft):
            best = closest(str(cat), (*hard, *soft)) if _str(cat) else None
            meant = f" Did you mean {best!r}?" if best else ""
            return (
                f"category {cat!r} is not a blocker category of this pack.{meant} Hard (needs the user): "
                f"{', '.join(hard)}. Soft (decide yourself and log the choice): {', '.join(soft) or '(none)'}."
            )
        if not _str(args.get("question")) or not args["question"].strip():
            return "question is required: the question or permission you would ask the user, in one sentence."
        if "context" in args and args["context"] is not None and not _str(args["context"]):
            return "context must be a string."
        if not isinstance(args.get("blocksProgress"), bool):
            return (
                "blocksProgress is required (true or false): true if you cannot continue this task without "
                "an answer, false if you can switch to other work."
            )
        opts = args.get("options")
        if opts is not None and (not isinstance(opts, list) or not all(_str(o) for o in opts)):
            return "options must be a list of strings."
        for key in ("chosenOption", "chosenReasoning", "task"):
            if args.get(key) is not None and not _str(args[key]):
                return f"{key} must be a string."
        if cat in soft and not (args.get("chosenOption") or "").strip():
            return (
                f"category {cat!r} is soft: research the options, pick one, and pass chosenOption (with options "
                "and chosenReasoning); then continue with your choice."
            )
        if opts and args.get("chosenOption") is not None and args["chosenOption"] not in opts:
            return (
                f"chosenOption {args['chosenOption']!r} is not one of the options ({', '.join(map(repr, opts))}): "
                "pass the option you chose, exactly as listed."
            )
        return None

    def _flush_pending(self) -> int:
        done = 0
        while self.pending:
            try:
                self.store.add(**self.pending[0])
            except StoreWriteError:
                break
            self.pending.pop(0)
            done += 1
        return done

    def _session_tasks(self, session: str) -> list[dict[str, Any]]:
        """The task list the hook sees for the session: the transcript's (kept in the hook's
        session record at each stop), else none."""
        try:
            rec = read_session(os.path.join(self.project_dir, STATE_DIR), session)
        except (StateError, OSError):
            return []
        scan = (rec.get("transcript") or {}).get("scan") or {}
        tasks = scan.get("tasks") if isinstance(scan, dict) else None
        return [t for t in tasks if isinstance(t, dict)] if isinstance(tasks, list) else []

    def _current_task(self, session: str) -> str | None:
        """The task in progress: the transcript's, else the declared ``currentTask``/``task_id``."""
        for t in self._session_tasks(session):
            if t.get("status") == "in_progress" and isinstance(t.get("title"), str):
                return str(t["title"])
        facts = read_session_facts(self.project_dir, session)
        for key in ("currentTask", FIELDS["task_id"]):
            if isinstance(facts.get(key), str) and facts[key]:
                return str(facts[key])
        return None

    def _next_tasks(self, session: str) -> list[str]:
        """The tasks the hook would offer next: declared ``availableTasks``, then the transcript's
        open tasks, never one an open progress-blocking blocker is about."""
        declared = read_session_facts(self.project_dir, session).get(FIELDS["available_tasks"]) or []
        tasks = [str(t) for t in declared] if isinstance(declared, list) else []
        tasks += [
            str(t["title"])
            for t in self._session_tasks(session)
            if t.get("status") in ("pending", "in_progress") and isinstance(t.get("title"), str)
        ]
        blocked = set(blockers_facts(self.project_dir, session, self.settings).get("blockedTasks", []))
        return [t for t in dict.fromkeys(tasks) if t not in blocked]

    def _next_tasks_text(self, session: str, entry: dict[str, Any]) -> str:
        if entry["soft"]:
            return " Continue with your choice."
        tasks = [t for t in self._next_tasks(session) if not (entry["blocks_progress"] and t == entry.get("task"))]
        if tasks:
            listed = "\n".join(f"{i}. {t}" for i, t in enumerate(tasks, 1))
            return f"\nNext available tasks:\n{listed}\nSwitch to the first one that does not depend on this blocker."
        if entry["blocks_progress"]:
            return (
                "\nNo other task is known. Continue with any work not blocked by this; if every remaining task "
                "is blocked, stop and summarise the open blockers in your stop message."
            )
        return " Continue with the current task."

    def _record_ledger(self, session: str, extra: dict[str, Any] | None = None) -> None:
        """With ``ledger: true``, hand the fact the stop check would now see to ``recorder``
        (run = session). The recorder comes from the CLI layer (only the CLI knows the ledger)."""
        if not self.settings.ledger or self.recorder is None:
            return
        fact = {**read_session_facts(self.project_dir, session),
                **blockers_facts(self.project_dir, session, self.settings), **(extra or {})}  # fmt: skip
        try:
            self.recorder(self, session, redact_obj(fact))
        except (StopruleError, OSError):
            return  # the ledger is a record of decisions, not a precondition of logging

    # ------------------------------------------------------------ report_status

    def report_status(self, session: str | None, args: dict[str, Any]) -> Reply:
        """Declare the session's status, errors, turn/max_turns, closure state (the `state` provider)."""
        session = self.session_of(session)
        args = _inbound({k: v for k, v in args.items() if v is not None})
        unknown = sorted(set(args) - set(FIELDS))
        if unknown:
            return Reply(False, f"unknown field(s): {', '.join(unknown)}", {"error": "unknown fields"})
        fields = {FIELDS[k]: v for k, v in args.items()}
        merged = {**read_session_facts(self.project_dir, session), **fields}
        try:
            verdict = self.evaluator.evaluate({**merged, **blockers_facts(self.project_dir, session, self.settings)})
        except EvaluationError as exc:
            return Reply(False, f"not declared: {exc}", {"error": str(exc)})
        try:
            declared = declare_session_facts(self.project_dir, session, fields)
        except OSError as exc:
            return Reply(False, f"could not write the session state: {exc.strerror or exc}", {"error": str(exc)})
        text = (
            f"Declared for session {session}: {', '.join(sorted(fields)) or '(nothing)'}. A stop now would be "
            f"{verdict.verdict}/{verdict.reason} (stop: {verdict.stop}): {verdict.message}"
        )
        return Reply(True, text, {"session": session, "facts": declared, "verdict": verdict.to_dict()})

    # ------------------------------------------------------------ blocked_report

    def file_report(self, session: str | None, args: dict[str, Any]) -> Reply:
        """The blocked report: judged by the pack; a valid one saved per task."""
        session = self.session_of(session)
        args = _inbound(args)
        state = read_session_facts(self.project_dir, session)
        task = args.get("task_id") or state.get(FIELDS["task_id"])
        if not task:
            return Reply(False, "task_id is required (or declare it with report_status).", {"error": "no task"})
        bad = check_task_id(str(task))
        if bad:
            return Reply(False, bad, {"error": bad})
        report = {k: args[k] for k in REPORT_SECTIONS if k in args and args[k] is not None}
        turn = args.get("turn", state.get(FIELDS["turn"]))
        max_turns = args.get("max_turns", state.get(FIELDS["max_turns"]))
        turn = turn if isinstance(turn, int) and not isinstance(turn, bool) else None
        max_turns = max_turns if isinstance(max_turns, int) and not isinstance(max_turns, bool) else None
        check = check_report(self.evaluator, report, turn, max_turns)
        if not check.ok:
            lines = [f"- {p.text()} (rule {p.rule})" for p in check.problems]
            text = "The blocked report was not saved; fix it and file it again:\n" + "\n".join(lines)
            return Reply(False, text, {"problems": [p.to_dict() for p in check.problems]})
        meta = {"task_id": task, "session": session, "turn": turn, "max_turns": max_turns,
                "filed_at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}  # fmt: skip
        try:
            path = save_report(self.project_dir, str(task), report, meta)
        except OSError as exc:
            return Reply(False, f"could not save the report: {exc.strerror or exc}; retry.", {"error": str(exc)})
        rel = os.path.relpath(path, self.project_dir)
        self._record_ledger(session, {FIELDS["blocked_report"]: report})
        if self.mirror is not None:
            self.mirror(self, "report", {**meta, "report": report})
        return Reply(
            True,
            f"✓ Blocked report for task {task} saved to {rel}; the user will see it with "
            f"`stoprule report show {task}`.",
            {"task_id": task, "file": rel},
        )

    # ------------------------------------------------------------ resolve (a user action)

    def resolve(self, blocker_id: str, note: str | None = None) -> Blocker | None:
        """Mark an open blocker resolved: the user's action (``stoprule blockers resolve``, the console),
        never the agent's. The note is redacted; the record gets a ``resolve`` line, ``blockers.md`` is
        rewritten and the team server (``mirror``) told. None if no blocker has that id; raises
        :class:`StoreWriteError` if the record cannot be written."""
        hit = self.store.resolve(blocker_id, redact(clean(note)) if note else None)
        if hit is not None and self.mirror is not None:
            self.mirror(self, "blocker", hit.to_dict())
        return hit

    def export(self, fmt: str = "json") -> str:
        """Every blocker of the current record: NDJSON (``json``) or ``blockers.md`` (``md``)."""
        items = self.store.blockers()
        if fmt == "md":
            return render_markdown(items)
        return "".join(json.dumps(b.to_dict(), ensure_ascii=False) + "\n" for b in items)

    # ------------------------------------------------------------ listing

    def list_blockers(self, session: str | None = None, every: bool = False) -> Reply:
        session = self.session_of(session)
        items: list[Blocker] = self.store.blockers()
        if not every:
            items = [b for b in items if b.session in (session, DEFAULT_SESSION)]
        open_ = [b.to_dict() for b in items if b.open]
        resolved = [b.to_dict() for b in items if not b.open]
        lines = [f"Open blockers ({len(open_)}):"]
        lines += [
            f"  [ ] {b['id']} [{b['category']}] {b['question']}" + (" (blocks progress)" if b["blocksProgress"] else "")
            for b in open_
        ]
        lines.append(f"Resolved blockers ({len(resolved)}):")
        lines += [
            f"  [x] {b['id']} [{b['category']}] {b['question']}"
            + (f" → {b['chosenOption']}" if b.get("chosenOption") else "")
            for b in resolved
        ]
        scope = "all sessions" if every else session
        return Reply(True, "\n".join(lines), {"session": scope, "open": open_, "resolved": resolved})


def config_error_text(exc: ConfigError) -> str:
    return exc.render() if hasattr(exc, "render") else str(exc)


def redact_text(text: str) -> str:
    return redact(text)
