"""Pack fuzzing helpers: a structure-aware mutator of the default pack, a generator of
small random packs and facts at the edges of every range (hypothesis strategies), and the
small random packs and facts of the audit and diff tests (:func:`random_pack`,
:func:`random_small_fact`).

Used by tests/engine/test_pack_fuzz.py and tests/analysis/; the tests print their figures with ``-s``.
"""

from __future__ import annotations

import copy
import random
import re
import sys
from pathlib import Path
from typing import Any

import yaml
from hypothesis import strategies as st

from stoprule.limits import SAFE_INT

REPO = Path(__file__).resolve().parent.parent
DEFAULT_PACK = REPO / "policies"

# ---------------------------------------------------------------- mutator

DIAG_LINE = re.compile(r"^[^\n]+:\d+:\d+: [a-z_]+\.[a-z_]+: [^\n]*$|^\.\.\. and \d+ more$")


def default_files() -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(DEFAULT_PACK.glob("*.yaml"))}


def _paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, (*prefix, i))
    return out


def _get(node: Any, path: tuple) -> Any:
    for p in path:
        node = node[p]
    return node


def _odd_value(rng: random.Random) -> Any:
    return rng.choice(
        [
            None,
            True,
            0,
            -1,
            2**63,
            -(2**63) - 1,
            10**30,
            1e308,
            float("nan"),
            float("inf"),
            -0.0,
            1e-9,
            "",
            "x" * rng.choice([1, 300, 5000]),
            "[!]]x",
            "*" * rng.choice([9, 20, 127]),
            "*a" * 10,
            "[" + "a" * 2000 + "]",
            "\u2028",
            "a\nb",
            "{x}",
            "{",
            "%d",
            [],
            {},
            [None],
            {"x": None},
            {"all": []},
            {"not": None},
            {"some": "errors"},
            ["a"] * 50,
            {"field": "turn", "offset": 2**62},
            {"gte": {"field": "max_turns", "offset": -(2**60)}},
            {"glob": "[z-a]"},
            {"in": "nope"},
        ]
    )


def _deep(rng: random.Random) -> Any:
    kind = rng.choice(["all", "any", "not", "list", "map"])
    depth = rng.choice([30, 70, 120, 400])
    v: Any = {"status": "failed"}
    for _ in range(depth):
        v = {"all": [v]} if kind == "all" else {"any": [v]} if kind == "any" else {"not": v} if kind == "not" else [v]
        if kind == "map":
            v = {"x": v}
    return v


def mutate_data(files: dict[str, Any], rng: random.Random) -> None:
    """Apply one structural mutation to the parsed files (in place)."""
    name = rng.choice(sorted(files))
    data = files[name]
    paths = [p for p in _paths(data) if p]
    if not paths:
        files[name] = _odd_value(rng)
        return
    path = rng.choice(paths)
    parent = _get(data, path[:-1])
    key = path[-1]
    op = rng.randrange(7)
    if op == 0:  # delete
        del parent[key]
    elif op == 1:  # duplicate (a list item, or a key under a new name)
        if isinstance(parent, list):
            parent.insert(key, copy.deepcopy(parent[key]))
        else:
            parent[f"{key}_2"] = copy.deepcopy(parent[key])
    elif op == 2:  # retype
        parent[key] = _odd_value(rng)
    elif op == 3:  # deep nesting
        parent[key] = _deep(rng)
    elif op == 4:  # non-string key
        if isinstance(parent, dict):
            parent[rng.choice([1, None, True, 2.5])] = parent.pop(key)
    elif op == 5:  # replace by another subtree of the pack
        other = _get(data, rng.choice(paths))
        parent[key] = copy.deepcopy(other)
    else:  # many copies
        if isinstance(parent, list):
            parent.extend(copy.deepcopy(parent[key]) for _ in range(rng.choice([2, 70, 300])))


def text_mutation(text: str, rng: random.Random) -> str | bytes:
    """Odd YAML the data mutations cannot produce."""
    op = rng.randrange(12)
    lines = text.splitlines(keepends=True)
    i = rng.randrange(len(lines)) if lines else 0
    if op == 0:
        return text + "\nx: !!python/object:os.system {}\n"
    if op == 1:
        bomb = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
        bomb += [f"a{k}: &a{k} [" + ", ".join([f"*a{k - 1}"] * 9) + "]" for k in range(1, 10)]
        return "sets:\n" + "".join(f"  {b}\n" for b in bomb) + text
    if op == 2:
        return "rules: " + "[" * 100_000 + "]" * 100_000 + "\n"
    if op == 3:
        return text + "\n? [a, b]\n: c\n"
    if op == 4:
        return bytes(rng.randrange(256) for _ in range(rng.choice([10, 500])))
    if op == 5:
        return text[: rng.randrange(len(text) + 1)]
    if op == 6:
        return "".join(lines[:i]) + "\x00\t\r" + "".join(lines[i:])
    if op == 7:
        return text + "\nsets:\n  z: &z [1, *z]\n"
    if op == 8:
        return "sets:\n  big: [1" + "0" * 5000 + "]\n" + text
    if op == 9:
        return "\ufeff" + text.replace(": ", ": &q" + str(rng.randrange(9)) + " ", 1)
    if op == 10:
        return text + "\n---\nrules: []\n"
    return text + '\nsets:\n  s: ["\\ud800", "\\x00"]\n'


def mutated_pack(root: Path, rng: random.Random) -> Path:
    """Write a mutation of the default pack to ``root`` (1-3 mutations; sometimes odd text)."""
    texts = default_files()
    root.mkdir(parents=True, exist_ok=True)
    if rng.random() < 0.3:
        name = rng.choice(sorted(texts))
        out: dict[str, str | bytes] = dict(texts)
        out[name] = text_mutation(texts[name], rng)
    else:
        data = {k: yaml.safe_load(v) for k, v in texts.items()}
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(20_000)  # copying and dumping recurse on deep mutations
        try:
            for _ in range(rng.randint(1, 3)):
                mutate_data(data, rng)
            out = {k: yaml.safe_dump(v, allow_unicode=rng.random() < 0.5, width=10_000) for k, v in data.items()}
        finally:
            sys.setrecursionlimit(limit)
    if rng.random() < 0.05:
        out["weird\nname.yaml"] = "rules: 3\n"
    for name, content in out.items():
        path = root / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8", errors="surrogatepass")
    return root


# ---------------------------------------------------------------- generated packs

EDGE_INTS = [0, 1, -1, 2, SAFE_INT, -SAFE_INT, SAFE_INT - 1, -SAFE_INT + 1, 2**31, -(2**31) - 1, 2**53 - 2]
EDGE_FLOATS = [
    0.0,
    -0.0,
    0.5,
    -1.5,
    1e-9,
    1e-300,
    5e-324,
    1e300,
    -1e300,
    2.0**53,
    1.7976931348623157e308,
    1e16,
    2.0**53 + 2,
    -(2.0**53),
    -(2.0**53) - 2,
    2.0**53 - 1,
]  # beside int + offset sums past 2**53
CHARS = 'ab]!-^%*?[\\"\n\u2028é日 '
GLOB_PARTS = ["*", "?", "a", "b", "[!]]", "[]]", "[a-c]", "[]-a]", "[^]", "[!^-]", "\\*", "\\\\", "[%]", "é", '"', "\n"]

SCHEMA = {
    "i1": {"type": "int"},
    "i2": {"type": "int", "nullable": True},
    "n1": {"type": "number"},
    "n2": {"type": "number", "default": 0.5},
    "s1": {"type": "string", "nullable": True},
    "s2": {"type": "string"},
    "e1": {"type": "enum", "values": ["a", "b", "c"]},
    "b1": {"type": "bool"},
    "tags": {"type": "list", "default": [], "items": {"type": "string"}},
    "nums": {"type": "list", "items": {"type": "number"}},
    "objs": {
        "type": "list",
        "default": [],
        "items": {
            "type": "object",
            "fields": {
                "k": {"type": "string"},
                "v": {"type": "int", "nullable": True},
                # an object field of the items: its presence is read inside some/every
                "o": {"type": "object", "nullable": True, "fields": {"c": {"type": "int"}}},
            },
        },
    },
    "o": {"type": "object", "nullable": True, "fields": {"x": {"type": "int"}, "y": {"type": "string"}}},
}
NUMERIC = {"i1": "int", "i2": "int", "n1": "number", "n2": "number", "o.x": "int"}
STRINGS = ["s1", "s2", "o.y"]

ints = st.one_of(st.sampled_from(EDGE_INTS), st.integers(-SAFE_INT, SAFE_INT), st.integers(-5, 5))
floats = st.one_of(st.sampled_from(EDGE_FLOATS), st.floats(allow_nan=False, allow_infinity=False))
texts = st.text(alphabet=CHARS, max_size=5)
globs = st.lists(st.sampled_from(GLOB_PARTS), max_size=6).map("".join)


def _num(ftype: str) -> st.SearchStrategy[Any]:
    return ints if ftype == "int" else st.one_of(ints, floats)


def _scalar_atom(field: str, ftype: str) -> st.SearchStrategy[dict[str, Any]]:
    if ftype in ("int", "number"):
        ops = st.sampled_from(["eq", "ne", "lt", "lte", "gt", "gte"])
        operand = st.one_of(
            _num(ftype),
            st.builds(
                lambda f, off: {"field": f, "offset": off},
                st.sampled_from(sorted(NUMERIC)),
                st.one_of(st.just(0), ints, floats) if ftype == "number" else st.one_of(st.just(0), ints),
            ),
        )
        return st.builds(lambda op, a: {field: {op: a}}, ops, operand) | st.builds(
            lambda op, a: {field: {op: a}}, st.sampled_from(["in", "not_in"]), st.lists(_num(ftype), max_size=3)
        )
    if ftype == "string":
        return st.one_of(
            st.builds(lambda op, a: {field: {op: a}}, st.sampled_from(["eq", "ne"]), texts),
            st.builds(lambda a: {field: {"glob": a}}, globs),
            st.builds(
                lambda op, a: {field: {op: a}}, st.sampled_from(["starts_with", "ends_with"]), texts.filter(bool)
            ),
            st.builds(lambda op, a: {field: {op: a}}, st.sampled_from(["in", "not_in"]), st.lists(texts, max_size=3)),
        )
    if ftype == "enum":
        return st.builds(
            lambda op, a: {field: {op: a}}, st.sampled_from(["eq", "ne"]), st.sampled_from("abc")
        ) | st.builds(lambda a: {field: {"glob": a}}, st.sampled_from(["[a-b]", "?", "[!a]", "*"]))
    if ftype == "bool":
        return st.builds(lambda a: {field: a}, st.booleans())
    raise AssertionError(ftype)


def _presence(field: str, ops: list[str]) -> st.SearchStrategy[dict[str, Any]]:
    return st.builds(lambda op, a: {field: {op: a}}, st.sampled_from(ops), st.booleans())


def _atoms() -> st.SearchStrategy[dict[str, Any]]:
    parts = [_scalar_atom(f, t) for f, t in NUMERIC.items()]
    parts += [_scalar_atom(f, "string") for f in STRINGS]
    parts += [_scalar_atom("e1", "enum"), _scalar_atom("b1", "bool")]
    parts += [
        _presence("s1", ["exists", "null", "absent"]),
        _presence("i2", ["exists", "null", "absent"]),
        _presence("tags", ["exists", "empty"]),
        _presence("nums", ["exists", "absent", "empty"]),
        _presence("o", ["exists", "null", "absent"]),
        _presence("o.x", ["exists", "absent"]),
    ]
    item_tags = st.one_of(_scalar_atom("", "string"))
    item_nums = _scalar_atom("", "number").filter(lambda a: not isinstance(next(iter(a[""].values())), dict))
    item_objs = st.one_of(
        _scalar_atom("k", "string"),
        _scalar_atom("v", "int").filter(lambda a: not isinstance(next(iter(a["v"].values())), dict)),
        _presence("o", ["exists", "null", "absent"]),
        _presence("v", ["exists", "null", "absent"]),
    )
    for lst, where in (("tags", item_tags), ("nums", item_nums), ("objs", item_objs)):
        parts.append(st.builds(lambda k, w, lst=lst: {k: lst, "where": w}, st.sampled_from(["some", "every"]), where))
    return st.one_of(parts)


conditions = st.recursive(
    _atoms(),
    lambda inner: st.one_of(
        st.builds(lambda xs: {"all": xs}, st.lists(inner, min_size=1, max_size=3)),
        st.builds(lambda xs: {"any": xs}, st.lists(inner, min_size=1, max_size=3)),
        st.builds(lambda x: {"not": x}, inner),
    ),
    max_leaves=6,
)


# wide disjunctions: more alternatives than the engine holds at once when all of them match
wide_any = st.builds(
    lambda field, op, width, start: {"any": [{field: {op: start + k}} for k in range(width)]},
    st.sampled_from(["i1", "n1", "o.x"]),
    st.sampled_from(["gt", "gte", "lt", "ne"]),
    st.integers(30, 90),
    st.integers(-50, 5),
)
# long sequences: many field comparisons under one rule (the engine's expressions per rule)
_ref = st.builds(
    lambda a, op, b, off: {a: {op: {"field": b, "offset": off}}},
    st.sampled_from(sorted(NUMERIC)),
    st.sampled_from(["eq", "ne", "lt", "gte"]),
    st.sampled_from(sorted(NUMERIC)),
    st.one_of(st.just(0), st.integers(-3, 3), st.sampled_from([0.5, -1.5])),
)
long_sequences = st.builds(
    lambda groups: {"all": [{"any": g} for g in groups]},
    st.lists(st.lists(_ref, min_size=2, max_size=4), min_size=2, max_size=4),
)
rule_conditions = st.one_of(conditions, conditions, conditions, wide_any, long_sequences)


@st.composite
def packs(draw: st.DrawFn) -> dict[str, Any]:
    """One pack file's data: the fixed schema, 1-6 random rules and a catch-all."""
    rules = [
        {
            "id": f"r{i}",
            "priority": i + 1,
            "when": draw(rule_conditions),
            "verdict": "hit",
            "reason": f"r{i}",
            "message": "m",
        }
        for i in range(draw(st.integers(1, 6)))
    ]
    rules.append({"id": "z", "priority": 0, "when": True, "verdict": "pass", "reason": "z", "message": "m"})
    return {
        "schema": {"fields": SCHEMA},
        "verdicts": {"pass": {"ok": True, "stop": "allow"}, "hit": {"ok": False, "stop": "block"}},
        "high_risk_stops": [{"id": "risky", "description": "d", "when": draw(conditions)}],
        "rules": rules,
    }


def _maybe(draw: st.DrawFn, fact: dict[str, Any], key: str, value: st.SearchStrategy[Any]) -> None:
    if draw(st.booleans()):
        fact[key] = draw(value)


@st.composite
def facts(draw: st.DrawFn) -> dict[str, Any]:
    """Facts of the generated packs' schema with values at the edges of every range."""
    f: dict[str, Any] = {}
    _maybe(draw, f, "i1", ints)
    _maybe(draw, f, "i2", st.one_of(st.none(), ints))
    _maybe(draw, f, "n1", st.one_of(ints, floats))
    _maybe(draw, f, "n2", st.one_of(ints, floats))
    _maybe(draw, f, "s1", st.one_of(st.none(), texts))
    _maybe(draw, f, "s2", texts)
    _maybe(draw, f, "e1", st.sampled_from("abc"))
    _maybe(draw, f, "b1", st.booleans())
    _maybe(draw, f, "tags", st.lists(texts, max_size=3))
    _maybe(draw, f, "nums", st.lists(st.one_of(ints, floats), max_size=3))
    _maybe(
        draw,
        f,
        "objs",
        st.lists(
            st.fixed_dictionaries(
                {},
                optional={
                    "k": texts,
                    "v": st.one_of(st.none(), ints),
                    "o": st.one_of(st.none(), st.fixed_dictionaries({}, optional={"c": ints})),
                },
            ),
            max_size=3,
        ),
    )
    _maybe(draw, f, "o", st.one_of(st.none(), st.fixed_dictionaries({}, optional={"x": ints, "y": texts})))
    return f


# ---------------------------------------------------------------- small random packs (audit, diff)

RANDOM_SCHEMA = """
schema:
  fields:
    s: {type: string, nullable: true}
    t: {type: string}
    e: {type: enum, values: [a, b, c]}
    b: {type: bool, default: false}
    n: {type: int}
    m: {type: int, default: 5}
    x: {type: number, nullable: true}
    flag: {type: bool, default: false}
    note: {type: string, nullable: true, required_if: flag}
    o: {type: object, nullable: true, fields: {k: {type: string}, f: {type: bool, default: false}}}
    l:
      type: list
      default: []
      items: {type: object, fields: {k: {type: string, required: true}, v: {type: int, nullable: true}}}
    tags: {type: list, items: {type: string}}
verdicts:
  pass: {ok: true, stop: allow}
"""
RANDOM_ATOMS = [
    "{s: lit1}", "{s: {in: [lit1, lit2]}}", '{s: {glob: "a*"}}', "{s: {eq: {field: t}}}", "{s: {ne: {field: t}}}",
    "{s: {exists: true}}", "{s: {null: true}}", "{t: lit2}", '{t: {glob: "*z"}}', "{e: {in: [a, b]}}", "{e: c}",
    "{b: true}", "{n: {gte: 3}}", "{n: {lt: {field: m, offset: -1}}}", "{x: {gt: 0.5}}",
    "{x: {lte: {field: n, offset: 1}}}", "{o: {exists: true}}", "{o.k: lit1}", "{o.f: true}", '{"l[].k": lit1}',
    "{every: l, where: {v: {gte: 2}}}", '{"tags[]": {glob: "t*"}}', "{tags: {empty: false}}",
    "{tags: {absent: true}}", '{note: {glob: "*x*"}}', "{flag: true}", "{m: {eq: {field: n}}}",
    '{"l[].v": {null: true}}',
]  # fmt: skip


def random_cond(rng: random.Random, depth: int = 0) -> str:
    r = rng.random()
    if depth >= 2 or r < 0.45:
        return rng.choice(RANDOM_ATOMS)
    if r < 0.9:
        parts = ", ".join(random_cond(rng, depth + 1) for _ in range(rng.randint(2, 3)))
        return ("{all: [" if r < 0.7 else "{any: [") + parts + "]}"
    return "{not: " + random_cond(rng, depth + 1) + "}"


def random_pack(rng: random.Random) -> str:
    rules = [
        f"  - {{id: r{i}, priority: {rng.randint(1, 3)}, when: {random_cond(rng)}, verdict: pass, "
        f"reason: x{rng.randint(0, 3)}, message: m}}"
        for i in range(rng.randint(3, 7))
    ]
    if rng.random() < 0.3:
        rules.append("  - {id: z, priority: 0, when: true, verdict: pass, reason: z, message: m}")
    return RANDOM_SCHEMA + "rules:\n" + "\n".join(rules) + "\n"


def random_small_fact(rng: random.Random) -> dict[str, Any]:
    f: dict[str, Any] = {}
    strs = ["lit1", "lit2", "abc", "a", "zz", "tz", "", "q"]
    pools = {
        "s": [*strs, None], "t": strs, "e": ["a", "b", "c"], "b": [True, False],
        "n": list(range(-1, 8)), "m": list(range(8)), "x": [None, 0, 0.5, 0.75, 1, 2.5, 5],
    }  # fmt: skip
    for key, pool in pools.items():
        if rng.random() < 0.7:
            f[key] = rng.choice(pool)
    if rng.random() < 0.3:
        f["flag"], f["note"] = True, rng.choice(["x", "axb"])
    elif rng.random() < 0.5:
        f["note"] = rng.choice(["x", None, "", "zxz"])
    if rng.random() < 0.6:
        f["o"] = None if rng.random() < 0.2 else {"k": rng.choice(["lit1", "q"]), "f": rng.random() < 0.5}
    if rng.random() < 0.6:
        f["l"] = [{"k": rng.choice(["lit1", "q"]), "v": rng.choice([None, 1, 2, 3])} for _ in range(rng.randint(0, 3))]
    if rng.random() < 0.6:
        f["tags"] = [rng.choice(["t1", "x", "t", ""]) for _ in range(rng.randint(0, 3))]
    return f
