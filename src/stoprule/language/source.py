"""Read the YAML files of a pack, keeping where every value came from."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from stoprule import codes
from stoprule.diagnostic import Diagnostic
from stoprule.language.files import global_pack, pack_files, raw_key
from stoprule.limits import (
    MAX_FILE_BYTES,
    MAX_PACK_BYTES,
    MAX_PACK_FILES,
    MAX_YAML_DEPTH,
    MAX_YAML_NODES,
    MAX_YAML_SCALAR_CHARS,
)

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


@dataclass(frozen=True)
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
            try:
                key = ctor.construct_object(key_node, deep=True)
            except (ValueError, TypeError, OverflowError) as exc:
                setattr(exc, "__yaml_mark__", key_node.start_mark)  # noqa: B010 - where the value was
                raise
            kpath = (*path, str(key))
            if not isinstance(key, str):
                key = str(key)
            if key in out:
                marks[kpath] = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
                diags.append(src.diag(kpath, codes.YAML_DUPLICATE_KEY, f"duplicate key {key!r}"))
                continue
            out[key] = _convert(value_node, kpath, marks, ctor, src, diags)
            marks[kpath] = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_convert(child, (*path, i), marks, ctor, src, diags) for i, child in enumerate(node.value)]
    try:
        return ctor.construct_object(node, deep=True)
    except (ValueError, TypeError, OverflowError) as exc:
        setattr(exc, "__yaml_mark__", node.start_mark)  # noqa: B010 - where the value was
        raise


def _mark(mark: Any) -> tuple[int, int]:
    return (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)


def _scan(name: str, text: str, diags: list[Diagnostic]) -> bool:
    """Check nesting depth and alias expansion on the event stream, before any tree is built.

    libyaml's parser is iterative; composing (recursive, in C) and converting (recursive,
    and expanding every alias) are only safe on a document these bounds hold for. The
    expanded size is counted as the events go by: every node once, an alias as the whole
    expanded size of its anchor, so an alias bomb is refused at the alias that explodes.
    """
    depth = 0
    nodes = 0
    chars = 0
    sizes: dict[str, tuple[int, int]] = {}  # anchor -> expanded (nodes, chars)
    open_anchors: list[tuple[str | None, int, int]] = []  # collections being read

    def refuse(event: Any, code: str, message: str) -> bool:
        line, col = _mark(event.start_mark)
        diags.append(Diagnostic(name, line, col, code, message))
        return False

    for event in yaml.parse(text, Loader=_Loader):
        if isinstance(event, yaml.AliasEvent):
            size = sizes.get(event.anchor)  # type: ignore[arg-type]
            if size is None:
                if any(a == event.anchor for a, _, _ in open_anchors):
                    return refuse(
                        event, codes.YAML_RECURSIVE_ALIAS, f"alias *{event.anchor} refers to a node that contains it"
                    )
                continue  # an undefined alias: composing reports it
            nodes += size[0]
            chars += size[1]
        elif isinstance(event, (yaml.ScalarEvent, yaml.CollectionStartEvent)):
            nodes += 1
            if isinstance(event, yaml.ScalarEvent):
                chars += len(event.value)
                if event.anchor is not None:
                    sizes[event.anchor] = (1, len(event.value))
            else:
                depth += 1
                if depth > MAX_YAML_DEPTH:
                    return refuse(
                        event, codes.LIMIT_YAML_DEPTH, f"mappings and lists nested deeper than {MAX_YAML_DEPTH} levels"
                    )
                open_anchors.append((event.anchor, nodes - 1, chars))
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
            anchor, n0, c0 = open_anchors.pop()
            if anchor is not None:
                sizes[anchor] = (nodes - n0, chars - c0)
        else:
            continue
        if nodes > MAX_YAML_NODES:
            return refuse(event, codes.LIMIT_YAML_NODES, f"more than {MAX_YAML_NODES} values once aliases are expanded")
        if chars > MAX_YAML_SCALAR_CHARS:
            return refuse(
                event,
                codes.LIMIT_YAML_NODES,
                f"more than {MAX_YAML_SCALAR_CHARS} characters of text once aliases are expanded",
            )
    return True


_OPENERS = {
    "while parsing a flow mapping": ("'{'", "'}'"),
    "while parsing a flow sequence": ("'['", "']'"),
    "while scanning a quoted scalar": ("quote", "closing quote"),
}


def _syntax_error(exc: yaml.MarkedYAMLError) -> tuple[int, int, str]:
    """Where a syntax error is and what it is. A bracket or quote left open is reported where it
    opens (the parser notices only where the text next fails to continue it, often lines later)."""
    line, col = _mark(exc.problem_mark or exc.context_mark)
    problem = exc.problem or exc.context or "invalid YAML"
    opener = _OPENERS.get(exc.context or "")
    if opener is not None and exc.context_mark is not None:
        at_line, at_col = _mark(exc.context_mark)
        if at_line != line:
            return at_line, at_col, f"unclosed {opener[0]}: no {opener[1]} before line {line}, column {col}"
        if opener[0] != "quote":
            problem += f" (to close the {opener[0]} at column {at_col})"
    return line, col, problem


def parse_yaml(name: str, text: str, diags: list[Diagnostic]) -> SourceFile:
    """Parse one YAML document; syntax errors and exceeded limits become diagnostics."""
    src = SourceFile(name, None)
    try:
        if not _scan(name, text, diags):
            return src
        node = yaml.compose(text, Loader=_Loader)
    except yaml.MarkedYAMLError as exc:
        line, col, problem = _syntax_error(exc)
        diags.append(Diagnostic(name, line, col, codes.YAML_SYNTAX, problem))
        return src
    except yaml.YAMLError as exc:
        diags.append(Diagnostic(name, 1, 1, codes.YAML_SYNTAX, str(exc)))
        return src
    if node is None:
        src.data = {}
        return src
    ctor = yaml.constructor.SafeConstructor()
    try:
        src.data = _convert(node, (), src.marks, ctor, src, diags)
    except yaml.constructor.ConstructorError as exc:
        line, col = _mark(exc.problem_mark)
        diags.append(Diagnostic(name, line, col, codes.YAML_SYNTAX, exc.problem or str(exc)))
    except (ValueError, TypeError, OverflowError) as exc:  # e.g. an integer of more than 4300 digits
        line, col = _mark(getattr(exc, "__yaml_mark__", None))
        diags.append(Diagnostic(name, line, col, codes.YAML_VALUE, f"cannot read a value: {exc}"))
    return src


def read_pack(root: Path, diags: list[Diagnostic]) -> PackSource:
    """Parse every YAML file of ``root``; problems go to ``diags``."""
    files = pack_files(root)
    before = len(diags)
    if len(files) > MAX_PACK_FILES:
        diags.append(
            Diagnostic(str(root), 1, 1, codes.LIMIT_PACK_FILES, f"{len(files)} YAML files (limit {MAX_PACK_FILES})")
        )
        return PackSource(root, [], "")
    total = 0
    readable = []
    for path in files:
        try:
            size = os.path.getsize(path)
        except OSError as exc:
            message = f"cannot read: {exc.strerror}"
            diags.append(Diagnostic(os.path.basename(path), 1, 1, codes.PACK_UNREADABLE, message))
            continue
        total += size
        if size > MAX_FILE_BYTES:
            message = f"{size} bytes (limit {MAX_FILE_BYTES} per file)"
            diags.append(Diagnostic(os.path.basename(path), 1, 1, codes.LIMIT_FILE_SIZE, message))
            continue
        readable.append(path)
    if total > MAX_PACK_BYTES:
        message = f"{total} bytes of YAML (limit {MAX_PACK_BYTES} per pack)"
        diags.append(Diagnostic(str(root), 1, 1, codes.LIMIT_PACK_SIZE, message))
    if len(diags) > before:
        return PackSource(root, [], "")
    try:
        key, contents = raw_key(readable, global_pack())
    except OSError as exc:
        diags.append(Diagnostic(str(root), 1, 1, codes.PACK_UNREADABLE, f"cannot read: {exc.strerror}"))
        return PackSource(root, [], "")
    out = []
    for name, data in contents:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            diags.append(Diagnostic(name, 1, 1, codes.YAML_ENCODING, f"not UTF-8: {exc}"))
            continue
        out.append(parse_yaml(name, text, diags))
    if not files:
        diags.append(Diagnostic(str(root), 1, 1, codes.PACK_EMPTY, "no .yaml files in the pack"))
    return PackSource(root, out, key)
