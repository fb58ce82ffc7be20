"""Evaluate facts against a compiled pack: validate, project, match, pick the winner.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

from stoprule._util.jsonout import dumps
from stoprule.diagnostics import EvaluationError, NoRuleMatched
from stoprule.engine import projection
from stoprule.engine.compiled import CompiledPolicy, ListSlot, RuleMeta, Slot, rank
from stoprule.engine.durable import Engine, EngineError, _float, _string, encode
from stoprule.engine.projection import field_of, slot_encoding
from stoprule.engine.verdict import Match, Verdict, prototype
from stoprule.facts.schema import MISSING, FactField
from stoprule.language.templates import renderer

__all__ = ["Evaluator", "Match", "Verdict", "prototype"]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any, Literal

    from stoprule.engine.plan import Plan
    from stoprule.engine.protocols import Backend
    from stoprule.facts.schema import FactSchema
    from stoprule.language.templates import Template

    # the verdict for one set of matched rules, given the validated fact (and its warnings)
    _Maker = Callable[..., "Verdict"]


def _template_list(compiled: CompiledPolicy) -> list[Template]:
    """The rules' messages (and review reasons, where given), in rule order."""
    tpls = []
    for r in compiled.rules:
        tpls.append(r.message)
        if r.review_reason:
            tpls.append(r.review_reason)
    return tpls


def _templates(compiled: CompiledPolicy) -> tuple[str, list[Callable[[dict[Any, Any]], str]]]:
    """The rules' message (and review reason, where given) renderers, in rule order, generated."""
    from stoprule.language.template_compiler import compile_templates

    return compile_templates(_template_list(compiled), compiled.sets)


def _item_writer(s: Slot, scope: FactField | None) -> Callable[[Any], str | None]:
    """``v -> ',"KEY":VALUE'`` for slot ``s`` (read below ``scope``), or None where nothing is
    written: what the generated projector appends for the value (see ``_json_item`` of
    :mod:`stoprule.engine.json_projector`)."""
    pre = f",{dumps(s.key)}:"
    if s.test is not None:
        test = slot_encoding(s, scope, "")[1]

        def write_test(v: Any) -> str | None:
            if type(v) is not str:
                return None
            x = test(v)
            return pre + (("true" if x else "false") if type(x) is bool else encode(x))

        return write_test
    enc, extra = slot_encoding(s, scope, pre)
    if enc == projection.MARKER:
        return lambda v: pre + ("true" if v is not None else "null")
    if enc == projection.BOOL:
        return lambda v: pre + "true" if v is True else pre + "false" if v is False else pre + encode(v)
    if enc == projection.ENUM:
        return lambda v: type(v) is str and extra.get(v) or pre + encode(v)
    if enc == projection.STRING:
        return lambda v: pre + (_string(v) if type(v) is str else encode(v))
    if enc == projection.INT:
        return lambda v: pre + (str(v) if type(v) is int else encode(v))
    if enc == projection.NUMBER:
        return lambda v: pre + (str(v) if type(v) is int else _float(v) if type(v) is float else encode(v))
    return lambda v: pre + encode(v)


def _slot_reader(s: Slot, scope: FactField | None) -> Callable[[Any, list[str]], None]:
    """``(var, out)``: slot ``s`` read from ``var`` along its path, its item appended to ``out``
    when present (see ``_reader`` of :mod:`stoprule.engine.json_projector`)."""
    write = _item_writer(s, scope)
    path = s.path

    def read(var: Any, out: list[str]) -> None:
        if path:
            cur = var
            for step in path[:-1]:
                cur = cur.get(step)
                if type(cur) is not dict:
                    return
            v = cur.get(path[-1], MISSING)
            if v is MISSING:
                return
        else:
            v = var
        item = write(v)
        if item is not None:
            out.append(item)

    return read


def _value_at(fact: dict[str, Any], path: tuple[str, ...]) -> Any:
    """The value at ``path`` through objects, or None (how the generated projector's parents read)."""
    cur: Any = fact
    for step in path:
        cur = cur.get(step) if type(cur) is dict else None
    return cur


def _direct_projector(
    slots: tuple[Slot, ...], lists: tuple[ListSlot, ...], root: FactField, keys: frozenset[str] | None = None
) -> Callable[[dict[str, Any]], str]:
    """What :func:`~stoprule.engine.json_projector.json_projector` generates, without generating
    code: the same text for every fact, for a process that projects a fact or two (compiling the
    projector costs more there)."""

    def wanted(key: str) -> bool:
        return keys is None or key in keys

    reads = any(wanted(s.key) for s in slots) or any(wanted(ls.len_key) or wanted(ls.key) for ls in lists)
    anchor = wanted("_") or not reads
    steps: list[Callable[[dict[str, Any], list[str]], None]] = []

    def top(s: Slot) -> Callable[[dict[str, Any], list[str]], None]:
        if len(s.path) < 2:
            return _slot_reader(s, root)
        at, last = s.path[:-1], _slot_reader(Slot(s.key, s.path[-1:], s.marker, s.test), field_of(root, s.path[:-1]))

        def read_nested(fact: dict[str, Any], out: list[str]) -> None:
            var = _value_at(fact, at)
            if type(var) is dict:
                last(var, out)

        return read_nested

    def listed(ls: ListSlot, length: bool, items: bool) -> Callable[[dict[str, Any], list[str]], None]:
        list_field = field_of(root, ls.path)
        item_scope = list_field.items if list_field is not None else None
        key, len_key = dumps(ls.key), dumps(ls.len_key)
        readers = [_slot_reader(s, item_scope) for s in ls.item_slots]
        any_item = any(not s.path for s in ls.item_slots)  # rows of scalars: every item is read

        def read_list(fact: dict[str, Any], out: list[str]) -> None:
            seq = _value_at(fact, ls.path)
            if type(seq) is not list:
                if length:
                    out.append(f",{len_key}:0")
                return
            if length:
                out.append(f",{len_key}:{len(seq)}")
            if not items:
                return
            if ls.scalar:
                out.append(f",{key}:" + encode(seq))
            elif not readers:
                out.append(f",{key}:[" + ",".join(["{}"] * len(seq)) + "]")
            else:
                rows = []
                for item in seq:
                    row: list[str] = []
                    if any_item or type(item) is dict:
                        for read in readers:
                            read(item, row)
                    rows.append("{" + "".join(row)[1:] + "}")
                out.append(f",{key}:[" + ",".join(rows) + "]")

        return read_list

    for s in slots:
        if wanted(s.key):
            steps.append(top(s))
    for ls in lists:
        length, items = wanted(ls.len_key), ls.items and wanted(ls.key)
        if length or items:
            steps.append(listed(ls, length, items))

    def project_direct(fact: dict[str, Any]) -> str:
        out = ['"_":1'] if anchor else []
        for step in steps:
            step(fact, out)
        out.append("}")
        return "".join(out) if anchor else "".join(out)[1:]

    return project_direct


# facts an evaluator decides without generated code (see Evaluator._use_code); a batch or a run of
# single facts longer than that generates and compiles it (tens of milliseconds, repaid over them)
DIRECT_FACTS = 64
AUTO = "auto"  # the default backend: the C accelerator where built (stoprule.engine.backends)


class Evaluator:
    """A compiled pack ready to evaluate facts (compile once, evaluate many).

    One path per fact: validate (:class:`~stoprule.facts.schema.FactSchema`), project
    (:func:`~stoprule.engine.json_projector.json_projector`), match (the engine; rules it cannot
    hold, and a fact that meets one of its limits, by the reference interpreter), decide and
    render (:meth:`_maker`).

    ``backend`` evaluates batches faster: a :class:`~stoprule.engine.protocols.Backend`, a name
    for :func:`~stoprule.engine.backends.select_backend` (default ``auto``: the C accelerator
    where built), or None (the Python path only). It is given :meth:`plan`, nothing else.
    """

    def __init__(self, compiled: CompiledPolicy, backend: Backend | str | None = AUTO) -> None:
        self.compiled = compiled
        self.digest = compiled.digest
        self._engine = Engine(compiled.ruleset_json, compiled.always)
        self._rules = {r.engine_name: r for r in compiled.rules}
        # position in the winner order; the winner has the lowest
        self._rank = {r.engine_name: i for i, r in enumerate(rank(compiled.rules))}
        self._match = {r.engine_name: Match(r.id, r.verdict, r.reason) for r in compiled.rules}
        self._stops = {s.engine_name: s for s in compiled.stops}
        self._stop_order = [s.engine_name for s in compiled.stops]
        # verdict makers by set of matched rules
        self._makers: dict[frozenset[str], _Maker] = {}
        self._conditions: dict[str, Any] | None = None  # read from their JSON text on first need
        self._backend = backend
        self._runners: Any = None  # threading.local: this thread's backend runner
        self._plan: Plan | None = None
        self._direct_left = DIRECT_FACTS  # facts left to evaluate before the code is generated
        self._use_code(generated=False)

    def _use_code(self, generated: bool) -> None:
        """Project, validate and render with the generated code (compiled once per process: tens
        of milliseconds, repaid over a batch) or without it (the same results, nothing compiled:
        a fact or two in a short-lived process such as the stop hook)."""
        c = self.compiled
        if generated:
            from stoprule.engine.json_projector import projectors

            parts = [fn for _, fn in projectors(c)]
            renderers = iter(_templates(c)[1])
        else:
            subsets = [None] if c.ruleset_keys is None else [frozenset(k) for k in c.ruleset_keys]
            parts = [_direct_projector(c.slots, c.lists, c.schema.root, keys) for keys in subsets]
            renderers = iter(renderer(t, c.sets) for t in _template_list(c))
        # the projection, JSON-encoded: one text for every ruleset, or one per ruleset when each
        # reads a subset of it (a projection too wide for the engine)
        self._project_parts = parts
        self._project_json = parts[0] if c.ruleset_keys is None else None
        # message templates: rendered only for the winning rule
        self._messages = {
            r.engine_name: (next(renderers), next(renderers) if r.review_reason else None) for r in c.rules
        }
        self._check = c.schema.check if generated else c.schema.check_direct
        self._generated = generated
        self._makers = {}  # made with the renderers above from now on

    def _count(self, n: int) -> None:
        """Count ``n`` facts evaluated without generated code; past :data:`DIRECT_FACTS`, generate it."""
        if not self._generated:
            self._direct_left -= n
            if self._direct_left <= 0:
                self._use_code(generated=True)

    @property
    def schema(self) -> FactSchema:
        return self.compiled.schema

    @property
    def backend(self) -> str:
        """The name of the backend evaluating this thread's batches (``python``: none plugged
        in, or the default one does not apply: no accelerator built, or not for this pack)."""
        from stoprule.engine.batches import backend_name

        return backend_name(self)

    def validate(self, fact: Any) -> dict[str, Any]:
        """The fact as the rules see it (aliases resolved, defaults filled) or FactError."""
        schema = self.compiled.schema
        return schema.validate(fact) if self._generated else schema._validate(fact)

    def evaluate(self, fact: Any, *, strict: bool = False) -> Verdict:
        """Validate and evaluate one fact; raises :class:`FactError` if it is invalid (with
        ``strict``, also for an unknown field) and :class:`NoRuleMatched` if no rule decides it.
        Unknown fields are otherwise listed in the verdict's ``warnings``."""
        if not self._generated:
            self._count(1)
        data, warnings = self._check(fact)
        if warnings and strict:
            from stoprule.facts.errors import strict_error

            raise strict_error(warnings)
        return self._decide(data, self._data_matcher()(data), tuple(warnings))

    def _data_matcher(self) -> Callable[[dict[str, Any]], set[str]]:
        """This thread's ``validated fact -> engine rule names``: the engine's matches, plus the
        rules decided in Python (``in_python``); every rule by the reference interpreter for a
        fact that meets one of the engine's limits while matching."""
        interpreted = self._interpreted
        in_python = self.compiled.in_python
        pj = self._project_json
        if pj is not None and not in_python:  # the common case, one call per fact
            mt = self._engine.text_matcher()

            def match_one(data: dict[str, Any]) -> set[str]:
                try:
                    return mt(pj(data))
                except EngineError:
                    return interpreted(data, None)

            return match_one
        if pj is not None:
            mt = self._engine.text_matcher()
            engine: Callable[[dict[str, Any]], set[str]] = lambda data: mt(pj(data))  # noqa: E731
        else:
            mts = self._engine.texts_matcher()
            parts = self._project_parts
            engine = lambda data: mts([project(data) for project in parts])  # noqa: E731

        def match(data: dict[str, Any]) -> set[str]:
            try:
                names = engine(data)
            except EngineError:
                return interpreted(data, None)
            if in_python:
                names |= interpreted(data, in_python)
            return names

        return match

    def _interpreted(self, data: dict[str, Any], only: tuple[str, ...] | None) -> set[str]:
        """The rules and stops (``only`` these, or all) whose condition holds for ``data``, by
        the reference interpreter."""
        conds = self._conditions
        if conds is None:
            from stoprule.language.conditions import load_conditions

            conds = self._conditions = load_conditions(self.compiled.conditions)
        from stoprule.engine.interpret import evaluate

        names = conds if only is None else only
        return {n for n in names if evaluate(conds[n], data)}

    def projection(self, fact: Any) -> list[dict[str, Any]]:
        """What the engine is given for ``fact`` (validated first): the projected keys, one dict
        per ruleset (a single dict when every ruleset is given the whole projection)."""
        from stoprule.engine.matches import projection

        return projection(self, fact)

    def evaluate_many(
        self, facts: Iterable[Any], *, on_error: Literal["raise", "return"] = "raise", strict: bool = False
    ) -> list[Verdict | EvaluationError]:
        """Evaluate facts in order; with ``on_error="return"`` a fact that cannot be decided
        yields its error (:func:`stoprule.engine.batches.evaluate_many`)."""
        from stoprule.engine.batches import evaluate_many

        if not self._generated:  # a batch long enough to repay it (or of unknown length) runs on generated code
            self._count(len(facts) if isinstance(facts, (list, tuple)) else DIRECT_FACTS)
        return evaluate_many(self, facts, on_error, strict, explicit=self._backend != AUTO)

    def plan(self) -> Plan:
        """What a backend evaluates this pack with (:func:`stoprule.engine.batches.plan`), made once."""
        from stoprule.engine.batches import plan

        return plan(self)

    def matched_rules(self, fact: Any) -> list[RuleMeta]:
        """Every rule whose condition holds, winner first."""
        from stoprule.engine.matches import matched_rules

        return matched_rules(self, fact)

    def _maker(self, names: set[str]) -> _Maker:
        """The verdict maker for a set of engine rule names: ``(data, warnings=()) -> Verdict``:
        winner, ranked matches and high-risk stop decided once per set, the winner's message
        (and review reason) rendered per fact."""
        key = frozenset(names)
        hit = self._makers.get(key)
        if hit is not None:
            return hit
        rank = self._rank
        order = sorted((n for n in names if n in rank), key=rank.__getitem__)
        if not order:
            raise NoRuleMatched()
        high_risk = next((self._stops[n].id for n in self._stop_order if n in names), None)
        proto, fills = self._prototype(order[0])
        head = (proto.ok, proto.verdict, proto.reason, proto.rule, proto.stop)
        tail = (high_risk, tuple(self._match[n] for n in order), self.digest)
        new: Any = tuple.__new__  # a Verdict is a tuple: built without its __new__'s Python frame
        render = fills[0][1]

        if len(fills) == 1:

            def make(data: dict[str, Any], warnings: tuple[dict[str, str], ...] = ()) -> Verdict:
                made: Verdict = new(Verdict, (*head, render(data), False, None, *tail, warnings))
                return made

        else:
            review = fills[1][1]

            def make(data: dict[str, Any], warnings: tuple[dict[str, str], ...] = ()) -> Verdict:
                made: Verdict = new(Verdict, (*head, render(data), True, review(data), *tail, warnings))
                return made

        if len(self._makers) >= 4096:  # the distinct match sets of a pack are few; bound it anyway
            self._makers.clear()
        self._makers[key] = make
        return make

    def _prototype(self, name: str) -> tuple[Verdict, tuple[tuple[int, Callable[..., str]], ...]]:
        """:func:`prototype` of rule ``name``, with the compiled renderers of its messages."""
        rule = self._rules[name]
        proto, messages = prototype(self.compiled, rule)
        render, render_review = self._messages[name]
        renderers = (render, render_review or render)  # by the messages' order: message, review reason
        return proto, tuple((at, renderers[i]) for i, (at, _) in enumerate(messages))

    def _decide(self, data: dict[str, Any], names: set[str], warnings: tuple[dict[str, str], ...] = ()) -> Verdict:
        return self._maker(names)(data, warnings)
