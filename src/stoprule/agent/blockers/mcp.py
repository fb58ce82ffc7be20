"""``stoprule mcp``: the blocker tools over MCP stdio, built on the official ``mcp`` SDK (2.x).

Imported only by ``stoprule mcp`` (the SDK costs the CLI's cold start). The tools are
thin: each calls :class:`~.service.BlockerService` and returns its text; a call the
agent must fix comes back as a tool error (``is_error``) with the reason. Category
lists in the tool descriptions come from the pack at start-up.

Session: every tool takes an optional ``session``; without it, ``$STOPRULE_SESSION``
(set it in the harness's MCP config), else ``default``.

Every request is answered: each line of the raw JSON-RPC is cleaned before the SDK parses it
(:func:`clean_line`: a lone surrogate becomes U+FFFD, a NUL is dropped), so text the SDK's
parser would refuse (and then leave unanswered, the session hanging) reaches the tool; an
argument the tool refuses is named by field and kind, never by value (it may hold a secret).
"""

from __future__ import annotations

import io
import json
import sys
from typing import Annotated, Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.stdio import stdio_server
from pydantic import BaseModel, Strict, ValidationError

from stoprule._util.redact import redact
from stoprule.agent.blockers.service import BlockerService, LedgerRecorder, Reply, open_service
from stoprule.agent.hook.remote import attach_mirror
from stoprule.language.source import format_path
from stoprule.language.spec import validation_messages
from stoprule.version import __version__

__all__ = ["build_server", "serve"]

INSTRUCTIONS = """\
When you hit a question or a permission you would otherwise stop for, do not stop:
call `blocker`. Hard categories need the user: log them (blocksProgress true if the
current task cannot go on) and switch to other work. Soft categories: research the
options, pick one, log it with chosenOption and chosenReasoning, and continue.
Near your turn limit, file a `blocked_report`. Declare status, errors and turns with
`report_status`. `blockers_list` shows what is open."""


# Every argument's description, by tool (published in each tool's input schema).
DESCRIPTIONS: dict[str, dict[str, str]] = {
    "blocker": {
        "category": "The blocker's category: a hard one needs the user, a soft one you decide yourself.",
        "question": "The question or permission you would ask the user, in one sentence.",
        "context": "What you were doing and why this came up.",
        "blocksProgress": "True if the current task cannot go on without an answer; false if you can continue "
        "or switch to other work.",
        "options": "For a soft blocker: the options you researched (about three).",
        "chosenOption": "For a soft blocker: the option you chose (required for soft categories).",
        "chosenReasoning": "For a soft blocker: why you chose it.",
        "task": "The task this blocker is about (default: the task in progress); it is not offered as the next task "
        "while the blocker is open.",
        "session": "The session id; leave it out (stoprule knows the session it runs in).",
    },
    "report_status": {
        "status": "Overall state of the task: implemented, partial, blocked or failed.",
        "errors": "Structured errors, each {type: a blocker category, message}.",
        "turn": "Your current turn.",
        "max_turns": "Your turn budget.",
        "closure_state": "How your reply closes: one of the policy's closure states (a legal closure "
        "ends the push to other work).",
        "task_id": "The task being worked on.",
        "available_tasks": "Tasks still to do (the next one first).",
        "session": "The session id; leave it out (stoprule knows the session it runs in).",
    },
    "blocked_report": {
        "blocking_issues": "What blocks the task: each {issue, category, details, location?}.",
        "attempts_made": "What you tried: each {turn, action, result, why_failed?}.",
        "suggested_alternatives": "Ways forward a human could take.",
        "human_action_required": "What the human must do.",
        "task_id": "The task the report is for (default: the declared task_id).",
        "turn": "Your current turn (default: the declared turn).",
        "max_turns": "Your turn budget (default: the declared max_turns).",
        "session": "The session id; leave it out (stoprule knows the session it runs in).",
    },
    "blockers_list": {
        "session": "The session id; leave it out (stoprule knows the session it runs in).",
        "all_sessions": "List the blockers of every session, not only this one.",
    },
}


def _polish(schema: dict[str, Any], descriptions: dict[str, str], enums: dict[str, list[str]]) -> None:
    """Give every property its description (and enum), and drop the generated titles."""
    schema.pop("title", None)
    for name, prop in (schema.get("properties") or {}).items():
        prop.pop("title", None)
        if name in descriptions:
            prop["description"] = descriptions[name]
        if name in enums:
            prop["enum"] = list(enums[name])
            prop.pop("anyOf", None)
            prop["type"] = "string"


def _answer(reply: Reply) -> str:
    if not reply.ok:
        raise ToolError(reply.text)
    return reply.text


StrictBool = Annotated[bool, Strict()]  # "yes" is not true: a wrong type is the agent's to fix


def _clean_text(text: str) -> str:
    return "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in text if c != "\x00")


def _clean(value: Any) -> Any:
    if isinstance(value, str):
        return _clean_text(value)
    if isinstance(value, list):
        return [_clean(v) for v in value]
    if isinstance(value, dict):
        return {_clean_text(str(k)): _clean(v) for k, v in value.items()}
    return value


def clean_line(line: str) -> str:
    """One raw JSON-RPC line with every string safe for the SDK's parser: lone surrogates (written
    as ``\\udXXX`` escapes) become U+FFFD, NULs are dropped; a line that is not JSON is left as it is."""
    if "\\u" not in line and "\x00" not in line:
        return line
    try:
        obj = json.loads(line)
    except ValueError:
        return line.replace("\x00", "")
    return json.dumps(_clean(obj), ensure_ascii=False) + "\n"


class _CleanStdin:
    """The server's stdin as cleaned lines (:func:`clean_line`), for the SDK's stdio transport."""

    def __init__(self) -> None:
        self._file = anyio.wrap_file(io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace"))

    def __aiter__(self) -> _CleanStdin:
        return self

    async def __anext__(self) -> str:
        line = await self._file.readline()
        if not line:
            raise StopAsyncIteration
        return clean_line(line)


def _kind_only(value: Any) -> Any:
    """A stand-in for a rejected value that tells its kind and nothing of it (null, true and false stay)."""
    if value is None or isinstance(value, bool):
        return value
    kind = (
        "number"
        if isinstance(value, (int, float))
        else "string"
        if isinstance(value, str)
        else "list"
        if isinstance(value, list)
        else "mapping"
        if isinstance(value, dict)
        else "value"
    )
    return type(kind, (), {})()


class _Server(MCPServer):
    """The SDK's server, but tool arguments that fail validation are reported in stoprule's
    words (never pydantic's text or links), naming fields and problems without echoing the
    rejected values (they may hold secrets), and every tool error text is redacted."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except UnexpectedToolError:
            raise
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError):
                errors = [{**e, "input": _kind_only(e.get("input"))} for e in cause.errors()]  # values never echoed
                parts = [
                    f"{format_path(loc)}: {msg}" for loc, _, msg in validation_messages(BaseModel, arguments, errors)
                ]
                raise ToolError(redact(f"Error executing tool {name}: " + "; ".join(parts))) from None
            raise ToolError(redact(str(exc))) from None


def build_server(service: BlockerService) -> MCPServer:
    hard, soft = service.categories()
    server: MCPServer = _Server(name="stoprule", version=__version__, instructions=INSTRUCTIONS)

    @server.tool(
        name="blocker",
        description=(
            "Log a blocker instead of stopping, then continue with other work. "
            f"category: hard (needs the user): {', '.join(hard)}; soft (decide yourself, pass options, "
            f"chosenOption, chosenReasoning): {', '.join(soft) or '(none)'}. "
            "Returns where it was logged and the next available tasks."
        ),
    )
    def blocker(
        category: str,
        question: str,
        context: str,
        blocksProgress: StrictBool,  # noqa: N803 - the blocker tool's field names
        options: list[str] | None = None,
        chosenOption: str | None = None,  # noqa: N803
        chosenReasoning: str | None = None,  # noqa: N803
        task: str | None = None,
        session: str | None = None,
    ) -> str:
        return _answer(
            service.log_blocker(
                session,
                {
                    "category": category,
                    "question": question,
                    "context": context,
                    "blocksProgress": blocksProgress,
                    "options": options,
                    "chosenOption": chosenOption,
                    "chosenReasoning": chosenReasoning,
                    "task": task,
                },
            )
        )

    @server.tool(
        name="report_status",
        description=(
            "Declare this session's status (implemented|partial|blocked|failed), errors (each {type: a blocker "
            "category, message}), turn and max_turns, closure_state, task_id and available_tasks. The stop check "
            "reads them. Returns what a stop would be decided now."
        ),
    )
    def report_status(
        status: str | None = None,
        errors: list[dict[str, Any]] | None = None,
        turn: int | None = None,
        max_turns: int | None = None,
        closure_state: str | None = None,
        task_id: str | None = None,
        available_tasks: list[str] | None = None,
        session: str | None = None,
    ) -> str:
        return _answer(
            service.report_status(
                session,
                {
                    "status": status,
                    "errors": errors,
                    "turn": turn,
                    "max_turns": max_turns,
                    "closure_state": closure_state,
                    "task_id": task_id,
                    "available_tasks": available_tasks,
                },
            )
        )

    @server.tool(
        name="blocked_report",
        description=(
            "File the blocked report when turn >= max_turns - 2 and the task cannot be completed: "
            "blocking_issues (each {issue, category, details, location?}), attempts_made (each {turn, action, "
            "result, why_failed?}), suggested_alternatives (strings), human_action_required (what the human must "
            "do). The policy judges it; a wrong section or category comes back as an error naming it."
        ),
    )
    def blocked_report(
        blocking_issues: list[dict[str, Any]] | None = None,
        attempts_made: list[dict[str, Any]] | None = None,
        suggested_alternatives: list[str] | None = None,
        human_action_required: str | None = None,
        task_id: str | None = None,
        turn: int | None = None,
        max_turns: int | None = None,
        session: str | None = None,
    ) -> str:
        args: dict[str, Any] = {
            "blocking_issues": blocking_issues, "attempts_made": attempts_made,
            "suggested_alternatives": suggested_alternatives, "human_action_required": human_action_required,
            "task_id": task_id,
        }  # fmt: skip
        if turn is not None:
            args["turn"] = turn
        if max_turns is not None:
            args["max_turns"] = max_turns
        return _answer(service.file_report(session, args))

    @server.tool(name="blockers_list", description="Open and resolved blockers of this session (or of all sessions).")
    def blockers_list(session: str | None = None, all_sessions: StrictBool = False) -> str:
        return _answer(service.list_blockers(session, every=all_sessions))

    for name, descriptions in DESCRIPTIONS.items():
        tool = server._tool_manager.get_tool(name)
        if tool is not None:
            _polish(tool.parameters, descriptions, {"category": [*hard, *soft]} if name == "blocker" else {})
    return server


def serve(
    project: str | None = None,
    policy: str | None = None,
    recorder: LedgerRecorder | None = None,
    server: str | None = None,
) -> None:
    """Run the server on stdin/stdout until the client closes it (blockers and reports also go to the
    team server that ``server`` or the config's ``server:`` section names)."""
    service = open_service(project, policy=policy, recorder=recorder)

    attach_mirror(service, server)
    app = build_server(service)

    async def run() -> None:
        async with stdio_server(stdin=_CleanStdin()) as (read, write):  # type: ignore[arg-type]
            low = app._lowlevel_server
            await low.run(read, write, low.create_initialization_options())

    anyio.run(run)
