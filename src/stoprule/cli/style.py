"""Colour and tables on a terminal, through ``rich``; plain text everywhere else.

:func:`styled` is the one switch: a rich console for a stream that is a terminal (``rich``
itself drops colour under ``NO_COLOR`` and on ``TERM=dumb``), None otherwise, so piped and
redirected output stays plain, stable text. ``rich`` is imported only when a terminal is there.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

from stoprule.cli.progress import on_terminal

__all__ = ["painter", "styled"]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import IO, Any


def styled(stream: IO[str]) -> Any:
    """A ``rich.console.Console`` writing to ``stream`` if it is a terminal, else None."""
    if not on_terminal(stream):
        return None
    from rich.console import Console

    return Console(file=stream, highlight=False, soft_wrap=True)


def painter(stream: IO[str]) -> Callable[[str, str], str]:
    """``paint(text, style)``: ``text`` with a rich style (``"bold green"``) as terminal codes when
    ``stream`` is a terminal (colour dropped under ``NO_COLOR``), unchanged otherwise."""
    console = styled(stream)
    if console is None:
        return lambda text, style: text

    def paint(text: str, style: str) -> str:
        with console.capture() as cap:
            console.print(text, style=style, end="", markup=False)
        return str(cap.get())

    return paint
