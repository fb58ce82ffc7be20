"""The progress bar of long commands: drawn on a terminal only, erased at the end, silenced by --quiet."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from clirunner import cli
from stoprule.cli import progress
from stoprule.cli.progress import Bar


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("stream", "quiet", "drawn"),
    [(Terminal(), False, True), (Terminal(), True, False), (io.StringIO(), False, False)],
    ids=["terminal", "quiet", "not-a-terminal"],
)
def test_bar_drawn_only_on_a_terminal(stream: io.StringIO, quiet: bool, drawn: bool) -> None:
    with Bar(stream, "evaluating", total=1000, unit="facts", quiet=quiet, delay=0) as bar:
        for i in range(0, 1001, 100):
            bar(i)
            bar._last = 0.0  # no throttling in the test
    text = stream.getvalue()
    assert ("evaluating" in text) is drawn
    if drawn:
        assert "1000/1000" in text and "facts/s" in text and "ETA" in text


def test_bar_phases_and_fractions() -> None:
    stream = Terminal()
    bar = Bar(stream, "start", delay=0)
    bar.phase("exploring")
    for _ in range(4):
        bar.advance(0.25)
        bar._last = 0.0
    bar.phase("dead rules")
    bar.advance(0.5)
    bar.close()
    text = stream.getvalue()
    assert "exploring" in text and "dead rules" in text and "100%" in text


def test_no_bar_before_the_delay_and_rich_not_imported() -> None:
    stream = Terminal()
    sys.modules.pop("rich.progress", None)
    with Bar(stream, "evaluating", total=10, delay=3600) as bar:
        for i in range(10):
            bar(i + 1)
    assert stream.getvalue() == ""
    assert "rich.progress" not in sys.modules


# --- the commands: a bar on a terminal (stderr), nothing otherwise, nothing with --quiet ----------

REPO = Path(__file__).resolve().parents[2]
TRANSCRIPT = REPO / "tests" / "fixtures" / "hooks" / "claude-code" / "transcript.jsonl"


def _commands(tmp: Path) -> dict[str, tuple[list[str], str]]:
    facts = tmp / "facts.ndjson"
    facts.write_text("".join(f'{{"status": "implemented", "turn": {i}}}\n' for i in range(3000)))
    cases = tmp / "cases.yaml"
    cases.write_text(
        "cases:\n"
        + "".join(f"  - {{name: c{i}, fact: {{status: implemented}}, expect: {{verdict: pass}}}}\n" for i in range(50))
    )
    ledger = tmp / "ledger.db"
    assert cli("eval", "--run", "r1", "--ledger", str(ledger), str(facts.parent / "one.json")).code in (0, 1)
    return {
        "eval": (["eval", str(facts)], "3000/3000"),
        "eval --jobs": (["eval", "--jobs", "2", str(facts)], "3000/3000"),
        "test": (["test", str(cases)], "50/50"),
        "replay": (["replay", str(TRANSCRIPT), str(TRANSCRIPT)], "2/2"),
        "log verify": (["log", "verify", "--ledger", str(ledger)], "1/1"),
        "audit --corpus": (["audit", "--corpus", str(facts), "--jobs", "2"], "audit: corpus"),
    }


def _product(out: str) -> str:
    """A command's output without the line saying how long it took (audit's)."""
    return "\n".join(line for line in out.splitlines() if " took " not in line)


@pytest.fixture
def commands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, default_pack: Path, pack_cache: Path
) -> dict[str, tuple[list[str], str]]:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("STOPRULE_POLICY", str(default_pack))
    monkeypatch.setenv("STOPRULE_CACHE_DIR", str(pack_cache))
    monkeypatch.setattr(progress, "DELAY", 0.0)
    monkeypatch.setattr(progress, "REFRESH", 0.0)
    (tmp_path / "one.json").write_text('{"status": "implemented"}')
    return _commands(tmp_path)


@pytest.mark.parametrize(
    "command",
    [
        "eval",
        "eval --jobs",
        "test",
        "replay",
        "log verify",
        pytest.param("audit --corpus", marks=pytest.mark.integration),
    ],
)
def test_long_commands_show_progress_on_a_terminal_only(commands: dict, command: str) -> None:
    argv, done = commands[command]
    plain = cli(*argv)
    drawn = cli(*argv, tty="err")
    quiet = cli(*argv, "--quiet", tty="err")
    assert plain.code == drawn.code == quiet.code and plain.code != 2, plain.err
    assert _product(plain.out) == _product(drawn.out) == _product(quiet.out)  # the product is the same
    assert done in drawn.err and "ETA" in drawn.err
    assert done not in plain.err and done not in quiet.err and "ETA" not in plain.err + quiet.err
