"""Lower a checked policy to durable_rules rulesets over a projected fact.

    lower  every rule's and high-risk stop's condition -> engine JSON in negation normal
           form (simplified, quantifier bodies split, DNF size bounded), over slot keys
           that the evaluator's projector fills from the fact
    build  chunk into rulesets, have the engine create each once, assemble the
           :class:`~stoprule.engine.compiled.CompiledPolicy`

Operators lower themselves (:mod:`stoprule.language.operators`); this module adds the
"absent or null" cases, field operands and quantifiers.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from stoprule import codes
from stoprule.diagnostic import Diagnostic
from stoprule.diagnostics import QuantifierError
from stoprule.engine.compiled import CompiledPolicy, ListSlot, RuleMeta, Slot, StopMeta, VerdictMeta
from stoprule.engine.durable import check_ruleset, encode
from stoprule.engine.simplify import dnf_size, simplify, split_quantifiers
from stoprule.facts.schema import FactField, can_be_absent
from stoprule.language import conditions as C
from stoprule.language.checked import CheckedPolicy
from stoprule.language.operators import OPERATORS, PresenceArgs
from stoprule.limits import ENGINE_MAX_FACT_PROPERTIES, MAX_PACK_ALTERNATIVES

__all__ = ["ENGINE_PRI_MAX", "MAX_DNF", "RULES_PER_RULESET", "Lowered", "build_policy", "lower_policy"]

RULES_PER_RULESET = 64
ENGINE_PRI_MAX = 65535
MAX_DNF = 4096
ALWAYS: Json = {"$and": [{"_": 1}]}  # a lowered condition that holds for every fact
Json = dict[str, Any]


@dataclass(frozen=True)
class Lowered:
    """Engine rules by name (``h<i>`` stops, ``r<i>`` rules) and the slots they read."""

    rules: list[tuple[str, Json]]
    slots: tuple[Slot, ...]
    lists: tuple[ListSlot, ...]
    # rules and stops the engine would decide inexactly: decided by the reference interpreter
    in_python: tuple[str, ...] = ()


def _diag(loc: C.Loc, code: str, message: str) -> Diagnostic:
    return Diagnostic(loc.file, loc.line, loc.column, code, message, loc.path)


def _has_projected(c: C.Cond) -> bool:
    return any(isinstance(n, C.Atom) and OPERATORS[n.op].projected for n in C.iter_nodes(c))


ListKey = tuple[tuple[str, ...], bool]  # a list's path, and whether scalar items are projected as rows


class _Lowerer:
    """Conditions -> engine JSON in negation normal form over projected keys."""

    def __init__(self, root: FactField, diags: list[Diagnostic]) -> None:
        self.root = root
        self.diags = diags
        self.slots: dict[tuple[Any, ...], Slot] = {}
        self.lists: dict[ListKey, ListSlot] = {}
        self.inexact = False  # the condition being lowered has a comparison the engine rounds

    def slot(self, path: tuple[str, ...], fld: FactField, test: tuple[str, Any] | None = None) -> str:
        k = (path, _freeze(test))
        s = self.slots.get(k)
        if s is None:
            prefix = "t" if test else "f"
            n = sum(1 for x in self.slots.values() if x.key[0] == prefix)
            s = Slot(f"{prefix}{n}", path, test is None and fld.type in ("object", "list"), test)
            self.slots[k] = s
        return s.key

    def list_slot(self, path: tuple[str, ...], fld: FactField, rows: bool = False) -> ListKey:
        """The list at ``path``; ``rows``: scalar items projected as rows (for projected tests)."""
        k = (path, rows)
        if k not in self.lists:
            n = len(self.lists)
            assert fld.items is not None
            self.lists[k] = ListSlot(f"l{n}", f"n{n}", path, fld.items.type != "object" and not rows)
        return k

    def item_key(
        self, lk: ListKey, path: tuple[str, ...], test: tuple[str, Any] | None = None, fld: FactField | None = None
    ) -> str:
        ls = self.lists[lk]  # always the current slot: it is replaced as items are added
        if ls.scalar:
            return "$i"
        for s in ls.item_slots:
            if s.path == path and _freeze(s.test) == _freeze(test):
                return "$i." + s.key
        # an object or list field of the items is read only for its presence: a marker, as at the top
        marker = test is None and fld is not None and fld.type in ("object", "list")
        s = Slot(f"g{len(ls.item_slots)}", path, marker, test)
        self.lists[lk] = ls._replace(item_slots=(*ls.item_slots, s))
        return "$i." + s.key

    @staticmethod
    def missing(key: str, absent: bool, nullable: bool) -> list[Json]:
        out: list[Json] = []
        if absent:
            out.append({"$nex": {key: 1}})
        if nullable:
            out.append({key: None})
        return out

    def lower(self, c: C.Cond, neg: bool, ls: ListKey | None) -> Json:
        if isinstance(c, C.Const):
            return {"_": 1 if c.value != neg else 0}
        if isinstance(c, C.Not):
            return self.lower(c.item, not neg, ls)
        if isinstance(c, (C.AllOf, C.AnyOf)):
            parts = [self.lower(i, neg, ls) for i in c.items]
            conj = isinstance(c, C.AllOf) != neg
            if len(parts) == 1:
                return parts[0]
            return {"$and": parts} if conj else {"$or": parts}
        if isinstance(c, C.Quant):
            rows = c.fld.items.type != "object" and _has_projected(c.where)
            lk = self.list_slot(c.path, c.fld, rows)
            inner = self.lower(c.where, neg, lk)
            inner_ls = self.lists[lk]  # item slots were added while lowering ``where``
            if (c.kind == "some") != neg:
                return {"$iany": {inner_ls.key: inner}}
            return {"$or": [{inner_ls.len_key: 0}, {"$iall": {inner_ls.key: inner}}]}
        if isinstance(c, C.Atom):
            return self.atom(c, neg, ls)
        assert isinstance(c, (C.Ref, C.HighRisk)) and c.body is not None
        return self.lower(c.body, neg, ls)

    def atom(self, a: C.Atom, neg: bool, ls: ListKey | None) -> Json:
        fld: FactField = a.fld
        op = OPERATORS[a.op]
        # a pattern operator is decided while projecting: the slot names its test in stoprule.language.patterns
        test = (op.test.__name__, a.arg) if op.projected else None
        if ls is None:
            key = self.slot(a.path, fld, test)
            absent = can_be_absent(self.root, a.path)
        else:
            key = self.item_key(ls, a.path, test, fld) if a.path or test or not self.lists[ls].scalar else "$i"
            absent = bool(a.path)
        missing = self.missing(key, absent, fld.nullable)
        if op.presence:
            len_key = self.lists[self.list_slot(a.path, fld)].len_key if fld.type == "list" and ls is None else ""
            return op.lower(key, PresenceArgs(a.arg != neg, missing, len_key))[0]
        value: Any = a.arg
        guards: list[Json] = []
        if a.ref_path is not None:
            rkey = self.slot(a.ref_path, a.ref_fld)
            off = a.arg.get("offset", 0)
            # the engine adds in doubles: an integer value plus an integer offset is rounded
            # past 2**53, where a number field's float can tell the difference (an int field
            # cannot: its values stay within 2**53 - 1)
            if type(off) is int and off and fld.type == "number" and a.ref_fld.type in ("int", "number"):
                self.inexact = True
            value = {"$m": rkey}
            if off:
                value = {"$add" if off > 0 else "$sub": {"$l": {"$m": rkey}, "$r": abs(off)}}
            guards = [{"$neq": {key: None}}, {"$neq": {rkey: None}}]
            missing += self.missing(rkey, can_be_absent(self.root, a.ref_path), a.ref_fld.nullable)
        pos, negc = op.lower(key, value)
        if not neg:
            return {"$and": [pos, *guards]} if guards else pos
        if not op.negatable or negc is None:
            self.diags.append(
                _diag(a.loc, codes.CONDITION_UNSUPPORTED, f"{a.op} cannot be negated (the engine has no negated match)")
            )
            return {"_": 0}
        return {"$or": [negc, *missing]} if missing else negc

    def body(self, cond: C.Cond, loc: C.Loc) -> Json:
        """The engine condition of a rule's or stop's ``when`` (at ``loc``)."""
        try:
            lowered = split_quantifiers(simplify(self.lower(cond, False, None)))
        except QuantifierError as exc:
            self.diags.append(_diag(loc, codes.CONDITION_UNSUPPORTED, f"{exc} is not supported by the engine"))
            lowered = {"_": 0}
        # the always-present key anchors every alternative: one made only of `$nex` tests
        # would otherwise match any fact
        out = simplify({"$and": [{"_": 1}, lowered]})
        out = out if "$and" in out else {"$and": [out]}
        size = dnf_size(out)
        if size > MAX_DNF:
            self.diags.append(
                _diag(
                    loc,
                    codes.CONDITION_TOO_COMPLEX,
                    f"expands to {size} alternatives in the engine (limit {MAX_DNF}); split the rule",
                )
            )
        return out


def _freeze(v: Any) -> Any:
    if isinstance(v, (list, tuple)):
        return tuple(_freeze(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _freeze(x)) for k, x in v.items()))
    return (type(v).__name__, v)


def lower_policy(checked: CheckedPolicy, diags: list[Diagnostic]) -> Lowered:
    """Engine JSON for every stop and rule; problems go to ``diags``."""
    low = _Lowerer(checked.schema.root, diags)
    rules: list[tuple[str, Json]] = []
    in_python: list[str] = []
    for i, stop in enumerate(checked.stops):
        low.inexact = False
        rules.append((f"h{i}", {"all": [{"m": low.body(stop.when, stop.when_loc)}]}))
        if low.inexact:
            in_python.append(f"h{i}")
    for i, rule in enumerate(checked.rules):
        low.inexact = False
        m = low.body(rule.when, rule.when_loc)
        rules.append((f"r{i}", {"all": [{"m": m}], "pri": ENGINE_PRI_MAX - rule.priority}))
        if low.inexact:
            in_python.append(f"r{i}")
    # project only what the final rules read: simplification can drop conditions
    used = _used_keys([body for _, body in rules], set())
    slots = tuple(s for s in low.slots.values() if s.key in used)
    lists = tuple(
        ls._replace(items=ls.key in used, item_slots=tuple(s for s in ls.item_slots if s.key in used))
        for ls in low.lists.values()
        if ls.key in used or ls.len_key in used
    )
    return Lowered(rules, slots, lists, tuple(in_python))


def _used_keys(node: Any, out: set[str]) -> set[str]:
    """Every fact key the lowered JSON reads (``$i.`` prefixes stripped)."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "$m":
                out.add(v)
            elif not k.startswith("$") or k.startswith("$i."):
                out.add(k.removeprefix("$i."))
            _used_keys(v, out)
    elif isinstance(node, list):
        for v in node:
            _used_keys(v, out)
    return out


def _top_keys(body: Json) -> set[str]:
    """The projected top-level keys one engine rule reads (``_`` included)."""
    return {k for k in _used_keys(body, set()) if "." not in k and not k.startswith("g")} | {"_"}


def _chunks(
    checked: CheckedPolicy, lowered: Lowered, diags: list[Diagnostic]
) -> tuple[list[list[tuple[str, Json]]], list[set[str]]]:
    """Rules in declaration order, cut into rulesets of at most RULES_PER_RULESET rules that
    each read at most ENGINE_MAX_FACT_PROPERTIES projected keys."""
    locs = {f"h{s.index}": s.when_loc for s in checked.stops} | {f"r{r.index}": r.when_loc for r in checked.rules}
    chunks: list[list[tuple[str, Json]]] = []
    keys: list[set[str]] = []
    cur: list[tuple[str, Json]] = []
    cur_keys: set[str] = set()
    for name, body in lowered.rules:
        ks = _top_keys(body)
        if len(ks) > ENGINE_MAX_FACT_PROPERTIES:
            diags.append(
                _diag(
                    locs[name],
                    codes.LIMIT_FACT_PROPERTIES,
                    f"reads {len(ks)} fact values (fields, list lengths and pattern tests); the engine takes"
                    f" {ENGINE_MAX_FACT_PROPERTIES} per rule: split the rule",
                )
            )
            continue
        if cur and (len(cur) >= RULES_PER_RULESET or len(cur_keys | ks) > ENGINE_MAX_FACT_PROPERTIES):
            chunks.append(cur)
            keys.append(cur_keys)
            cur, cur_keys = [], set()
        cur.append((name, body))
        cur_keys |= ks
    if cur:
        chunks.append(cur)
        keys.append(cur_keys)
    for ls in lowered.lists:
        if len(ls.item_slots) > ENGINE_MAX_FACT_PROPERTIES:
            where = checked.field_loc(ls.path) or checked.loc
            diags.append(
                _diag(
                    where,
                    codes.LIMIT_FACT_PROPERTIES,
                    f"rules read {len(ls.item_slots)} values of each element of {'.'.join(ls.path)}"
                    f" (limit {ENGINE_MAX_FACT_PROPERTIES})",
                )
            )
    return chunks, keys


def check_rulesets(rulesets: Sequence[dict[str, Any]]) -> str | None:
    """Create (and drop) each ruleset once; return the engine's complaint, if any."""
    for i, rs in enumerate(rulesets):
        problem = check_ruleset(rs)
        if problem:
            return f"the engine rejected ruleset {i}: {problem}"
    return None


def build_policy(checked: CheckedPolicy, lowered: Lowered, diags: list[Diagnostic]) -> CompiledPolicy | None:
    """Chunk into rulesets, have the engine create each once, and assemble the compiled policy."""
    alternatives = sum(dnf_size(body["all"][0]["m"]) for _, body in lowered.rules)
    if alternatives > MAX_PACK_ALTERNATIVES:
        diags.append(
            _diag(
                checked.loc,
                codes.LIMIT_ALTERNATIVES,
                f"the rules expand to {alternatives} alternatives in the engine (limit {MAX_PACK_ALTERNATIVES})",
            )
        )
        return None
    # a constant-true rule (a catch-all) would fire on every fact: the evaluator adds it
    always = tuple(name for name, body in lowered.rules if body["all"][0]["m"] == ALWAYS)
    in_python: list[str] = [n for n in lowered.in_python if n not in always]
    kept = [(n, b) for n, b in lowered.rules if n not in always and n not in in_python]
    in_engine = dataclasses.replace(lowered, rules=kept)
    parts, part_keys = _chunks(checked, in_engine, diags)
    if diags:
        return None
    chunks = [dict(part) for part in parts]
    # a rule the engine refuses on its own (one of its limits: expressions per rule, ...) is
    # decided in Python by the reference interpreter instead: a valid pack is never refused
    for chunk in chunks:
        if check_ruleset(chunk) is None:
            continue
        for name, body in list(chunk.items()):
            if check_ruleset({name: body}) is not None:
                del chunk[name]
                in_python.append(name)
        if check_ruleset(chunk) is not None:
            diags.append(_diag(checked.loc, codes.ENGINE_REJECTED, "the engine rejected a ruleset"))
            return None
    if any(not c for c in chunks):
        keep = [i for i, c in enumerate(chunks) if c]
        chunks = [chunks[i] for i in keep]
        part_keys = [part_keys[i] for i in keep]
    width = len(set().union(*part_keys)) if part_keys else 0
    ruleset_keys = None if width <= ENGINE_MAX_FACT_PROPERTIES else tuple(tuple(sorted(k)) for k in part_keys)
    return CompiledPolicy(
        name=checked.name,
        digest=checked.digest,
        files=checked.files,
        schema=checked.schema,
        slots=lowered.slots,
        lists=lowered.lists,
        ruleset_json=tuple(encode(c) for c in chunks),
        rules=tuple(
            RuleMeta(
                r.id,
                r.index,
                r.priority,
                r.verdict,
                r.reason,
                r.message,
                r.review_reason,
                r.loc.file,
                r.loc.line,
                f"r{r.index}",
            )
            for r in checked.rules
        ),
        stops=tuple(StopMeta(s.id, s.description, s.loc.file, s.loc.line, f"h{s.index}") for s in checked.stops),
        verdicts={
            v.name: VerdictMeta(v.name, v.ok, v.stop, v.requires_user_review, v.retryable, v.description)
            for v in checked.verdicts.values()
        },
        sets={name: s.members for name, s in checked.sets.items()},
        declarations=dict(checked.declarations),
        ruleset_keys=ruleset_keys,
        always=always,
        in_python=tuple(in_python),
        conditions=_conditions(checked),
    )


def _conditions(checked: CheckedPolicy) -> str:
    """Every rule's and stop's condition by engine name, as JSON text (see ``CompiledPolicy.conditions``)."""
    conds = {f"h{s.index}": s.when for s in checked.stops} | {f"r{r.index}": r.when for r in checked.rules}
    return C.dump_conditions(conds)
