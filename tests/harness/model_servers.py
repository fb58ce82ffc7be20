"""Scripted stand-ins for the model APIs the real harnesses speak, on 127.0.0.1 only.

A :class:`Script` is a list of model turns (:class:`Turn`: text and tool calls) played in
order, one per *main* request (a request offering tools: the agent's conversation); side
requests (titles, classifiers, quota checks) get a short fixed answer and do not consume
a turn. When the script runs out, ``default`` is played again and again. Every request is
recorded, so a test asserts on what the harness sent back to the model (a block's reason
arrives as the next request's content).

APIs (each streams SSE when the request asks for it, as the harnesses do):

- Anthropic Messages: ``POST /v1/messages`` (+ ``/v1/messages/count_tokens``) — Claude Code.
- OpenAI Responses: ``POST /v1/responses`` — Codex.
- OpenAI Chat Completions: ``POST /v1/chat/completions`` — OpenCode (OpenAI-compatible
  provider), Copilot (its own provider setting).
- Gemini: ``POST /v1beta/models/M:streamGenerateContent`` and ``:generateContent`` — Gemini CLI.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["Call", "Script", "Turn", "serve"]

_ids = itertools.count(1)


@dataclass
class Call:
    """One tool call: the tool's name as the harness offers it, and its arguments."""

    name: str
    args: dict[str, Any]
    id: str = field(default_factory=lambda: f"call_{next(_ids):04d}")
    namespace: str | None = None  # Responses API: a tool inside a namespace (Codex's MCP servers)


@dataclass
class Turn:
    text: str = ""
    calls: list[Call] = field(default_factory=list)


@dataclass
class Request:
    path: str
    body: dict[str, Any]
    main: bool
    turn: Turn | None  # what was answered (main requests)
    at: float = field(default_factory=time.time)

    @property
    def text(self) -> str:
        return json.dumps(self.body, ensure_ascii=False)

    def last_input(self) -> list[str]:
        """What the harness sent last (the newest message of the conversation), as short texts."""
        b = self.body
        convo = [m for m in b.get("messages") or [] if isinstance(m, dict) and m.get("role") != "system"]
        if convo:  # Anthropic, Chat Completions (Claude Code appends a system-role message: not the conversation)
            last = convo[-1]
            content = last.get("content")
            blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
            out = []
            for blk in blocks:
                if not isinstance(blk, dict):
                    continue
                if blk.get("type") == "tool_result" or last.get("role") == "tool":
                    c = blk.get("content") if blk.get("type") == "tool_result" else blk.get("text")
                    out.append(f"[tool result] {_flat(c)}")
                elif blk.get("type") == "text" and isinstance(blk.get("text"), str):
                    out.append(blk["text"])
            texts = [t for t in out if not t.startswith("[tool result]")]
            return [t for t in out if t.startswith("[tool result]")] + texts[-1:]  # the newest text block
        if isinstance(b.get("input"), list) and b["input"]:  # Responses
            item = b["input"][-1]
            if item.get("type") == "function_call_output":
                return [f"[tool result] {_flat(item.get('output'))}"]
            return [_flat(c.get("text")) for c in item.get("content") or [] if isinstance(c, dict)]
        if isinstance(b.get("contents"), list) and b["contents"]:  # Gemini
            out = []
            for part in b["contents"][-1].get("parts") or []:
                if "functionResponse" in part:
                    out.append(f"[tool result] {_flat(part['functionResponse'].get('response'))}")
                elif isinstance(part.get("text"), str):
                    out.append(part["text"])
            return out
        return []


class Script:
    """The model: plays ``turns`` in order on main requests, then ``default`` forever."""

    def __init__(
        self,
        turns: list[Turn],
        default: Turn | None = None,
        is_main: Callable[[str, dict[str, Any]], bool] | None = None,
    ) -> None:
        self.turns = list(turns)
        self.default = default or Turn("Done.")
        self.is_main = is_main or _offers_tools
        self.requests: list[Request] = []
        self.lock = threading.Lock()

    def answer(self, path: str, body: dict[str, Any]) -> Turn | None:
        main = self.is_main(path, body)
        with self.lock:
            turn = (self.turns.pop(0) if self.turns else self.default) if main else None
            self.requests.append(Request(path, body, main, turn))
        return turn

    @property
    def main(self) -> list[Request]:
        return [r for r in self.requests if r.main]

    def first_seeing(self, needle: str) -> int | None:
        """The index (among main requests) of the first one whose content holds ``needle``."""
        return next((i for i, r in enumerate(self.main) if needle in r.text), None)

    def exhausted(self) -> bool:
        return not self.turns


def _flat(value: Any) -> str:
    if isinstance(value, list):
        value = " ".join(_flat(v.get("text") if isinstance(v, dict) and "text" in v else v) for v in value)
    elif not isinstance(value, str):
        value = json.dumps(value, ensure_ascii=False)
    return value


def _offers_tools(path: str, body: dict[str, Any]) -> bool:
    tools = body.get("tools")
    if not tools:
        return False
    if isinstance(tools, list) and tools and isinstance(tools[0], dict) and "functionDeclarations" in tools[0]:
        return any(t.get("functionDeclarations") for t in tools)
    return True


# ------------------------------------------------------------------ wire formats


def _sse(event: str | None, data: dict[str, Any]) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data)}\n\n".encode()


def anthropic(turn: Turn, body: dict[str, Any]) -> Iterator[bytes]:
    model = body.get("model", "scripted")
    msg_id = f"msg_{next(_ids):04d}"
    yield _sse(
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": msg_id,
                "type": "message",
                "role": "assistant",
                "content": [],
                "model": model,
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": 10, "output_tokens": 1},
            },
        },
    )
    index = 0
    if turn.text:
        yield _sse(
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        )
        yield _sse(
            "content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": turn.text}},
        )
        yield _sse("content_block_stop", {"type": "content_block_stop", "index": 0})
        index = 1
    for call in turn.calls:
        yield _sse(
            "content_block_start",
            {
                "type": "content_block_start",
                "index": index,
                "content_block": {"type": "tool_use", "id": f"toolu_{call.id}", "name": call.name, "input": {}},
            },
        )
        yield _sse(
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "input_json_delta", "partial_json": json.dumps(call.args)},
            },
        )
        yield _sse("content_block_stop", {"type": "content_block_stop", "index": index})
        index += 1
    yield _sse(
        "message_delta",
        {
            "type": "message_delta",
            "usage": {"output_tokens": 5},
            "delta": {"stop_reason": "tool_use" if turn.calls else "end_turn", "stop_sequence": None},
        },
    )
    yield _sse("message_stop", {"type": "message_stop"})


def anthropic_json(turn: Turn, body: dict[str, Any]) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": turn.text}] if turn.text else []
    content += [{"type": "tool_use", "id": f"toolu_{c.id}", "name": c.name, "input": c.args} for c in turn.calls]
    return {
        "id": f"msg_{next(_ids):04d}",
        "type": "message",
        "role": "assistant",
        "content": content,
        "model": body.get("model", "scripted"),
        "stop_reason": "tool_use" if turn.calls else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


def responses(turn: Turn, body: dict[str, Any]) -> Iterator[bytes]:
    """OpenAI Responses streaming events (what Codex reads)."""
    rid = f"resp_{next(_ids):04d}"
    model = body.get("model", "scripted")
    base = {"id": rid, "object": "response", "model": model, "status": "in_progress", "output": []}
    yield _sse("response.created", {"type": "response.created", "response": base})
    output: list[dict[str, Any]] = []
    if turn.text:
        item = {"type": "message", "id": f"msg_{next(_ids):04d}", "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": turn.text, "annotations": []}]}  # fmt: skip
        yield _sse(
            "response.output_item.added",
            {"type": "response.output_item.added", "output_index": len(output), "item": dict(item, content=[])},
        )
        yield _sse(
            "response.output_text.delta",
            {
                "type": "response.output_text.delta",
                "item_id": item["id"],
                "output_index": len(output),
                "content_index": 0,
                "delta": turn.text,
            },
        )
        yield _sse(
            "response.output_item.done",
            {"type": "response.output_item.done", "output_index": len(output), "item": item},
        )
        output.append(item)
    for call in turn.calls:
        item = {"type": "function_call", "id": f"fc_{call.id}", "call_id": call.id, "name": call.name,
                "arguments": json.dumps(call.args), "status": "completed"}  # fmt: skip
        if call.namespace:
            item["namespace"] = call.namespace
        yield _sse(
            "response.output_item.added",
            {"type": "response.output_item.added", "output_index": len(output), "item": item},
        )
        yield _sse(
            "response.output_item.done",
            {"type": "response.output_item.done", "output_index": len(output), "item": item},
        )
        output.append(item)
    done = dict(base, status="completed", output=output,
                usage={"input_tokens": 10, "output_tokens": 5, "total_tokens": 15,
                       "input_tokens_details": {"cached_tokens": 0},
                       "output_tokens_details": {"reasoning_tokens": 0}})  # fmt: skip
    yield _sse("response.completed", {"type": "response.completed", "response": done})


def chat(turn: Turn, body: dict[str, Any]) -> Iterator[bytes]:
    """OpenAI Chat Completions streaming chunks."""
    cid = f"chatcmpl-{next(_ids):04d}"
    model = body.get("model", "scripted")

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        data = {"id": cid, "object": "chat.completion.chunk", "created": 0, "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}  # fmt: skip
        return f"data: {json.dumps(data)}\n\n".encode()

    yield chunk({"role": "assistant", "content": ""})
    if turn.text:
        yield chunk({"content": turn.text})
    for i, call in enumerate(turn.calls):
        yield chunk(
            {
                "tool_calls": [
                    {
                        "index": i,
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": json.dumps(call.args)},
                    }
                ]
            }
        )
    yield chunk({}, "tool_calls" if turn.calls else "stop")
    usage = {"id": cid, "object": "chat.completion.chunk", "created": 0, "model": model, "choices": [],
             "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}  # fmt: skip
    yield f"data: {json.dumps(usage)}\n\ndata: [DONE]\n\n".encode()


def gemini(turn: Turn, body: dict[str, Any]) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [{"text": turn.text}] if turn.text else []
    parts += [{"functionCall": {"name": c.name, "args": c.args, "id": c.id}} for c in turn.calls]
    return {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
        "modelVersion": "scripted",
    }


# ------------------------------------------------------------------ the server

_GEMINI = re.compile(r"^/v1(?:beta|alpha)?/models/([^/:]+):(\w+)")


def _handler(script: Script, side: Callable[[str, dict[str, Any]], Turn]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
            return

        def _json(self, obj: dict[str, Any], code: int = 200) -> None:
            data = json.dumps(obj).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _stream(self, chunks: Iterator[bytes]) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            for c in chunks:
                self.wfile.write(c)
                self.wfile.flush()
            self.close_connection = True

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            path = self.path.split("?")[0]
            script.requests.append(Request(path, {}, False, None))
            if path.endswith("/models"):
                self._json(
                    {
                        "object": "list",
                        "data": [{"id": "scripted", "object": "model", "created": 0, "owned_by": "tests"}],
                    }
                )
                return
            self._json({"error": {"message": f"not scripted: GET {path}"}}, 404)

        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            if self.headers.get("Content-Encoding") == "gzip":
                import gzip

                raw = gzip.decompress(raw)
            elif self.headers.get("Content-Encoding") == "zstd":
                self._json({"error": {"message": "zstd request bodies are not supported here"}}, 415)
                return
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = {"_raw": raw.decode("utf-8", "replace")}
            path = self.path.split("?")[0]
            if path.endswith("/count_tokens"):
                self._json({"input_tokens": 100})
                return
            m = _GEMINI.match(path)
            if m and m.group(2) == "countTokens":
                self._json({"totalTokens": 100})
                return
            turn = script.answer(path, body) or side(path, body)
            stream = body.get("stream") is True
            if path.endswith("/messages"):
                if stream:
                    self._stream(anthropic(turn, body))
                else:
                    self._json(anthropic_json(turn, body))
            elif path.endswith("/responses"):
                self._stream(responses(turn, body))
            elif path.endswith("/chat/completions"):
                if stream:
                    self._stream(chat(turn, body))
                else:
                    msg: dict[str, Any] = {"role": "assistant", "content": turn.text}
                    self._json(
                        {
                            "id": "chatcmpl-x",
                            "object": "chat.completion",
                            "created": 0,
                            "model": "scripted",
                            "choices": [{"index": 0, "message": msg, "finish_reason": "stop"}],
                            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                        }
                    )
            elif m and m.group(2) == "streamGenerateContent":
                self._stream(iter([f"data: {json.dumps(gemini(turn, body))}\r\n\r\n".encode()]))
            elif m and m.group(2) == "generateContent":
                self._json(gemini(turn, body))
            else:
                self._json({"error": {"message": f"not scripted: POST {path}"}}, 404)

    return Handler


def _side_answer(path: str, body: dict[str, Any]) -> Turn:
    return Turn("ok")


@contextmanager
def serve(script: Script, side: Callable[[str, dict[str, Any]], Turn] | None = None) -> Iterator[str]:
    """Serve ``script`` on 127.0.0.1 (a free port); yields the base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(script, side or _side_answer))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
