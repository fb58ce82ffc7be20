"""The optional C accelerator (``stoprule.engine._speedups``): a backend behind the
evaluator's ``Runner`` seam, and the programs it runs, built from a compiled pack.

:func:`c_backend` is the :class:`~stoprule.engine.protocols.Backend` it plugs in as, built from
the evaluator's :class:`~stoprule.engine.plan.Plan` alone.

The C module (``src/stoprule/engine/_speedups.c``, built at install when a C compiler is
present; a failed build is tolerated) runs one fact at a time: it validates the fact against
:func:`schema_program`, writes the projection from :func:`projection_program` (the same text
as the generated Python projector), matches it on this thread's engine handles (rule names as
bits: :func:`names_program`) and decides the verdict: the first matched rule in winner order
gives a prototype verdict (:func:`verdict_program`) into which go the matches in that order,
the first high-risk stop matched, the winner's messages (:func:`message_program`, rendered as
the generated Python renderers render them) and the warnings. It takes only the common case:
every value valid, strings ASCII, aliases resolved, unknown keys at the fact's top level only
(the evaluator words their warnings, once per set of keys), some rule matched. For anything
else it returns None and the evaluator takes its Python path, which names the error.

It evaluates batches only (``evaluate_many``): a single evaluation, such as a hook's, runs in
Python and never loads it. Where the module is missing or was built for another program
layout, or with ``STOPRULE_SPEEDUPS=0`` in the environment, everything runs in Python, with
the same results (the conformance corpus, ``tests/conformance``, holds both to that).
"""

from __future__ import annotations

import json
import os
import re
import sys

from stoprule.engine import projection
from stoprule.engine.compiled import CompiledPolicy, Slot
from stoprule.engine.durable import _float, encode
from stoprule.facts.schema import FactField, _clone
from stoprule.language.templates import UNSET, _parts, _show_one
from stoprule.limits import SAFE_INT

__all__ = [
    "FORMAT",
    "HELPERS",
    "c_backend",
    "load",
    "message_program",
    "names_program",
    "projection_program",
    "runner_args",
    "schema_program",
    "verdict_program",
]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from stoprule.engine._speedups import Runner as NativeRunner
    from stoprule.engine.plan import Plan
    from stoprule.engine.protocols import Runner
    from stoprule.language.templates import Template

FORMAT = 5  # the program layout this module writes (the C module's FORMAT)
_KINDS = {"bool": 1, "string": 2, "int": 3, "number": 4, "enum": 5, "object": 6, "list": 7}
_CONST, _LIST, _DICT, _CLONE = 1, 2, 3, 4  # how a default is made
_LENGTH, _SCALARS, _EMPTY_ROWS, _ROWS = range(4)  # what a list writes beside its length


def load() -> Any:
    """The C module, or None (not built, another layout, or ``STOPRULE_SPEEDUPS=0``)."""
    if os.environ.get("STOPRULE_SPEEDUPS", "1") == "0":
        return None
    try:
        import stoprule.engine._speedups as _speedups
    except ImportError:
        return None
    return _speedups if getattr(_speedups, "FORMAT", None) == FORMAT else None


def schema_program(f: FactField) -> tuple[Any, ...]:
    """``(kind, nullable, enum values, fields, lookup, list item)``; a field is ``(name, program,
    required, how its default is made, the default, index of its required_if field or -1)``;
    the lookup maps each field's name to its index and each alias to its index + len(fields)."""
    fields = lookup = None
    if f.type == "object":
        names = list(f.fields)
        fields = tuple(
            (
                sys.intern(name),  # a fact's keys written in Python source are interned: found by identity
                schema_program(ff),
                int(ff.required),
                *_default(ff),
                names.index(ff.required_if) if ff.required_if in names else -1,
            )
            for name, ff in f.fields.items()
        )
        # a field's own name gives its index, an alias its index + the number of fields
        lookup = {sys.intern(k): names.index(n) + (len(names) if k != n else 0) for k, n in f.lookup.items()}
    item = schema_program(f.items) if f.type == "list" and f.items is not None else None
    values = frozenset(f.values) if f.type == "enum" else None
    return (_KINDS[f.type], int(f.nullable), values, fields, lookup, item)


def _default(f: FactField) -> tuple[int, Any]:
    if not f.has_default:
        return 0, None
    dv = f.default
    if dv is None or type(dv) in (bool, int, str, float):
        return _CONST, dv
    if dv == [] and type(dv) is list:
        return _LIST, None
    if dv == {} and type(dv) is dict:
        return _DICT, None
    return _CLONE, dv


def _slot(s: Slot, scope: FactField | None) -> tuple[str, tuple[str, ...], int, Any]:
    prefix = f",{json.dumps(s.key)}:"  # as the generated projector writes it
    enc, extra = projection.slot_encoding(s, scope, prefix)
    return (prefix, tuple(map(sys.intern, s.path)), enc, extra)


def projection_program(compiled: CompiledPolicy) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """``(slots, lists)`` writing the whole projection (one text for every ruleset), in the
    generated projector's order: a slot is ``(prefix, path, encoding, extra)``, a list
    ``(length prefix, items prefix, path, what it writes, rows of scalars, item slots)``."""
    root = compiled.schema.root
    slots = tuple(_slot(s, root) for s in compiled.slots)
    lists = []
    for ls in compiled.lists:
        list_field = projection.field_of(root, ls.path)
        scope = list_field.items if list_field is not None else None
        if not ls.items:
            mode = _LENGTH
        elif ls.scalar:
            mode = _SCALARS
        elif not ls.item_slots:
            mode = _EMPTY_ROWS
        else:
            mode = _ROWS
        item_slots = tuple(_slot(s, scope) for s in ls.item_slots) if mode == _ROWS else ()
        scalar_rows = int(any(not s.path for s in ls.item_slots))
        path = tuple(map(sys.intern, ls.path))
        lists.append((f",{json.dumps(ls.len_key)}:", f",{json.dumps(ls.key)}:", path, mode, scalar_rows, item_slots))
    return slots, tuple(lists)


def names_program(engine_names: list[str]) -> tuple[dict[str, tuple[int, int]], dict[str, int]] | None:
    """Bits for the engine's rule names, which must each be a letter and a number
    (``r12``, ``h0``): ``({letter: (first bit, count)}, {name: bit})``, or None."""
    numbers: dict[str, int] = {}
    for name in engine_names:
        m = re.fullmatch(r"([a-z])(0|[1-9][0-9]{0,5})", name)
        if m is None:
            return None
        numbers[m[1]] = max(numbers.get(m[1], 0), int(m[2]) + 1)
    letters, first = {}, 0
    for letter in sorted(numbers):
        letters[letter] = (first, numbers[letter])
        first += numbers[letter]
    bits = {name: letters[name[0]][0] + int(name[1:]) for name in engine_names}
    return letters, bits


def runner_args(compiled: CompiledPolicy) -> tuple[Any, ...] | None:
    """The pack's part of a Runner's arguments (schema, slots, lists, names, bits), or None
    where the accelerator does not apply: a pack whose rulesets each read a subset, that
    rejects unknown fields (the runner lists them as warnings), or with rules the engine cannot
    hold, decided by the reference interpreter (``in_python``)."""
    if compiled.ruleset_keys is not None or compiled.schema.root.additional == "reject" or compiled.in_python:
        return None
    names = [r.engine_name for r in compiled.rules] + [s.engine_name for s in compiled.stops]
    naming = names_program(names)
    if naming is None:
        return None
    slots, lists = projection_program(compiled)
    return schema_program(compiled.schema.root), slots, lists, naming


def message_program(tpl: Template, sets: dict[str, tuple[Any, ...]]) -> tuple[Any, ...]:
    """A message template as the C runner renders it: literal strs (``{@set}`` placeholders
    written in) and fields ``(path, text shown when the value is missing, null or empty)``;
    a path step ``name[]`` is written ``(name,)``."""
    return tuple(part if isinstance(part, str) else _message_field(*part) for part in _parts(tpl, sets))


def _message_field(path: tuple[str, ...], fallback: str | None) -> tuple[tuple[Any, ...], str]:
    steps = tuple((sys.intern(s[:-2]),) if s.endswith("[]") else sys.intern(s) for s in path)
    return steps, UNSET if fallback is None else fallback


def verdict_program(
    prototype: Any, messages: tuple[tuple[int, Template], ...], sets: dict[str, tuple[Any, ...]]
) -> tuple[Any, tuple[tuple[int, tuple[Any, ...]], ...]]:
    """A winning rule's verdict as the C runner takes it: ``(prototype, ((index, message program),
    ...))``, a constant message written into the prototype (the runner puts in the matches, the
    high-risk stop and the warnings)."""
    items, left = list(prototype), []
    for at, tpl in messages:
        program = message_program(tpl, sets)
        if all(isinstance(part, str) for part in program):
            items[at] = "".join(program)
        else:
            left.append((at, program))
    return tuple.__new__(type(prototype), items), tuple(left)


def c_backend(plan: Plan) -> Runner | None:
    """The C accelerator for this thread (a :class:`~stoprule.engine.protocols.Backend`): ``fact ->
    Verdict``, or None for a fact it leaves to the Python path; None where it is not built or
    does not apply to the pack."""
    module = load()
    args = None if module is None else runner_args(plan.compiled)
    if module is None or args is None:
        return None
    schema, slots, lists, (letters, bits) = args
    owner, handles = plan.thread_handles()
    sets = plan.compiled.sets
    ranked = tuple(  # the rules in winner order: each as the runner builds the verdict it wins
        (bits[w.engine_name], w.match, *verdict_program(w.prototype, w.messages, sets)) for w in plan.winners
    )
    stops = tuple((bits[name], stop_id) for name, stop_id in plan.stops)
    unknown = plan.unknown_warnings

    def warn(found: list[str]) -> tuple[dict[str, str], ...]:
        return tuple(unknown(found))

    native: type[NativeRunner] = module.Runner  # its arguments: _speedups.pyi
    runner = native(
        schema,
        slots,
        lists,
        tuple(handles),
        plan.engine_library,
        HELPERS,
        letters,
        tuple(bits[n] for n in plan.always),
        ranked,
        stops,
        plan.filled,
        warn,
        owner,
        SAFE,
    )
    run: Runner = runner.run
    return run


# (clone a default, encode any value, encode a float, write an object into a message)
HELPERS = (_clone, encode, _float, _show_one)
SAFE = SAFE_INT  # fact integers the runner takes (larger ones: left to the Python path)
