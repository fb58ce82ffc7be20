"""The generated JSON projector: straight-line code projecting a validated fact to the text the
engine reads, compiled once per pack for a run of many facts.

An evaluator projects a fact or two without it (``_direct_projector`` of
:mod:`stoprule.engine.evaluator`, the same text), and switches to it past that
(``Evaluator._use_code``); a stop never generates it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stoprule._util.codegen import define
from stoprule._util.jsonout import dumps
from stoprule.engine import projection
from stoprule.engine.compiled import CompiledPolicy, ListSlot, Slot
from stoprule.engine.durable import _float, _string, encode
from stoprule.engine.projection import field_of, slot_encoding
from stoprule.facts.schema import MISSING, FactField

__all__ = ["json_projector", "projectors"]


def _reader(lines: list[str], var: str, path: tuple[str, ...], emit: str, indent: str) -> None:
    """Append code reading ``path`` from ``var`` into ``v`` and, when present, running ``emit``
    (the empty path reads ``var`` itself)."""
    if not path:
        lines.append(f"{indent}v = {var}")
        lines.append(f"{indent}if True:")
        lines.append(f"{indent}    {emit}")
        return
    cur = var
    for depth, step in enumerate(path[:-1]):
        nxt = f"o{depth}"
        lines.append(f"{indent}{nxt} = {cur}.get({step!r})")
        lines.append(f"{indent}if type({nxt}) is dict:")
        indent += "    "
        cur = nxt
    lines.append(f"{indent}v = {cur}.get({path[-1]!r}, M)")
    lines.append(f"{indent}if v is not M:")
    lines.append(f"{indent}    {emit}")


def projectors(compiled: CompiledPolicy) -> list[tuple[str, Callable[[dict[Any, Any]], str]]]:
    """The projectors of ``compiled``: one for every ruleset, or one per ruleset when each
    reads a subset of the projection (``ruleset_keys``)."""
    subsets = [None] if compiled.ruleset_keys is None else [frozenset(k) for k in compiled.ruleset_keys]
    return [json_projector(compiled.slots, compiled.lists, compiled.schema.root, keys) for keys in subsets]


def _json_item(s: Slot, scope: FactField | None, key: str, consts: dict[str, Any]) -> str:
    """An expression for ``,"KEY":VALUE``, the value ``v`` of slot ``s`` (not a test) encoded as
    the engine reads it: what :func:`stoprule.engine.durable.encode` writes for it, character for
    character (``consts``: where constants the expression names are added)."""
    pre = f",{key}:"
    enc, extra = slot_encoding(s, scope, pre)
    if enc == projection.MARKER:
        return f"{pre + 'true'!r} if v is not None else {pre + 'null'!r}"
    if enc == projection.BOOL:
        return f"{pre + 'true'!r} if v is True else {pre + 'false'!r} if v is False else {pre!r} + E(v)"
    if enc == projection.ENUM:  # each value's item written once
        name = f"K{len(consts)}"
        consts[name] = extra
        return f"type(v) is str and {name}.get(v) or {pre!r} + E(v)"
    if enc == projection.STRING:
        return f"{pre!r} + (S(v) if type(v) is str else E(v))"
    if enc == projection.INT:
        return f"{pre!r} + (str(v) if type(v) is int else E(v))"
    if enc == projection.NUMBER:
        return f"{pre!r} + (str(v) if type(v) is int else F(v) if type(v) is float else E(v))"
    return f"{pre!r} + E(v)"


def json_projector(
    slots: tuple[Slot, ...], lists: tuple[ListSlot, ...], root: FactField, keys: frozenset[str] | None = None
) -> tuple[str, Callable[[dict[Any, Any]], str]]:
    """Straight-line code projecting a validated fact to the keys the rules read, JSON-encoded
    in one pass (generated once per pack, as namedtuple does; it runs for every fact).

    The projection: ``"_": 1`` (a key every fact has), each slot under its key (a value as it
    is, a marker as ``true``/``null``, a pattern slot as whether a string value passes), and
    each list's length and its items' slots. ``keys``: only these (the keys one ruleset
    reads). Returns the source and the function, which returns the encoded projection
    without its opening brace (the engine matcher puts ``{"id":N,`` in front).
    """
    tests: dict[str, Any] = {}

    def wanted(key: str) -> bool:
        return keys is None or key in keys

    reads = any(wanted(s.key) for s in slots) or any(wanted(ls.len_key) or wanted(ls.key) for ls in lists)
    anchor = wanted("_") or not reads  # a text with no key is not JSON the engine takes
    lines = ["def project_json(fact):", "    p = ['\"_\":1']" if anchor else "    p = []"]

    def emit_slot(s: Slot, var: str, scope: FactField | None, target: str, indent: str) -> None:
        key = dumps(s.key)
        if s.test is not None:  # a pattern slot is left out for a value that is not a string
            name = f"T{len(tests)}"
            tests[name] = slot_encoding(s, scope, "")[1]
            pre = f",{key}:"
            emit = f"if type(v) is str: x = {name}(v); {target}.append({pre!r} + (B[x] if type(x) is bool else E(x)))"
        else:
            emit = f"{target}.append({_json_item(s, scope, key, tests)})"
        _reader(lines, var, s.path, emit, indent)

    parents: dict[tuple[str, ...], str] = {}

    def parent(path: tuple[str, ...]) -> str:
        """The variable holding the value at ``path`` (read once per fact)."""
        if not path:
            return "fact"
        var = parents.get(path)
        if var is None:
            up = parent(path[:-1])
            var = parents[path] = f"P{len(parents)}"
            read = f"{up}.get({path[-1]!r})"
            guard = "" if up == "fact" else f" if type({up}) is dict else None"
            lines.append(f"    {var} = {read}{guard}")
        return var

    for s in slots:
        if not wanted(s.key):
            continue
        if len(s.path) < 2:
            emit_slot(s, "fact", root, "p", "    ")
            continue
        var = parent(s.path[:-1])
        lines.append(f"    if type({var}) is dict:")
        emit_slot(Slot(s.key, s.path[-1:], s.marker, s.test), var, field_of(root, s.path[:-1]), "p", "        ")
    for n, ls in enumerate(lists):
        length, items = wanted(ls.len_key), ls.items and wanted(ls.key)
        if not (length or items):
            continue
        list_field = field_of(root, ls.path)
        item_scope = list_field.items if list_field is not None else None
        # every text from the pack is written as a literal (repr): a key is data, never code
        item, length_item = f",{dumps(ls.key)}:", f",{dumps(ls.len_key)}:"
        up = parent(ls.path[:-1])
        read = f"{up}.get({ls.path[-1]!r}) if type({up}) is dict else None" if ls.path else up
        lines.append(f"    seq{n} = {read}")
        lines.append(f"    if type(seq{n}) is list:")
        lines.append(f"        p.append({length_item!r} + str(len(seq{n})))" if length else "        pass")
        if not items:
            pass  # only the length is read
        elif ls.scalar:
            lines.append(f"        p.append({item!r} + E(seq{n}))")
        elif not ls.item_slots:
            lines.append(f"        p.append({item + '['!r} + ','.join(['{{}}'] * len(seq{n})) + ']')")
        else:
            lines.append("        rows = []")
            lines.append(f"        for item in seq{n}:")
            lines.append("            row = []")
            rows_of_scalars = any(not s.path for s in ls.item_slots)
            lines.append("            if True:" if rows_of_scalars else "            if type(item) is dict:")
            for s in ls.item_slots:
                emit_slot(s, "item", item_scope, "row", "                ")
            lines.append("            rows.append('{' + ''.join(row)[1:] + '}')")
            lines.append(f"        p.append({item + '['!r} + ','.join(rows) + ']')")
        if length:
            lines.append("    else:")
            lines.append(f"        p.append({length_item + '0'!r})")
    lines.append("    p.append('}')")
    lines.append("    return ''.join(p)" if anchor else "    return ''.join(p)[1:]")
    source = "\n".join(lines)
    namespace: dict[str, Any] = {
        "M": MISSING, "B": {True: "true", False: "false"}, "S": _string, "E": encode, "F": _float, **tests,
    }  # fmt: skip
    return source, define(source, namespace, "project_json")
