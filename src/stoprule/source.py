"""Read the YAML files of a pack, keeping where every value came from."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .diagnostics import Diagnostic
from .files import pack_files, raw_key

__all__ = ["PackSource", "SourceFile", "format_path", "read_pack"]

PathKey = tuple[str | int, ...]

try:  # the C loader is several times faster; fall back where libyaml is missing
    _Loader: type = yaml.CSafeLoader
except AttributeError:  # pragma: no cover
    _Loader = yaml.SafeLoader


def format_path(path: PathKey) -> str:
    """``('rules', 3, 'when', 'all', 1)`` -> ``rules[3].when.all[1]``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


@dataclass
class SourceFile:
    """One parsed YAML document and the (line, column) of each value, 1-based."""

    name: str
    data: Any
    marks: dict[PathKey, tuple[int, int]] = field(default_factory=dict)

    def where(self, path: PathKey) -> tuple[int, int]:
        """Location of ``path``, or of its nearest ancestor that has one."""
        p = tuple(path)
        while p not in self.marks and p:
            p = p[:-1]
        return self.marks.get(p, (1, 1))

    def diag(self, path: PathKey, code: str, message: str) -> Diagnostic:
        line, col = self.where(path)
        return Diagnostic(self.name, line, col, code, message, format_path(path))


@dataclass
class PackSource:
    root: Path
    files: list[SourceFile]
    raw_key: str


def _convert(
    node: yaml.Node,
    path: PathKey,
    marks: dict[PathKey, tuple[int, int]],
    ctor: yaml.constructor.SafeConstructor,
    src: SourceFile,
    diags: list[Diagnostic],
) -> Any:
    marks[path] = (node.start_mark.line + 1, node.start_mark.column + 1)
    if isinstance(node, yaml.MappingNode):
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key = ctor.construct_object(key_node, deep=True)
            kpath = (*path, str(key))
            if not isinstance(key, str):
                key = str(key)
            if key in out:
                marks[kpath] = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
                diags.append(src.diag(kpath, "yaml.duplicate_key", f"duplicate key {key!r}"))
                continue
            out[key] = _convert(value_node, kpath, marks, ctor, src, diags)
            marks[kpath] = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_convert(child, (*path, i), marks, ctor, src, diags) for i, child in enumerate(node.value)]
    return ctor.construct_object(node, deep=True)


def parse_yaml(name: str, text: str, diags: list[Diagnostic]) -> SourceFile:
    """Parse one YAML document; syntax errors become diagnostics."""
    src = SourceFile(name, None)
    try:
        node = yaml.compose(text, Loader=_Loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        problem = exc.problem or exc.context or "invalid YAML"
        diags.append(Diagnostic(name, line, col, "yaml.syntax", problem))
        return src
    except yaml.YAMLError as exc:
        diags.append(Diagnostic(name, 1, 1, "yaml.syntax", str(exc)))
        return src
    if node is None:
        src.data = {}
        return src
    ctor = yaml.constructor.SafeConstructor()
    try:
        src.data = _convert(node, (), src.marks, ctor, src, diags)
    except yaml.constructor.ConstructorError as exc:
        mark = exc.problem_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        diags.append(Diagnostic(name, line, col, "yaml.syntax", exc.problem or str(exc)))
    return src


def read_pack(root: Path, diags: list[Diagnostic]) -> PackSource:
    """Parse every YAML file of ``root``; problems go to ``diags``."""
    files = pack_files(root)
    key, contents = raw_key(files)
    out = []
    for name, data in contents:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            diags.append(Diagnostic(name, 1, 1, "yaml.encoding", f"not UTF-8: {exc}"))
            continue
        out.append(parse_yaml(name, text, diags))
    if not files:
        diags.append(Diagnostic(str(root), 1, 1, "pack.empty", "no .yaml files in the pack"))
    return PackSource(root, out, key)
