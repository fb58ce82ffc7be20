"""The generated fact validator: straight-line code a schema compiles for a run of many facts.

:meth:`FactSchema.validate <stoprule.facts.schema.FactSchema.validate>` and ``check`` generate
and compile it on first use, once per schema (a batch, an analysis); a stop's one fact is
validated by the schema's closures alone (``check_direct``). It is given what it calls of the
schema's module by name, and imports no schema.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stoprule._util.codegen import define
from stoprule.limits import SAFE_INT

__all__ = ["fast_validator"]


def fast_validator(root: Any, names: dict[str, Any]) -> tuple[str, Callable[[Any, list[str]], Any]]:
    """Generated straight-line code validating a fact of ``root`` (the schema's root
    :class:`~stoprule.facts.schema.Any`) as the schema's closures do
    (``_compile_object``) and collecting its unknown field paths as ``_compile_unknown`` does,
    in one walk.

    It returns the very dict the closures return (same keys, order and values) for every
    fact they accept; it raises for anything else, and the caller falls back to the closures
    (for the error and its message). Returns the source and the function ``(fact, unknown)``.

    ``names``: what the code calls of the schema's own module (``_Bail``, raised for anything
    left to the closures; ``CT``, its text check; ``CL``, its deep copy; ``fin``, its finiteness
    test; ``M``, ``MISSING``).
    """
    lines: list[str] = []
    ns: dict[str, Any] = {**names, "SAFE": SAFE_INT}
    counter = [0]

    def const(value: Any) -> str:
        name = f"C{len(ns)}"
        ns[name] = value
        return name

    def scalar_check(f: Any, v: str, indent: str) -> list[str]:
        """Statements that accept a valid scalar ``v`` of ``f`` and raise for anything else."""
        bad = f"{indent}    raise _Bail" if not f.nullable else f"{indent}    if {v} is not None: raise _Bail"
        t = f.type
        if t == "bool":
            return [f"{indent}if type({v}) is not bool:", bad]
        if t == "string":
            return [
                f"{indent}if type({v}) is str:",
                f"{indent}    if not {v}.isascii() or '\\x00' in {v}: CT({v})",
                f"{indent}else:",
                bad,
            ]
        if t in ("int", "number"):
            out = [
                f"{indent}if type({v}) is int:",
                f"{indent}    if not -SAFE <= {v} <= SAFE: raise _Bail",
            ]
            if t == "number":
                out.append(f"{indent}elif type({v}) is float and fin({v}): pass")
            return [*out, f"{indent}else:", bad]
        assert t == "enum"
        values = const(frozenset(f.values))
        return [
            f"{indent}if type({v}) is str:",
            f"{indent}    if {v} not in {values}: raise _Bail",
            f"{indent}else:",
            bad,
        ]

    def func(f: Any) -> str:
        """Define the function checking a value of ``f`` (an object or a list): ``(v, u, at)``."""
        counter[0] += 1
        name = f"V{counter[0]}"
        if f.type == "list":
            assert f.items is not None
            item = f.items
            body = [f"def {name}(v, u, at):", "    if type(v) is not list:"]
            body.append("        if v is None and " + repr(f.nullable) + ": return None")
            body.append("        raise _Bail")
            if item.type in ("list", "object") or item.type not in ("bool", "string", "int", "number", "enum"):
                sub = func(item)
                # item paths are written only when an item has unknown keys (then it runs again)
                body.append("    m = len(u)")
                body.append(f"    out = [{sub}(x, u, None) for x in v]")
                body.append("    if len(u) == m: return out")
                body.append("    del u[m:]")
                body.append(f"    return [{sub}(x, u, f'{{at}}[{{i}}]') for i, x in enumerate(v)]")
            else:
                body.append("    for x in v:")
                body += scalar_check(item, "x", "        ")
                body.append("    return list(v)")
            lines.extend(body)
            return name
        lookup = f.lookup
        reject = f.additional == "reject"
        # fields checked alike share a code: same scalar type and nullability (an enum: also
        # the same values); objects and lists call their own function (code 0)
        codes: dict[tuple[Any, ...], int] = {}
        code_of: dict[str, int] = {}
        example: dict[int, Any] = {}
        subs: dict[str, str] = {}
        for fname, ff in f.fields.items():
            if ff.type in ("bool", "string", "int", "number", "enum"):
                sig = (ff.type, ff.nullable, ff.values if ff.type == "enum" else ())
                code = codes.setdefault(sig, len(codes) + 1)
                example[code] = ff
            else:
                subs[fname] = func(ff)
                code = 0
            code_of[fname] = code
        table = const({key: (fname, code_of[fname]) for key, fname in lookup.items()})
        # the general walk (aliases, unknown keys): a function returning ``out`` before defaults
        loop = [f"def L{name}(d, u, at):", "    out = {}", "    for key, v in d.items():"]
        loop.append(f"        e = {table}.get(key)")
        loop.append("        if e is None:")
        unknown = "raise _Bail" if reject else "u.append(f'{at}.{key}' if at else key); continue"
        loop.append(f"            {unknown}")
        loop.append("        n, c = e")
        loop.append("        if n in out: raise _Bail")
        # the most common codes first
        order = sorted(set(code_of.values()), key=lambda c: -sum(1 for x in code_of.values() if x == c))
        for j, code in enumerate(order):
            loop.append(f"        {'if' if j == 0 else 'elif'} c == {code}:")
            if code == 0:  # a per-field function: dispatch on the name (few object and list fields)
                members = [fname for fname, c in code_of.items() if c == 0]
                for k, fname in enumerate(members):
                    loop.append(
                        f"            {'if' if k == 0 else 'elif'} n == {fname!r}:"
                        f" v = {subs[fname]}(v, u, f'{{at}}.{{n}}' if at else n)"
                    )
            else:
                loop += scalar_check(example[code], "v", "            ")
        loop.append("        out[n] = v")
        loop.append("    return out")
        lines.extend(loop)
        body = [f"def {name}(d, u, at):", "    if type(d) is not dict:"]
        body.append("        if d is None and " + repr(f.nullable) + ": return None")
        body.append("        raise _Bail")
        # the common cases: every key a field's own name, or else no alias among them. Scalars
        # are checked in place, the dict copied (same keys and order as the walk, unknown keys
        # left out), objects and lists below replaced. Unknown keys are listed in the order of
        # the keys: where they come from more than one place, the walk lists them instead.
        canon = frozenset(k for k, fname in lookup.items() if k == fname)
        aliases = frozenset(lookup) - canon

        def fast(indent: str, unknown: bool) -> None:
            for fname, ff in f.fields.items():
                if fname not in subs:
                    body.append(f"{indent}v = d.get({fname!r}, M)")
                    body.append(f"{indent}if v is not M:")
                    body.extend(scalar_check(ff, "v", indent + "    "))
            body.append(f"{indent}out = d.copy()")
            if unknown:
                body.append(f"{indent}extra = [k for k in d if k not in {const(canon)}]")
                body.append(f"{indent}for k in extra: del out[k]")
            guarded = unknown or len(subs) > 1
            if guarded:
                body.append(f"{indent}start = m = len(u)")
                body.append(f"{indent}hits = {int(unknown)}")
            for fname, sub in subs.items():
                body.append(f"{indent}if {fname!r} in out:")
                at = f"at + {'.' + fname!r} if at else {fname!r}"
                body.append(f"{indent}    out[{fname!r}] = {sub}(out[{fname!r}], u, {at})")
                if guarded:
                    body.append(f"{indent}    if len(u) != m: hits += 1; m = len(u)")
            if guarded:
                body.append(f"{indent}if hits > 1:")
                body.append(f"{indent}    del u[start:]")
                body.append(f"{indent}    out = L{name}(d, u, at)")
            if unknown:
                body.append(f"{indent}elif extra:")
                body.append(f"{indent}    u.extend([f'{{at}}.{{k}}' if at else k for k in extra])")

        body.append(f"    if d.keys() <= {const(canon)}:")
        fast("        ", False)
        if not reject:
            body.append(f"    elif d.keys().isdisjoint({const(aliases)}):")
            fast("        ", True)
        body.append("    else:")
        body.append(f"        out = L{name}(d, u, at)")
        for fname, ff in f.fields.items():
            if ff.has_default:
                dv = ff.default
                if dv is None or type(dv) in (bool, int, str):
                    val = repr(dv)
                else:  # a fresh copy per fact (an empty list or object written as a literal)
                    val = "[]" if dv == [] else "{}" if dv == {} else f"CL({const(dv)})"
                body.append(f"    if {fname!r} not in out: out[{fname!r}] = {val}")
        for fname, ff in f.fields.items():
            if ff.required:
                body.append(f"    if {fname!r} not in out: raise _Bail")
        for fname, ff in f.fields.items():
            if ff.required_if:
                cond = f"out.get({ff.required_if!r}) is True and out.get({fname!r}) in (None, '')"
                body.append(f"    if {cond}: raise _Bail")
        body.append("    return out")
        lines.extend(body)
        return name

    top = func(root)
    lines.append(f"def validate(fact, u):\n    return {top}(fact, u, '')")
    source = "\n".join(lines)
    return source, define(source, ns, "validate")
