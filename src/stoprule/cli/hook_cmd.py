"""``stoprule hook HARNESS``: stoprule as an agent harness's stop hook.

Reads the harness's stop payload on stdin, prints exactly the JSON that harness expects
(or nothing, where that means allow), always exits 0. Diagnostics: one line on stderr and
a JSON line in the log (``.stoprule/hook.log``). See ``docs/agents.md``.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

import sys

from stoprule._util import oslite as os
from stoprule._util.jsonout import dumps

__all__ = ["add_arguments", "parse_simple", "run"]

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from types import SimpleNamespace
    from typing import IO, Any

    from stoprule.config.reader import Settings
    from stoprule.engine.evaluator import Evaluator, Verdict

HARNESSES = ("claude-code", "codex", "gemini", "cursor", "copilot", "opencode", "antigravity")
EVENTS = ("stop", "subagent-stop", "task-completed", "session-start", "permission", "prompt")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Decide a stop for an agent harness: its payload on stdin, its answer on stdout; always exits 0. "
        "Settings: .stoprule/config.yaml (found upward). See docs/agents.md."
    )
    p.add_argument("harness", choices=HARNESSES, metavar="HARNESS", help=" | ".join(HARNESSES))
    p.add_argument(
        "--event",
        choices=EVENTS,
        help="default: from the payload, else stop; session-start: record the session's baseline and answer with "
        "the triage instructions; task-completed: the same policy gates the agent marking a task done "
        "(stopEvent: task-completed); permission: deny a permission request with the triage (hook.permission_triage); "
        "prompt: the user's typed /blockers on|off|status|list|export, for this session",
    )
    p.add_argument(
        "--policy", metavar="PATH", help="policy pack (default: $STOPRULE_POLICY, .stoprule/policies/, bundled)"
    )
    p.add_argument("--server", metavar="URL", help="ask this stoprule server (default: config's server.url)")
    p.add_argument(
        "--explain-facts",
        action="store_true",
        help="print the fact and which provider set each field (JSON) on stderr; stdout is unchanged",
    )


def parse_simple(argv: list[str]) -> SimpleNamespace | None:
    """``HARNESS`` alone, as harness configs run the hook: what argparse would parse, without
    importing it (the hook's cold start); None for any other command line."""
    if len(argv) != 1 or argv[0] not in HARNESSES:
        return None
    namespace: Any = type(sys.implementation)  # types.SimpleNamespace, without importing types (the cold start)
    args: SimpleNamespace = namespace(
        command="hook", harness=argv[0], event=None, policy=None, explain_facts=False, server=None
    )
    return args


def record(
    project: str, run: str, evaluator: Evaluator, fact: dict[str, Any], verdict: Verdict, settings: Settings
) -> dict[str, str]:
    """Record the decision as a node of run ``run`` (the session) in the project's ledger:
    ``$STOPRULE_LEDGER``, else the config's ``ledger.url`` (``settings``: the config's, as the hook
    read it), else ``<project>/ledger.db``. A stop after a retryable block is recorded as that
    block's retry (``Recorder.record_stop``). A ledger file gets it through its journal (one line,
    one sync: :mod:`stoprule.ledger.journal`, which records it so when it folds it in), folded in by
    the next command that opens it; a PostgreSQL ledger directly. Returns what to log."""
    from stoprule.cli.common import ledger_target

    path, default = ledger_target(None, start=os.path.dirname(project), settings=settings)
    if "://" in path:  # a PostgreSQL URL: the backend (and psycopg) load only then, off the warm hook's path
        from stoprule.ledger.backend import open_ledger
        from stoprule.ledger.recorder import Recorder

        with open_ledger(path, create=True) as ledger:
            return {"ledger_node": str(Recorder(ledger, evaluator).record_stop(run, fact).node.node)}
    from stoprule._util.redact import redact_obj
    from stoprule.ledger import journal

    if default:  # a .stoprule/ made by hand gets its .gitignore before the ledger and its keys
        from stoprule.project import ensure_state_dir

        try:  # noqa: SIM105 - contextlib (with collections, functools) costs the cold start ~2 ms
            ensure_state_dir(project)
        except OSError:  # a read-only project: the journal's own error, if any, says more
            pass

    kind, retryable = journal.decision_kind(verdict, evaluator)
    target = os.path.join(project, "ledger.db") if default else path
    at = journal.append(target, run, redact_obj(fact), redact_obj(verdict.to_dict()), kind=kind, retryable=retryable)
    return {"ledger_journal": at}


def _lifecycle(args: argparse.Namespace | SimpleNamespace, data: bytes, stdout: IO[str], stderr: IO[str]) -> int:
    """``--event session-start`` / ``permission``: their answers (:mod:`stoprule.agent.hook.lifecycle`)."""
    try:
        from stoprule.agent.hook import lifecycle

        fn = lifecycle.run_session_start if args.event == "session-start" else lifecycle.run_permission
        output = fn(args.harness, data, policy=args.policy)
    except Exception as exc:  # noqa: BLE001 - never a traceback, always exit 0
        stderr.write(f"stoprule hook: internal error ({args.event}): {type(exc).__name__}: {exc}\n")
        output = None
    if output is not None:
        stdout.write(dumps(output, ensure_ascii=False) + "\n")
    return 0


def run(args: argparse.Namespace | SimpleNamespace, stdin: IO[bytes], stdout: IO[str], stderr: IO[str]) -> int:
    from stoprule.agent.hook.runner import MAX_PAYLOAD_BYTES

    try:
        data = stdin.read(MAX_PAYLOAD_BYTES + 1)  # more is refused unparsed (the fail policy decides)
    except (OSError, ValueError):
        data = b""
    if args.event in ("session-start", "permission"):
        return _lifecycle(args, data, stdout, stderr)
    if args.event == "prompt":
        from stoprule.agent.hook.controls import run_prompt

        answer = run_prompt(args.harness, data)
        if answer is None and args.harness == "gemini":
            answer = {}
        if answer is not None:
            stdout.write(dumps(answer, ensure_ascii=False) + "\n")
        return 0
    from stoprule._util.gcpause import paused_gc

    try:
        with paused_gc():  # one stop makes little cyclic garbage: no collections (~1 ms of the cold start)
            from stoprule.agent.hook.runner import run_hook
            from stoprule.cli import resident

            via = "resident" if resident.SERVING else None
            result = run_hook(
                args.harness, args.event, data, policy=args.policy, record=record, server=args.server, via=via
            )
        output, entry, decision = result.output, result.entry, result.decision
    except Exception as exc:  # noqa: BLE001 - last line of defence: never a traceback, always exit 0
        stderr.write(f"stoprule hook: internal error, the stop is allowed: {type(exc).__name__}: {exc}\n")
        stdout.write("{}\n" if args.harness in ("gemini", "cursor", "copilot", "antigravity") else "")
        return 0
    if output is not None:
        stdout.write(dumps(output, ensure_ascii=False) + "\n")
    what = "block" if decision.block else "allow"
    v = entry.get("verdict") or {}
    because = f"{v.get('verdict')}/{v.get('reason')}" if v else f"error ({entry.get('fail', 'open')})"
    stderr.write(
        f"stoprule hook: {args.harness}: {what} ({because}); pack {entry.get('pack', '?')}; "
        f"state {entry.get('project') or 'none (user state dir)'}\n"
    )
    if entry.get("error"):
        stderr.write(f"stoprule hook: {entry['error'].splitlines()[0]}\n")
    if decision.notice and not (output or {}).get("systemMessage"):  # no user channel (Copilot, Cursor): stderr
        stderr.write(f"stoprule hook: {decision.notice}\n")
    if args.explain_facts:
        explain = {k: entry.get(k) for k in ("fact", "provenance", "verdict", "loop", "decision")}
        stderr.write(dumps(explain, indent=2, ensure_ascii=False, default=str) + "\n")
    resident.start(result.settings)  # with ``hook.resident: true``, the next stops are decided warm
    return 0
