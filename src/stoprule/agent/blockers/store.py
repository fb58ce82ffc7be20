"""The blockers store: an append-only JSONL record under ``.stoprule/blockers/``, and ``blockers.md``.

- ``blockers.jsonl`` is the record: one JSON object per line, ``{"op": "add", ...}`` for
  a logged blocker and ``{"op": "resolve", "id": ...}`` when one is resolved. Every
  change takes an exclusive ``fcntl`` lock on ``.stoprule/blockers/.lock``, appends one
  whole line with a single ``write`` (truncated back if the write fails: nothing
  half-written), then re-renders ``blockers.md`` to a temp file and renames it over the
  old one: readers see the old or the new file, never a torn one.
- Dedupe: an ``add`` whose hash (category, question, context) was logged within the
  cooldown is acknowledged with the earlier id and not written again.
- Per-run limit: a session (run) may log at most ``max_per_run`` blockers.
- Rotation: when the record reaches ``rotate_entries`` lines or ``rotate_bytes`` and at
  least half of it is history (resolved or soft blockers), it and ``blockers.md`` are
  renamed with a UTC time stamp and a new record starts with the blockers still open, so
  nothing open is forgotten. Only the newest :data:`MAX_ROTATED` rotated pairs are kept,
  so the files and bytes stay bounded whatever the number of open blockers.
- Reading is tolerant: a damaged line or entry is skipped (counted in ``notes``), every
  stored string is normalised (:func:`stoprule._util.text.clean`), so nothing in the
  record can make the stop check fail.
- Path confinement: ``blockers.md`` must resolve inside the project (no ``..``, no
  symlink out); otherwise :class:`~stoprule.diagnostics.ConfigError`.

Everything that reaches this module is already redacted (:mod:`.service` does it); the
markdown escapes HTML, so a question cannot inject markup into ``blockers.md``.

On the cold path when the agent has logged blockers (tools/import_graph.py, COLD_PATH_WHEN): its imports
stay few, light and lazy.
"""

from __future__ import annotations

import html
import json
import secrets
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from stoprule import codes
from stoprule._util import oslite as os
from stoprule._util.files import atomic_write, locked, read_bounded
from stoprule._util.text import clean
from stoprule.diagnostic import Diagnostic
from stoprule.diagnostics import AgentError, ConfigError

TYPE_CHECKING = False
if TYPE_CHECKING:  # pydantic: never on the hook's path
    from stoprule.config.sections import BlockerSettings

__all__ = ["AddResult", "Blocker", "BlockerStore", "StoreWriteError", "blocker_hash", "render_markdown"]

RECORD = "blockers.jsonl"
MAX_ROTATED = 10  # rotated record/markdown pairs kept
MAX_RECORD_BYTES = 256 << 20  # a record larger than this is not read (rotation keeps it far smaller)


class StoreWriteError(AgentError):
    """The record or ``blockers.md`` could not be written (read-only, disk full): nothing was half-written."""


def blocker_hash(category: str, question: str, context: str) -> str:
    import hashlib

    return hashlib.sha256("\x00".join((category, question, context)).encode("utf-8")).hexdigest()


@dataclass
class Blocker:
    id: str
    session: str
    at: str
    ts: float
    hash: str
    category: str
    soft: bool
    question: str
    context: str
    blocksProgress: bool  # noqa: N815 - the tool's field name
    options: list[str] = field(default_factory=list)
    chosenOption: str | None = None  # noqa: N815
    chosenReasoning: str | None = None  # noqa: N815
    resolved_at: str | None = None
    resolution: str | None = None

    @property
    def open(self) -> bool:
        return not self.soft and self.resolved_at is None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "session": self.session,
            "at": self.at,
            "category": self.category,
            "kind": "soft" if self.soft else "hard",
            "status": "open" if self.open else "resolved",
            "question": self.question,
            "context": self.context,
            "blocksProgress": self.blocksProgress,
        }
        if self.options:
            out["options"] = list(self.options)
        if self.chosenOption is not None:
            out["chosenOption"] = self.chosenOption
        if self.chosenReasoning is not None:
            out["chosenReasoning"] = self.chosenReasoning
        if self.resolved_at is not None:
            out["resolved_at"] = self.resolved_at
            if self.resolution:
                out["resolution"] = self.resolution
        return out

    def record(self) -> dict[str, Any]:
        return {
            "op": "add",
            "id": self.id,
            "session": self.session,
            "at": self.at,
            "ts": self.ts,
            "hash": self.hash,
            "category": self.category,
            "soft": self.soft,
            "question": self.question,
            "context": self.context,
            "blocksProgress": self.blocksProgress,
            "options": self.options,
            "chosenOption": self.chosenOption,
            "chosenReasoning": self.chosenReasoning,
        }


@dataclass(frozen=True)
class AddResult:
    status: str  # "logged" | "duplicate" | "limit"
    blocker: Blocker | None
    count: int  # blockers this session has logged
    render_error: str | None = None  # logged in the record, but blockers.md could not be rewritten


def _now() -> tuple[str, float]:
    ts = time.time()
    return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), ts


def _one_line(text: str) -> str:
    """Markdown-safe single line: user text cannot start a new checklist item or heading, nor
    carry HTML (escaped) into the rendered file."""
    return html.escape(" ".join(text.split()), quote=False)


def render_markdown(blockers: list[Blocker]) -> str:
    """``blockers.md`` as a checklist, one section per session."""
    out = ["# Blockers", "", "<!-- Rendered by stoprule from .stoprule/blockers/blockers.jsonl; edits here are"
           " overwritten. Resolve with `stoprule blockers resolve ID`. -->", ""]  # fmt: skip
    sessions: dict[str, list[Blocker]] = {}
    for b in blockers:
        sessions.setdefault(b.session, []).append(b)
    for session, items in sessions.items():
        first = items[0].at.replace("T", " ").rstrip("Z")
        out += [f"## Session: {_one_line(session)} — {first}", ""]
        hard = [b for b in items if not b.soft]
        soft = [b for b in items if b.soft]
        if hard:
            out += ["### Hard Blockers (require user decision)"]
            for b in hard:
                box = "x" if b.resolved_at else " "
                out.append(f"- [{box}] **[{b.category}]** {_one_line(b.question)} (id: {b.id})")
                out.append(f"  - **Context**: {_one_line(b.context)}")
                out.append(f"  - **Blocks**: {'Yes — progress on this task is blocked' if b.blocksProgress else 'No'}")
                if b.options:
                    out.append("  - **Options**:")
                    out += [f"    {i}. {_one_line(o)}" for i, o in enumerate(b.options, 1)]
                if b.resolved_at:
                    note = f" — {_one_line(b.resolution)}" if b.resolution else ""
                    out.append(f"  - **Resolved**: {b.resolved_at}{note}")
            out.append("")
        if soft:
            out += ["### Soft Blockers (AI made choice)"]
            for b in soft:
                out.append(f"- [x] **[{b.category}]** {_one_line(b.question)} (id: {b.id})")
                if b.context:
                    out.append(f"  - **Context**: {_one_line(b.context)}")
                if b.options:
                    out.append("  - **Options**:")
                    out += [f"    {i}. {_one_line(o)}" for i, o in enumerate(b.options, 1)]
                out.append(f"  - **✓ Chosen**: {_one_line(b.chosenOption or '')}")
                if b.chosenReasoning:
                    out.append(f"  - **Reasoning**: {_one_line(b.chosenReasoning)}")
            out.append("")
    return "\n".join(out).rstrip("\n") + "\n"


def _text(value: Any) -> str:
    return clean(value if isinstance(value, str) else "" if value is None else str(value))


def _opt_text(value: Any) -> str | None:
    return None if value is None else _text(value)


def _parse(lines: Iterable[str], notes: dict[str, int] | None = None) -> list[Blocker]:
    """The blockers of a record; a damaged line or entry is skipped (counted in ``notes``)."""
    found: dict[str, Blocker] = {}

    def skip(why: str) -> None:
        if notes is not None:
            notes[why] = notes.get(why, 0) + 1

    for line in lines:
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except (ValueError, RecursionError):
            skip("not JSON")  # a line another tool damaged: skipped, never fatal
            continue
        if not isinstance(rec, dict):
            skip("not a JSON object")
            continue
        if rec.get("op") == "add" and isinstance(rec.get("id"), str):
            try:
                options = rec.get("options") or []
                found[clean(rec["id"])] = Blocker(
                    id=clean(rec["id"]),
                    session=_text(rec.get("session")),
                    at=_text(rec.get("at")),
                    ts=float(rec.get("ts") or 0),
                    hash=_text(rec.get("hash")),
                    category=_text(rec.get("category")),
                    soft=rec.get("soft") is True,
                    question=_text(rec.get("question")),
                    context=_text(rec.get("context")),
                    blocksProgress=rec.get("blocksProgress") is True,
                    options=[_text(o) for o in options] if isinstance(options, list) else [],
                    chosenOption=_opt_text(rec.get("chosenOption")),
                    chosenReasoning=_opt_text(rec.get("chosenReasoning")),
                )
            except (TypeError, ValueError, OverflowError):
                skip("a malformed entry")
                continue
        elif rec.get("op") == "resolve" and isinstance(rec.get("id"), str) and clean(rec["id"]) in found:
            b = found[clean(rec["id"])]
            b.resolved_at = _text(rec.get("at"))
            b.resolution = _opt_text(rec.get("note"))
        else:
            skip("an unknown entry")
    return list(found.values())


class BlockerStore:
    """The blockers of one project (``project_dir`` holds ``.stoprule/``)."""

    def __init__(self, project_dir: str, settings: BlockerSettings, config_file: str | None = None) -> None:
        self.project_dir = os.path.abspath(project_dir)
        self.settings = settings
        self.dir = os.path.join(self.project_dir, ".stoprule", "blockers")
        self.record_path = os.path.join(self.dir, RECORD)
        self.lock_path = os.path.join(self.dir, ".lock")
        self.switch_path = os.path.join(self.dir, "switch.json")
        self.markdown_path = self._confine(settings.file, config_file)
        self.notes: dict[str, int] = {}  # why -> count of record lines skipped by the last read

    # ------------------------------------------------------------ paths and switch

    def _confine(self, rel: str, config_file: str | None) -> str:
        root = os.path.realpath(self.project_dir)
        target = os.path.realpath(os.path.join(self.project_dir, rel))
        if os.path.commonpath([root, target]) != root or target == root:
            name = config_file or os.path.join(self.project_dir, ".stoprule", "config.yaml")
            raise ConfigError(
                [
                    Diagnostic(
                        name,
                        1,
                        1,
                        codes.CONFIG_INVALID,
                        f"the blockers file {rel!r} resolves to {target}, "
                        f"outside the project {root} (a '..' step or a symlink out)",
                        "blockers.file",
                    )
                ]
            )
        return target

    def session_switch_path(self, session: str) -> str:
        """The session's own switch (the user's in-session ``/blockers on|off``), in the state
        directory: it lives and goes with the session, never committed."""
        from stoprule.project import state_file

        return state_file(os.path.join(self.project_dir, ".stoprule"), "blockers", session)

    def _switch(self, path: str) -> bool | None:
        try:
            value = json.loads(read_bounded(path, 4096)).get("enabled")
            if isinstance(value, bool):
                return value
        except (OSError, ValueError, AttributeError):
            pass
        return None

    def enabled(self, session: str | None = None) -> bool:
        """The session's switch (``/blockers on|off`` in the session) if set, else the project's
        (``stoprule blockers on|off``), else the config's ``enabled``."""
        for path in ([self.session_switch_path(session)] if session else []) + [self.switch_path]:
            value = self._switch(path)
            if value is not None:
                return value
        return self.settings.enabled

    def set_enabled(self, value: bool, session: str | None = None) -> None:
        """The project's switch, or with ``session`` that session's only."""
        path = self.session_switch_path(session) if session else self.switch_path
        os.makedirs(os.path.dirname(path), exist_ok=True)
        self._atomic_write(path, json.dumps({"enabled": value}) + "\n")

    # ------------------------------------------------------------ reading

    def blockers(self) -> list[Blocker]:
        """Every blocker of the current record, in order (a missing or unreadable record: none,
        noted in ``notes``); damaged lines are skipped and counted in ``notes``."""
        self.notes = {}
        try:
            data = read_bounded(self.record_path, MAX_RECORD_BYTES)
        except FileNotFoundError:
            return []
        except OSError as exc:
            self.notes[f"the record cannot be read ({exc.strerror or exc})"] = 1
            return []
        return _parse(data.decode("utf-8", "replace").splitlines(), self.notes)

    # ------------------------------------------------------------ writing

    @contextmanager
    def _locked(self) -> Iterator[None]:
        try:
            with locked(self.lock_path):
                yield
        except OSError as exc:
            if isinstance(exc, StoreWriteError):
                raise
            raise StoreWriteError(f"cannot lock {self.lock_path}: {exc.strerror or exc}") from None

    def _append(self, records: list[dict[str, Any]]) -> None:
        data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode("utf-8")
        try:
            fd = os.open(self.record_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as exc:
            raise StoreWriteError(f"cannot open {self.record_path}: {exc.strerror or exc}") from None
        try:
            size = os.fstat(fd).st_size
            try:
                written = os.write(fd, data)
                if written != len(data):
                    raise OSError(28, "short write")
                os.fsync(fd)
            except OSError as exc:
                with suppress(OSError):
                    os.ftruncate(fd, size)  # nothing half-written
                raise StoreWriteError(f"cannot write {self.record_path}: {exc.strerror or exc}") from None
        finally:
            os.close(fd)

    def _atomic_write(self, path: str, text: str) -> None:
        try:
            atomic_write(path, text)
        except OSError as exc:
            raise StoreWriteError(f"cannot write {path}: {exc.strerror or exc}") from None

    def _render(self, blockers: list[Blocker]) -> None:
        self._atomic_write(self.markdown_path, render_markdown(blockers))

    def _rotate_if_due(self, blockers: list[Blocker]) -> list[Blocker]:
        try:
            st = os.stat(self.record_path)
            with open(self.record_path, "rb") as fh:
                lines = sum(1 for _ in fh)
        except FileNotFoundError:
            return blockers
        except OSError as exc:
            raise StoreWriteError(f"cannot read {self.record_path}: {exc.strerror or exc}") from None
        keep = [b for b in blockers if b.open]
        if lines < self.settings.rotate_entries and st.st_size < self.settings.rotate_bytes:
            return blockers
        if lines <= 2 * len(keep):
            return blockers  # mostly open blockers: rotating would only copy them (a rotation storm)
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
        try:
            os.rename(self.record_path, os.path.join(self.dir, f"blockers-{stamp}.jsonl"))
            if os.path.exists(self.markdown_path):
                stem, ext = os.path.splitext(self.markdown_path)
                os.rename(self.markdown_path, f"{stem}-{stamp}{ext or '.md'}")
        except OSError as exc:
            raise StoreWriteError(f"cannot rotate {self.record_path}: {exc.strerror or exc}") from None
        self._prune_rotated()
        if keep:
            self._append([b.record() for b in keep])  # still open: carried into the new record
        return keep

    def _prune_rotated(self) -> None:
        """Keep the newest :data:`MAX_ROTATED` rotated records and markdown files."""
        stem, ext = os.path.splitext(self.markdown_path)
        md_dir, md_name = os.path.split(stem)
        groups = ((self.dir, "blockers-", ".jsonl"), (md_dir, md_name + "-", ext or ".md"))
        for folder, prefix, suffix in groups:
            with suppress(OSError):
                names = sorted(
                    n
                    for n in os.listdir(folder)
                    if n.startswith(prefix) and n.endswith(suffix) and n[len(prefix) : len(prefix) + 8].isdigit()
                )
                for n in names[:-MAX_ROTATED]:
                    os.unlink(os.path.join(folder, n))

    def add(
        self,
        *,
        session: str,
        category: str,
        soft: bool,
        question: str,
        context: str,
        blocks_progress: bool,
        options: list[str] | None = None,
        chosen_option: str | None = None,
        chosen_reasoning: str | None = None,
    ) -> AddResult:
        """Log one blocker (already validated and redacted). Raises :class:`StoreWriteError`."""
        h = blocker_hash(category, question, context)
        with self._locked():
            blockers = self.blockers()
            at, ts = _now()
            cooldown = self.settings.cooldown_seconds
            for b in reversed(blockers):
                if b.hash == h and 0 <= ts - b.ts < cooldown:
                    return AddResult("duplicate", b, sum(1 for x in blockers if x.session == session))
            count = sum(1 for b in blockers if b.session == session)
            if count >= self.settings.max_per_run:
                return AddResult("limit", None, count)
            blockers = self._rotate_if_due(blockers)
            new = Blocker(
                id="b-" + secrets.token_hex(4),
                session=session,
                at=at,
                ts=ts,
                hash=h,
                category=category,
                soft=soft,
                question=question,
                context=context,
                blocksProgress=bool(blocks_progress) and not soft,
                options=list(options or []),
                chosenOption=chosen_option,
                chosenReasoning=chosen_reasoning,
            )
            if soft:
                new.resolved_at = at
            self._append([new.record()])
            blockers.append(new)
            try:
                self._render(blockers)
            except StoreWriteError as exc:  # the record holds it; the next change renders again
                return AddResult("logged", new, count + 1, str(exc))
            return AddResult("logged", new, count + 1)

    def resolve(self, blocker_id: str, note: str | None = None) -> Blocker | None:
        """Mark an open blocker resolved; None if no blocker has that id."""
        with self._locked():
            blockers = self.blockers()
            hit = next((b for b in blockers if b.id == blocker_id), None)
            if hit is None:
                return None
            if hit.resolved_at is None:
                at, _ = _now()
                self._append([{"op": "resolve", "id": blocker_id, "at": at, "note": note}])
                hit.resolved_at, hit.resolution = at, note
                self._render(blockers)
            return hit

    def rerender(self) -> None:
        """Write ``blockers.md`` again from the record (after a failed render, or on demand)."""
        with self._locked():
            self._render(self.blockers())
