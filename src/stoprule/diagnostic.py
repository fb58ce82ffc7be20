"""A :class:`Diagnostic`: one thing wrong with a policy pack or a config file, at a source
location, and how it prints (one line in any encoding). Built only when something is wrong: a
:class:`~stoprule.diagnostics.PolicyError` carries them.

On the cold path when a pack or config file the hook loads has a mistake (tools/import_graph.py):
its imports stay few, light and lazy.
"""

from __future__ import annotations

from stoprule._util.records import record

__all__ = ["Diagnostic", "one_line"]

_BREAKS = {c: f"\\x{c:02x}" for c in (*range(0x20), 0x7F, 0x85)} | {0x2028: "\\u2028", 0x2029: "\\u2029"}


def one_line(text: str) -> str:
    """``text`` printable on one line in any encoding: control and line-separator characters
    escaped, lone surrogates (undecodable file names) shown as ``\\udcxx``."""
    text = text.translate(_BREAKS)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


@record
class Diagnostic:
    """One thing wrong with a policy pack, at a source location (sorts by location)."""

    file: str
    line: int
    column: int
    code: str
    message: str
    path: str = ""

    def format(self) -> str:
        """``file:line:column: code: message (at path)``, always exactly one line."""
        where = f" (at {one_line(self.path)})" if self.path else ""
        return f"{one_line(self.file)}:{self.line}:{self.column}: {self.code}: {one_line(self.message)}{where}"

    def to_dict(self) -> dict[str, object]:
        return {
            "file": one_line(self.file),
            "line": self.line,
            "column": self.column,
            "code": self.code,
            "message": one_line(self.message),
            "path": one_line(self.path),
        }
