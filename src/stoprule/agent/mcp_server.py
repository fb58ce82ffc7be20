"""``stoprule mcp``: the blocker tools over MCP stdio, built on the official ``mcp`` SDK (2.x).

Imported only by ``stoprule mcp`` (the SDK costs the CLI's cold start). The tools are
thin: each calls :class:`~.service.BlockerService` and returns its text; a call the
agent must fix comes back as a tool error (``is_error``) with the reason. Category
lists in the tool descriptions come from the pack at start-up.

Session: every tool takes an optional ``session``; without it, ``$STOPRULE_SESSION``
(set it in the harness's MCP config), else ``default``.
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel

from stoprule.agent.blocker_service import BlockerService, LedgerRecorder, Reply, open_service
from stoprule.version import __version__

__all__ = ["build_server", "serve"]

INSTRUCTIONS = """\
When you hit a question or a permission you would otherwise stop for, do not stop:
call `blocker`. Hard categories need the user: log them (blocksProgress true if the
current task cannot go on) and switch to other work. Soft categories: research the
options, pick one, log it with chosenOption and chosenReasoning, and continue.
Near your turn limit, file a `blocked_report`. Declare status, errors and turns with
`report_status`. `blockers_list` shows what is open."""


def _answer(reply: Reply) -> str:
    if not reply.ok:
        raise ToolError(reply.text)
    return reply.text


class _Server(MCPServer):
    """The SDK's server, with tool arguments that fail validation reported in stoprule's words
    (the SDK would pass on pydantic's text, links to its documentation included)."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            from pydantic import ValidationError

            cause = exc.__cause__
            if not isinstance(cause, ValidationError):
                raise
            from stoprule.language.source import format_path
            from stoprule.language.spec import validation_messages

            parts = [f"{format_path(loc)}: {msg}" for loc, _, msg in validation_messages(BaseModel, arguments,
                                                                                         cause.errors())]
            raise ToolError(f"Error executing tool {name}: " + "; ".join(parts)) from None


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
        blocksProgress: bool,  # noqa: N803 - seed 003's field names
        options: list[str] | None = None,
        chosenOption: str | None = None,  # noqa: N803
        chosenReasoning: str | None = None,  # noqa: N803
        session: str | None = None,
    ) -> str:
        return _answer(service.log_blocker(session, {
            "category": category, "question": question, "context": context, "blocksProgress": blocksProgress,
            "options": options, "chosenOption": chosenOption, "chosenReasoning": chosenReasoning,
        }))  # fmt: skip

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
        return _answer(service.report_status(session, {
            "status": status, "errors": errors, "turn": turn, "max_turns": max_turns,
            "closure_state": closure_state, "task_id": task_id, "available_tasks": available_tasks,
        }))  # fmt: skip

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
    def blockers_list(session: str | None = None, all_sessions: bool = False) -> str:
        return _answer(service.list_blockers(session, every=all_sessions))

    return server


def serve(project: str | None = None, policy: str | None = None, recorder: LedgerRecorder | None = None) -> None:
    """Run the server on stdin/stdout until the client closes it."""
    service = open_service(project, policy=policy, recorder=recorder)
    build_server(service).run("stdio")
