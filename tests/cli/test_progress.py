"""The progress bar of long commands: drawn on a terminal only, erased at the end, silenced by --quiet."""

from __future__ import annotations

import io
import sys

import pytest

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
