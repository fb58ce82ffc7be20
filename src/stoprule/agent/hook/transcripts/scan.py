"""Reading a transcript from where the last stop left it: :func:`records`, :class:`Scan`,
:func:`scan_file`, :func:`detect` and :func:`observations`.

A :class:`Scan` consumes complete lines in order and keeps what the stop decision needs:
the number of user turns, the latest task list, the failed tool results of the current
turn and the last assistant text. Its state is a plain dict, so the hook keeps it per
session in ``.stoprule/state/`` and the next stop reads only the bytes written since
(:func:`scan_file`): the cost of a stop does not grow with the transcript. A transcript
first seen when it is already longer than ``max_scan`` bytes is read from its last
``tail`` bytes only; its turn count is then unknown (no ``turns``, and a note says why).
Each format's reader is a module of this package, imported when a scan of that format
first takes a record (a stop reads one harness's transcript).

Records are lines of JSONL, or pretty-printed objects spread over lines (:func:`records`);
compact lines are prefiltered on their bytes before being decoded (spaced JSON is decoded
whole, so the hook (prefiltered) and ``replay`` (every line) read the same). A record that
is not JSON, nested too deeply, of an unknown type, or incomplete (the last line without
its newline) is skipped with a note, never an error, and the read position always moves
past it. A transcript replaced in place (truncated and rewritten, or a new file on a
reused inode) is noticed by a fingerprint of its first bytes and of the bytes before the
read position, and read again from the start.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

import time

from stoprule._util import oslite as os
from stoprule._util.jsonin import loads
from stoprule._util.jsonout import dumps
from stoprule._util.native import crc32
from stoprule._util.regular import is_regular
from stoprule.agent.hook.transcripts._common import ScanState

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from types import ModuleType
    from typing import Any, BinaryIO

__all__ = ["FORMATS", "HARNESS_FORMAT", "Scan", "detect", "observations", "reader", "records", "scan_file"]

FORMATS = ("claude", "codex", "gemini", "copilot", "cursor", "antigravity")
# Copilot's and Cursor's formats are sniffed from the file (they are not documented)
HARNESS_FORMAT = {"claude-code": "claude", "codex": "codex", "gemini": "gemini", "antigravity": "antigravity"}
_OPEN = ("pending", "in_progress")


def reader(fmt: str) -> ModuleType | None:
    """The module reading ``fmt`` (``wanted(scan, line)``, ``read(scan, record)``); only that one
    is imported. None for a format no module reads."""
    if fmt == "claude":
        from stoprule.agent.hook.transcripts import claude

        return claude
    if fmt == "codex":
        from stoprule.agent.hook.transcripts import codex

        return codex
    if fmt == "gemini":
        from stoprule.agent.hook.transcripts import gemini

        return gemini
    if fmt == "copilot":
        from stoprule.agent.hook.transcripts import copilot

        return copilot
    if fmt == "cursor":
        from stoprule.agent.hook.transcripts import cursor

        return cursor
    if fmt == "antigravity":
        from stoprule.agent.hook.transcripts import antigravity

        return antigravity
    return None


class Scan(ScanState):
    """Incremental reader of one transcript format; ``state`` is JSON-serializable."""

    def __init__(self, fmt: str, state: dict[str, Any] | None = None, full: bool = False) -> None:
        super().__init__(fmt, state, full)
        self._reader: ModuleType | None = None  # the format's module, imported at the first record

    def feed(self, line: bytes) -> None:
        """Take one record (a JSONL line, or a pretty-printed object's lines). A record that
        cannot be decoded (not JSON, nested too deeply, not UTF-8) is skipped and counted."""
        module = self._reader or self._load()
        if not self.full and not self._wanted(line, module):
            return
        try:
            obj = loads(line)
        except RecursionError:
            self.skip("nested too deeply")
            return
        except ValueError:  # UnicodeDecodeError included
            self.skip("not JSON")
            return
        if isinstance(obj, list) and self.fmt == "gemini":  # a checkpoint or a /chat share export
            obj = {"history": obj}
        if not isinstance(obj, dict):
            self.skip("not a JSON object")
            return
        if module is None:  # a format no module reads
            self.skip("a record of an unexpected shape")
            return
        try:
            module.read(self, obj)
        except (RecursionError, TypeError, ValueError, KeyError, AttributeError, IndexError):
            self.skip("a record of an unexpected shape")

    def _load(self) -> ModuleType | None:
        self._reader = reader(self.fmt)
        return self._reader

    def _wanted(self, line: bytes, module: ModuleType | None) -> bool:
        if b'": ' in line or b'" :' in line or b"\n" in line.rstrip():
            return True  # spaced or pretty-printed JSON: the byte prefilter of the format assumes compact lines
        return module is None or bool(module.wanted(self, line))


def detect(path: str, harness: str | None = None) -> str | None:
    """The transcript's format: from the harness when it has one, else sniffed from its last line."""
    if harness in HARNESS_FORMAT:
        return HARNESS_FORMAT[harness]
    try:
        with open(path, "rb") as fh:
            fh.seek(max(0, os.fstat(fh.fileno()).st_size - 65536))
            lines = [ln for ln in fh.read().split(b"\n") if ln.strip()]
    except OSError:
        return None
    if lines and lines[-1].strip() in (b"}", b"]"):  # a pretty-printed document: Gemini CLI's .json chats, checkpoints
        try:
            with open(path, "rb") as fh:
                doc = loads(fh.read(MAX_RECORD_BYTES))
        except (OSError, ValueError):
            doc = None
        if isinstance(doc, dict) and isinstance(doc.get("messages") or doc.get("history"), list):
            return "gemini"
        if isinstance(doc, list) and doc and all(isinstance(d, dict) and "role" in d and "parts" in d for d in doc):
            return "gemini"
    for line in reversed(lines[-20:]):
        try:
            obj = loads(line)
        except ValueError:
            continue
        if not isinstance(obj, dict):
            continue
        if {"timestamp", "type", "payload"} <= obj.keys():
            return "codex"
        if {"step_index", "source", "type"} <= obj.keys():
            return "antigravity"
        if {"type", "data", "id"} <= obj.keys() and "." in str(obj.get("type")):
            return "copilot"
        if "role" in obj and "message" in obj and "type" not in obj:
            return "cursor"
        if "parentUuid" in obj or "sessionId" in obj and "message" in obj:
            return "claude"
        if obj.get("type") in ("user", "gemini", "info") and "content" in obj:
            return "gemini"
    return None


MAX_RECORD_BYTES = 8 << 20  # a pretty-printed record longer than this is skipped
_HEAD = 4096  # bytes fingerprinted at the start of the file, and before the read position


def records(data: bytes, base: int = 0) -> Iterator[tuple[bytes, int]]:
    """The records of complete lines in ``data``: ``(record, offset after it)`` (``base`` +
    the position in ``data``). A record is one line of JSONL, or the lines of a pretty-printed
    object (from a line opening ``{`` to a line ``}`` at column 0 that completes it) or array
    (a line ``[`` to a line ``]``: Gemini CLI's checkpoints and ``/chat share`` exports). A blank
    line is a blank record; an object still open at the end of ``data`` is not yielded (nor
    consumed: the returned offsets stop before it), but a document whose closing line merely
    lacks its newline is (Gemini CLI writes its ``.json`` chats so)."""
    pos, start, n = 0, -1, len(data)
    while pos < n:
        nl = data.find(b"\n", pos)
        if nl < 0:  # a last line without its newline: incomplete, unless it closes a whole document
            if start >= 0 and data[pos:].rstrip() in (b"}", b"]") and _complete(data[start:]):
                yield data[start:].rstrip(), base + n  # Gemini CLI writes its .json chats without one
            return
        line, end = data[pos:nl], nl + 1
        if start >= 0:  # inside a pretty-printed object
            if line.rstrip() in (b"}", b"},", b"]"):
                rec = data[start:nl].rstrip().rstrip(b",") if line.rstrip() == b"}," else data[start:nl]
                if _complete(rec):
                    start = -1
                    yield rec, base + end
            elif end - start > MAX_RECORD_BYTES:
                start = -1
                yield data[pos:nl], base + end  # too long: the last line stands for it (skipped)
            pos = end
            continue
        stripped = line.strip()
        if (stripped.startswith(b"{") and not stripped.endswith(b"}") or line == b"[") and not _complete(stripped):
            start = pos  # an object opened on this line and continued on the next ones
        else:
            yield line, base + end  # a blank line too (empty record: the position moves past it)
        pos = end


def _complete(record: bytes) -> bool:
    try:
        loads(record)
    except (ValueError, RecursionError):
        return False
    return True


def _fingerprint(fh: BinaryIO, offset: int) -> list[int]:
    """crc32 of the file's first bytes and of the bytes just before ``offset``: a file
    replaced in place (or a new file on a reused inode) differs in one of them."""
    fh.seek(0)
    head = fh.read(min(_HEAD, offset))
    fh.seek(max(0, offset - 256))
    tail = fh.read(min(256, offset))
    return [crc32(head), len(head), crc32(tail), len(tail)]


def _resumable(saved: Any, path: str, fmt: str, st: os.stat_result) -> bool:
    return (
        isinstance(saved, dict)
        and saved.get("path") == path
        and saved.get("fmt") == fmt
        and saved.get("inode") == st.st_ino
        and isinstance(saved.get("offset"), int)
        and 0 <= saved["offset"] <= st.st_size
        and isinstance(saved.get("scan"), dict)
        and isinstance(saved.get("mark"), list)
    )


def scan_file(
    path: str,
    fmt: str,
    saved: dict[str, Any] | None,
    *,
    tail: int = 262144,
    max_scan: int = 8388608,
    deadline: float | None = None,
) -> tuple[dict[str, Any], list[str]]:
    """Read what is new in ``path`` since ``saved`` (a previous return value for the same
    file), or all of it (only its tail when longer than ``max_scan``). Returns the new saved
    state (``scan``, the read position and a fingerprint of the bytes read) and notes.
    A file replaced since (another inode, shorter, or other bytes before the position) is
    read again from the start, with a note. OSError if the file cannot be read."""
    notes: list[str] = []
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)
    with os.fdopen(os.open(path, flags), "rb") as fh:
        st = os.fstat(fh.fileno())
        if not is_regular(st.st_mode):
            raise OSError(f"{path} is not a regular file")
        size = st.st_size
        same = _resumable(saved, path, fmt, st)
        if same and saved is not None and _fingerprint(fh, saved["offset"]) != saved["mark"]:
            same = False
            if not (saved.get("scan") or {}).get("document"):
                notes.append("the transcript was replaced or rewritten since the last stop: read again from the start")
        elif saved is not None and not same and saved.get("path") == path:
            notes.append("the transcript changed (another file, or shorter) since the last stop: read again")
        if same and saved is not None and size - saved["offset"] <= max_scan:
            start, scan = saved["offset"], _scan(fmt, saved.get("scan"))
        elif size <= max_scan:
            start, scan = 0, Scan(fmt)
        else:
            start = size - tail
            scan = Scan(fmt, {"turns": None, "partial_tasks": True})
            notes.append(f"transcript is {size} bytes: read its last {tail} only, so the turn count is unknown")
        fh.seek(start)
        data = fh.read(size - start)
        if start and not same:
            cut = data.find(b"\n")
            data = data[cut + 1 :] if cut >= 0 else b""
            start = size - len(data)
        offset, stopped = start, False
        for n, (record, end) in enumerate(records(data, start)):
            if deadline is not None and n % 256 == 0 and time.monotonic() > deadline:
                notes.append("transcript reading stopped: time budget spent")
                stopped = True
                break
            offset = end  # advances past every record, decoded or skipped
            if record.strip():
                scan.feed(record)
        if not stopped and offset < size and data[offset - start :].strip():
            notes.append("the transcript's last line is incomplete (still being written?): ignored")
        mark = _fingerprint(fh, offset)
    for why, count in scan.skipped.items():
        notes.append(f"{count} transcript line(s) skipped: {why}")
    state = {"path": path, "fmt": fmt, "inode": st.st_ino, "offset": offset, "mark": mark, "scan": scan.state()}
    return state, notes


def _scan(fmt: str, state: Any) -> Scan:
    """A scan resumed from a saved state; a damaged state starts afresh."""
    try:
        scan = Scan(fmt, state if isinstance(state, dict) else None)
        dumps(scan.state())
        if not (scan.turns is None or isinstance(scan.turns, int)) or not isinstance(scan.tasks, list):
            raise TypeError
        return scan
    except (TypeError, ValueError, AttributeError):
        return Scan(fmt)


def observations(scan: dict[str, Any]) -> dict[str, Any]:
    """Neutral observations (``turns``, ``current_task`` ...) from a scan's state."""
    out: dict[str, Any] = {}
    if scan.get("turns") is not None:
        out["turns"] = scan["turns"]
    tasks = [t for t in scan.get("tasks") or [] if t.get("status") not in ("deleted",)]
    if tasks:
        first_open = next((i for i, t in enumerate(tasks) if t["status"] in _OPEN), len(tasks))
        cur_i = next((i for i, t in enumerate(tasks) if t["status"] == "in_progress"), None)
        if cur_i is None:
            done = [i for i, t in enumerate(tasks[:first_open]) if t["status"] == "complete"]
            cur_i = done[-1] if done else None
        nxt = next((t for t in tasks[(cur_i + 1 if cur_i is not None else 0) :] if t["status"] == "pending"), None)
        if cur_i is not None:
            cur = tasks[cur_i]
            out["current_task"] = cur["id"] or cur["title"]
            if cur["status"] in ("pending", "in_progress", "complete", "failed"):
                out["task_state"] = cur["status"]
        out["next_task"] = (nxt["id"] or nxt["title"]) if nxt else None
        out["next_task_known"] = nxt is not None
        out["available_tasks"] = [t["title"] for t in tasks if t["status"] in _OPEN]
    if scan.get("failed"):
        out["failed_tools"] = scan["failed"]
    return out
