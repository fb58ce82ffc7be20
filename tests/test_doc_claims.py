"""The numbered claims of the docs, checked against the program, so they cannot drift.

* docs/decision-table.md's table: each row's verdict, reason, rules and priority are the
  default pack's, the rows are in the order the pack tries them, and every rule is in a row.
* Every "row N" the docs (and the pack's case names) mention is registered in :data:`MENTIONS`
  with what it claims about the row (its reason, the file its rules live in, the rows that
  share a priority), and that claim is checked; a new mention fails until it is registered.
* Outputs the docs quote in prose: ``replay --format summary``'s keys, ``keys list`` on a
  fresh ledger. (Console transcripts are run by tests/test_docs.py; doctor's line for a stop
  that failed open is compared with docs/agents.md by tests/cli/test_first_hour.py.)
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from clirunner import invoke
from docblocks import matches
from stoprule import load_policy

REPO = Path(__file__).resolve().parent.parent
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
TABLE = REPO / "docs" / "decision-table.md"


@dataclass(frozen=True)
class Row:
    number: int
    verdict: str
    reason: str
    rules: tuple[str, ...]  # as the pack names them: file stem . id
    priority: int


def _rows() -> dict[int, Row]:
    """The decision table of docs/decision-table.md."""
    text = TABLE.read_text(encoding="utf-8").split("## Decision table", 1)[1]
    rows = {}
    for line in text.splitlines():
        m = re.match(r"\| (\d+) \| `(\w+)` / `(\w+)` \| (.*?) \| (\d+)(?: each)? \|", line)
        if not m:
            continue
        names, stem = [], ""
        for word in re.findall(r"`([\w.:]+)`", m[4]):  # `file.yaml:id`, or `file.yaml:` then bare `id`s
            file, colon, rule = word.rpartition(":")
            if colon:
                stem = file.removesuffix(".yaml")
            if rule:
                names.append(f"{stem}.{rule}")
        rows[int(m[1])] = Row(int(m[1]), m[2], m[3], tuple(names), int(m[5]))
    return rows


ROWS = _rows()


@pytest.fixture(scope="module")
def pack_rules() -> dict[str, object]:
    compiled = load_policy(REPO / "policies", cache=False).compiled
    return {r.id: r for r in compiled.rules}


def test_the_decision_table_is_the_default_pack(pack_rules: dict) -> None:
    assert sorted(ROWS) == list(range(1, len(ROWS) + 1)) and len(ROWS) >= 17
    seen = []
    for row in ROWS.values():
        assert row.rules, row
        for name in row.rules:
            rule = pack_rules.get(name)
            assert rule is not None, f"row {row.number}: no rule {name} in the pack"
            assert (rule.verdict, rule.reason, rule.priority) == (row.verdict, row.reason, row.priority), (row, rule)
            seen.append(name)
    assert sorted(seen) == sorted(pack_rules), "every rule of the pack is in exactly one row"
    priorities = [row.priority for row in ROWS.values()]
    assert priorities == sorted(priorities, reverse=True) and len(set(priorities)) == len(priorities)


def _numbers(text: str) -> list[int]:
    """The row numbers a phrase names, ranges expanded (``1–2 and 5–7`` is 1, 2, 5, 6, 7)."""
    out: list[int] = []
    for a, b in re.findall(r"(\d+)(?:[–-](\d+))?", text):
        out.extend(range(int(a), int(b or a) + 1))
    return out


# (doc, phrase): what the rows it names are claimed to be. ``reasons``: each row's reason, in the
# order named; ``file``: the rows whose rules live in that file, and only those; ``shared``: the
# rows with more than one rule (sharing a priority), and how many each has.
MENTIONS: dict[tuple[str, str], tuple[str, object]] = {
    ("decision-table.md", "rows 1–2 and 5–7: stops for user review"): ("file", "review"),
    ("decision-table.md", "rows 3–4: the blocked report"): ("file", "escape_hatch"),
    ("decision-table.md", "rows 8–10: the approved plan"): ("file", "continuity"),
    ("decision-table.md", "rows 11–18: failure"): ("file", "progress"),
    ("decision-table.md", "Rows 15 and 16 read the blockers"): ("reasons", ["available_tasks", "open_blockers"]),
    ("decision-table.md", "where row 8 or 9 would otherwise fire"): (
        "reasons", ["missing_auto_next_dispatch", "missing_dispatch_receipt"]),
    ("decision-table.md", "The seven rules of row 3, and the two of rows 5 and 15, share a priority"): (
        "shared", [7, 2, 2]),
    ("decision-table.md", "| row 2, review reason `Max turns exceeded. Human intervention required.` | row 2, review "
     "reason the report's `human_action_required` (or the fallback if it is empty) | row 2, review reason"): (
        "reasons", ["max_turns_exceeded"] * 3),
    ("decision-table.md", "row 4: write the report"): ("reasons", ["blocked_report_required"]),
    ("decision-table.md", "row 3: fix the report"): ("reasons", ["invalid_blocked_report"]),
    ("decision-table.md", "row 5, review reason the report's"): ("reasons", ["hard_blocker"]),
    ("decision-table.md", "| row 4 | row 3 | row 6 |"): (
        "reasons", ["blocked_report_required", "invalid_blocked_report", "agent_blocked"]),
    ("decision-table.md", "| row 4 | row 3 | the rows below (e.g. 12 for `partial`)"): (
        "reasons", ["blocked_report_required", "invalid_blocked_report", "soft_blocker"]),
    ("decision-table.md", "two for rows 2, 4 and 5"): (
        "reasons", ["max_turns_exceeded", "blocked_report_required", "hard_blocker"]),
    ("decision-table.md", "(row 5) instead of being unclassified (row 7)"): (
        "reasons", ["hard_blocker", "unclassified_blocker"]),
    ("blockers.md", "rows 15 and 16 ([decision-table.md]"): ("reasons", ["available_tasks", "open_blockers"]),
    ("blockers.md", "`human_action_required` (row 2)"): ("reasons", ["max_turns_exceeded"]),
    ("testing.md", "'priority.yaml::row 1'"): ("reasons", ["agent_requested_review"]),
    ("testing.md", "`priority.yaml::row 1 beats row\n5"): ("reasons", ["agent_requested_review", "hard_blocker"]),
}  # fmt: skip
_MENTION = re.compile(r"\brows? \d+", re.I)


def _mentions(doc: Path) -> list[tuple[int, str]]:
    """``(offset, line)`` of each row number the doc's prose names (the table's own rows aside)."""
    text = doc.read_text(encoding="utf-8")
    out = []
    for m in _MENTION.finditer(text):
        start = text.rfind("\n", 0, m.start()) + 1
        line = text[start : text.find("\n", m.end())]
        if doc == TABLE and re.match(r"\| \d+ \| `", line) and "would otherwise fire" not in line:
            continue  # a row of the decision table itself
        out.append((m.start(), line))
    return out


def test_every_row_number_in_the_docs_is_a_registered_claim() -> None:
    unregistered = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        spans = [(text.find(p), text.find(p) + len(p)) for (d, p) in MENTIONS if d == doc.name and p in text]
        for offset, line in _mentions(doc):
            if not any(a <= offset < b for a, b in spans):
                unregistered.append(f"{doc.name}: {line.strip()}")
    assert not unregistered, "row numbers the docs name without a claim in MENTIONS:\n" + "\n".join(unregistered)


@pytest.mark.parametrize(("key", "claim"), list(MENTIONS.items()), ids=[p[:40] for _, p in MENTIONS])
def test_each_row_claim_holds(key: tuple[str, str], claim: tuple[str, object], pack_rules: dict) -> None:
    doc, phrase = key
    assert phrase in (REPO / "docs" / doc).read_text(encoding="utf-8"), f"{doc}: no longer says {phrase!r}"
    numbers = _numbers(re.sub(r"`[^`]*`|\[[^]]*\]|[A-Za-z_]+\.yaml", "", phrase.replace("\n", " ")))
    kind, expected = claim
    if kind == "reasons":
        assert [ROWS[n].reason for n in numbers] == expected
    elif kind == "file":
        in_file = sorted(n for n, row in ROWS.items() if any(r.startswith(f"{expected}.") for r in row.rules))
        assert numbers == in_file
    else:
        shared = {n: len(row.rules) for n, row in ROWS.items() if len(row.rules) > 1}
        assert shared == dict(zip(numbers, expected, strict=True)), shared  # type: ignore[call-overload]


def test_the_pack_case_names_say_which_row_decides() -> None:
    """A case of the bundled pack named after rows (``row N: ...``, ``row N beats row M``, ``row N
    yields to ... (row M)``) expects the reason of a row it names; of row N when it says so."""
    wrong = []
    for path in sorted((REPO / "policies" / "tests").glob("*.yaml")):
        for case in yaml.safe_load(path.read_text(encoding="utf-8")).get("cases", []):
            name = case.get("name", "")
            reason = (case.get("expect") or {}).get("reason")
            named = [int(n) for n in re.findall(r"\brows? (\d+)", name)]
            if not named or not reason or not name.startswith("row "):
                continue
            deciding = [n for n in named if ROWS[n].reason == reason]
            first_decides = re.match(r"row \d+(:| beats)", name) is not None
            if not deciding or (first_decides and deciding[0] != named[0]):
                wrong.append(
                    f"{path.name}: {name!r} expects {reason}: rows "
                    + ", ".join(f"{n} ({ROWS[n].reason})" for n in named)
                )
    assert not wrong, "\n".join(wrong)


def test_quoted_outputs_are_what_the_commands_print(tmp_path: Path, run_cli) -> None:  # noqa: ANN001
    """``replay --format summary``'s keys as agents.md lists them; ``keys list`` on a fresh ledger
    as ledger.md quotes it."""
    agents = (REPO / "docs" / "agents.md").read_text(encoding="utf-8")
    keys = re.search(r"--format summary +# \{(.*?)\}", agents)
    assert keys is not None
    transcript = REPO / "tests" / "fixtures" / "hooks" / "gemini" / "transcript.jsonl"
    summary = json.loads(run_cli("replay", str(transcript), "--format", "summary").stdout)
    assert list(summary) == json.loads(f"[{keys[1]}]")
    ledger = (REPO / "docs" / "ledger.md").read_text(encoding="utf-8")
    quoted = re.search(r"\$ stoprule keys list\n(.*)\n", ledger)
    assert quoted is not None
    assert matches([quoted[1]], [invoke(["keys", "list"], cwd=tmp_path).stdout.strip()])
