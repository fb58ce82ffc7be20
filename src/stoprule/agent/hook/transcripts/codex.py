"""Codex's rollout transcripts (JSONL; checked on 0.40.0 (VS Code), 0.50-0.53, 0.60.1, 0.77, 0.106,
0.146, 0.169, 0.171): turns by ``turn_context`` (or by prompt, where it has no ``turn_id``),
the ``update_plan`` list, failed commands and tool calls, the last assistant message, and
the session's mode its ``session_meta`` says (``codex exec``: autonomous).

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

from stoprule._util.jsonin import loads
from stoprule._util.jsonout import dumps
from stoprule.agent.hook.transcripts._common import EXIT, ScanState

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["read", "wanted"]

_WANTED = (b"turn_context", b"function_call", b"exec_command_end", b'"assistant"', b"session_meta", b'"user"')
# Codex user messages that are context the harness adds, not the user's prompt
_CONTEXT = (
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md",
    "<turn_aborted>",
    "<hook_prompt",
    "<user_shell_command>",
    "<permissions instructions>",
    "<collaboration_mode>",
)


def wanted(scan: ScanState, line: bytes) -> bool:
    """A compact line worth decoding: one that names a turn, a call, a command's end, a message or the session."""
    return any(k in line for k in _WANTED)


def read(scan: ScanState, obj: dict[str, Any]) -> None:
    kind, payload = obj.get("type"), obj.get("payload")
    if not isinstance(payload, dict):
        scan.skip("no payload")
        return
    ptype = payload.get("type")
    if kind == "session_meta":
        scan.version(payload.get("cli_version"))
        source = payload.get("source")
        if source == "exec":
            scan.mode_signal = ["autonomous", "Codex rollout session_meta source=exec (codex exec)"]
        elif isinstance(source, str) and source in ("cli", "vscode"):
            scan.mode_signal = ["interactive", f"Codex rollout session_meta source={source}"]
    elif kind == "turn_context":
        turn = payload.get("turn_id")
        counted, scan.prompt_turn = scan.prompt_turn, False
        if not isinstance(turn, str):  # Codex <= 0.6x: one per model request, not per prompt
            scan.legacy_turns = True
        elif turn != scan.last_turn:
            if not counted:  # (the prompt before the first turn_context began this turn)
                scan.turn()
            scan.last_turn = turn
    elif kind == "response_item":
        if ptype in ("function_call", "custom_tool_call") and isinstance(payload.get("call_id"), str):
            name = payload.get("name")
            ns = payload.get("namespace")
            if isinstance(name, str):
                scan.names[payload["call_id"]] = f"{ns}.{name}" if isinstance(ns, str) and ns else name
        if ptype in ("function_call_output", "custom_tool_call_output"):  # custom: apply_patch (0.5x+)
            _output(scan, payload)
        elif ptype == "function_call" and payload.get("name") == "update_plan":
            args = payload.get("arguments")
            try:
                parsed = loads(args) if isinstance(args, str) else args
            except ValueError:
                scan.skip("update_plan arguments not JSON")
                return
            if isinstance(parsed, dict):
                scan.set_tasks(parsed.get("plan"), "step", call_id=payload.get("call_id"))
        elif ptype == "message" and payload.get("role") == "user":
            parts = payload.get("content")
            texts = [p.get("text") for p in parts if isinstance(p, dict)] if isinstance(parts, list) else []
            text = "\n".join(t for t in texts if isinstance(t, str))
            if text.strip() and not text.lstrip().startswith(_CONTEXT):
                scan.prompt(text)
                if scan.legacy_turns:
                    scan.turn()
                elif scan.last_turn is None and not scan.prompt_turn:
                    # before any turn_context (the VS Code extension, 0.40, writes the prompt
                    # first): a turn; its turn_context, with or without a turn_id, is not another
                    scan.turn()
                    scan.prompt_turn = True
        elif ptype == "message" and payload.get("role") == "assistant":
            parts = payload.get("content")
            texts = [p.get("text") for p in parts if isinstance(p, dict)] if isinstance(parts, list) else []
            text = "\n".join(t for t in texts if isinstance(t, str))
            if text:
                scan.last_text = text
    elif kind == "event_msg":
        if ptype == "exec_command_end":
            code = payload.get("exit_code")
            if isinstance(code, int) and code != 0:
                cid = payload.get("call_id")
                name = scan.names.get(cid, "shell") if isinstance(cid, str) else "shell"
                scan.fail(name, payload.get("aggregated_output") or f"exit code {code}", cid)
    elif kind != "compacted":
        scan.skip(f"unknown line type {kind!r}")


def _output(scan: ScanState, payload: dict[str, Any]) -> None:
    """A tool's output: a failed command says ``Process exited with code N`` (or, in older
    versions, carries JSON with ``metadata.exit_code``)."""
    out, cid = payload.get("output"), payload.get("call_id")
    code: int | None = None
    text = out if isinstance(out, str) else dumps(out, ensure_ascii=False) if out is not None else ""
    if isinstance(out, str) and out.startswith("{"):
        try:
            parsed = loads(out)
        except ValueError:
            parsed = None
        meta = parsed.get("metadata") if isinstance(parsed, dict) else None
        if isinstance(meta, dict) and isinstance(meta.get("exit_code"), int):
            code = meta["exit_code"]
            text = parsed.get("output") if isinstance(parsed.get("output"), str) else text
    if code is None:
        m = EXIT.search(text)
        code = int(m.group(1)) if m else None
    if code is None and text.startswith(("unsupported call:", "apply_patch verification failed")):
        code = -1
    if code:
        name = scan.names.get(cid, "shell") if isinstance(cid, str) else "shell"
        scan.fail(name, _after_output(text), cid)


def _after_output(text: str) -> str:
    """The command's own output in a Codex tool result (after its ``Output:`` header)."""
    head, sep, rest = text.partition("\nOutput:\n")
    return rest if sep and rest.strip() else text
