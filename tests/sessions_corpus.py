"""The public-sessions corpus (tests/fixtures/sessions/): loaders and the stop-by-stop comparisons
shared by its tests and by benchmarks/bench_questions.py."""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stoprule.agent.hook.event import HookEvent
from stoprule.agent.hook.providers import Context, gather
from stoprule.agent.hook.replay import FORMAT_HARNESS, REPLAY_PROVIDERS, boundaries
from stoprule.agent.hook.transcripts.scan import detect
from stoprule.config.fields import DEFAULT_FIELDS

ROOT = Path(__file__).resolve().parent / "fixtures" / "sessions"
CLOSINGS = ROOT / "closings.jsonl"
TRANSCRIPTS = ROOT / "transcripts"
PACK = str(Path(__file__).resolve().parent.parent / "policies")
# the facts a stop is compared on
COMPARED = ("turn", "currentTask", "taskState", "nextTaskId", "nextTaskKnown", "availableTasks", "questionAsked",
            "questionText", "replyClosureState", "sessionMode")  # fmt: skip


def load_closings() -> list[dict[str, Any]]:
    return [json.loads(line) for line in CLOSINGS.read_text(encoding="utf-8").splitlines() if line.strip()]


@dataclass
class Case:
    name: str
    path: Path
    fmt: str
    harness: str
    version: str
    expected: Path


def transcript_cases() -> list[Case]:
    out = []
    for path in sorted(TRANSCRIPTS.iterdir()):
        if path.name.endswith(".expected.json") or path.name.endswith(".md"):
            continue
        expected = path.with_name(path.name + ".expected.json")
        data = json.loads(expected.read_text(encoding="utf-8")) if expected.exists() else {}
        fmt = data.get("format") or detect(str(path)) or "unknown"
        out.append(Case(path.name, path, fmt, FORMAT_HARNESS.get(fmt, fmt), data.get("version", "?"), expected))
    return out


def stop_summary(fact: dict[str, Any]) -> dict[str, Any]:
    return {k: fact[k] for k in COMPARED if k in fact}


def replay_stops(case: Case) -> list[dict[str, Any]]:
    return [stop_summary(b.fact) for b in boundaries(str(case.path), case.fmt, dict(DEFAULT_FIELDS), pack=PACK)]


def hook_stops(case: Case) -> list[dict[str, Any]]:
    """The same transcript as the hook reads it: the file grows to each stop's line, one session
    record across the stops (so each stop reads only what was appended), the hook's providers."""
    ends = [b.line for b in boundaries(str(case.path), case.fmt, dict(DEFAULT_FIELDS), pack=PACK)]
    raw = case.path.read_bytes()
    if raw.lstrip().startswith((b"{\n", b"[\n")):  # a single JSON document, rewritten whole at each stop: its last stop
        ends = ends[-1:] and [raw.count(b"\n") + 1]
    if raw and not raw.endswith(b"\n"):
        raw += b"\n"
    lines = raw.split(b"\n")
    out: list[dict[str, Any]] = []
    session: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        grown = Path(tmp) / case.path.name
        grown.write_bytes(b"")
        written = 0
        for end in ends:
            with open(grown, "ab") as fh:
                for line in lines[written:end]:
                    fh.write(line + b"\n")
            written = end
            event = HookEvent(harness=case.harness, event="stop", transcript_path=str(grown))
            settings = {"enabled": list(REPLAY_PROVIDERS), "fields": dict(DEFAULT_FIELDS), "timeout_ms": 600000}
            ctx = Context(None, tmp, tmp, settings, session)
            ctx.pack = PACK
            fact, _ = gather(event, ctx)
            out.append(stop_summary(fact))
    return out


def compare_stops(case: Case) -> tuple[list[str], int]:
    """Differences between the expected facts and what replay reads, stop by stop."""
    if not case.expected.exists():
        return [f"no {case.expected.name}"], 0
    want = json.loads(case.expected.read_text(encoding="utf-8"))["stops"]
    got = replay_stops(case)
    diffs = []
    if len(want) != len(got):
        diffs.append(f"stops: expected {len(want)}, read {len(got)}")
    for i, (w, g) in enumerate(zip(want, got, strict=False), 1):
        for key in sorted(set(w) | set(g)):
            if w.get(key) != g.get(key):
                diffs.append(f"stop {i} {key}: expected {w.get(key)!r}, read {g.get(key)!r}")
    return diffs, len(got)
