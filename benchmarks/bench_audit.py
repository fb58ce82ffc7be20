"""``stoprule audit`` and ``stoprule diff`` on generated packs of growing size.

Packs of N rules over 30 fields (10 enums of 5 values, 10 ints, 10 bools), each rule an
``all`` of 2-4 atoms, distinct priorities, and a catch-all; the ``lists`` variant adds
strings with glob/prefix patterns and two lists (strings, objects) read through
``some``/``every``. Each size runs in a fresh process (peak memory is its own); diff
compares the pack with a copy whose every tenth rule has another verdict.

    python benchmarks/bench_audit.py                       # 25 ... 1000, both variants
    python benchmarks/bench_audit.py --sizes 25 200 --variant plain --backend exhaustive --timeout 150

Targets (2 cores): audit of 200 rules <= 10 s, of 1,000 rules <= 60 s, peak memory <= 1 GB;
diff of 200 rules <= 60 s. Each row prints wall and CPU seconds and the 1-minute load
average after it (the machine is shared: CPU time is the steadier figure).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import tree_state  # noqa: E402

SIZES = (25, 50, 100, 200, 500, 1000)
ENUM_VALUES = ["v0", "v1", "v2", "v3", "v4"]


def schema(lists: bool) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for k in range(10):
        fields[f"e{k}"] = {"type": "enum", "values": ENUM_VALUES}
        fields[f"i{k}"] = {"type": "int"}
        fields[f"b{k}"] = {"type": "bool"}
    if lists:
        for k in range(3):
            fields[f"s{k}"] = {"type": "string"}
        fields["tags"] = {"type": "list", "items": {"type": "string"}}
        item = {"kind": {"type": "enum", "values": ENUM_VALUES}, "n": {"type": "int"}}
        fields["items"] = {"type": "list", "items": {"type": "object", "fields": item}}
    return fields


def atom(rng: random.Random, lists: bool) -> dict[str, Any]:
    kind = rng.choice(["enum", "int", "bool"] + (["string", "some", "every"] if lists else []))
    k = rng.randrange(10)
    if kind == "enum":
        op = rng.choice(["eq", "ne", "in"])
        arg: Any = rng.sample(ENUM_VALUES, 2) if op == "in" else rng.choice(ENUM_VALUES)
        return {f"e{k}": {op: arg}}
    if kind == "int":
        op = rng.choice(["lt", "lte", "gt", "gte", "eq"])
        if rng.random() < 0.2:
            return {f"i{k}": {op: {"field": f"i{(k + 1) % 10}", "offset": rng.randint(-3, 3)}}}
        return {f"i{k}": {op: rng.randint(-5, 5)}}
    if kind == "bool":
        return {f"b{k}": rng.random() < 0.5}
    if kind == "string":
        s = f"s{k % 3}"
        op = rng.choice(["glob", "starts_with", "ends_with", "eq"])
        arg = {
            "glob": rng.choice(["a*", "*b?", "[a-c]*x", "*.py", "src/*"]),
            "starts_with": rng.choice(["ab", "x"]),
            "ends_with": rng.choice([".md", "z"]),
            "eq": rng.choice(["main", "dev", "x.py"]),
        }[op]
        return {s: {op: arg}}
    if rng.random() < 0.5:
        where: dict[str, Any] = {"": {"glob": rng.choice(["a*", "*b", "x?"])}}
        return {kind: "tags", "where": where}
    where = {"kind": rng.choice(ENUM_VALUES), "n": {rng.choice(["lt", "gt"]): rng.randint(-3, 3)}}
    return {kind: "items", "where": where}


def pack(n: int, lists: bool, seed: int = 1, flip: bool = False) -> dict[str, Any]:
    rng = random.Random(seed)
    rules = []
    for i in range(n - 1):
        verdict = "block" if (i % 3 == 0) != (flip and i % 10 == 0) else "allow"
        rules.append(
            {
                "id": f"r{i}",
                "priority": n - i,
                "when": {"all": [atom(rng, lists) for _ in range(rng.randint(2, 4))]},
                "verdict": verdict,
                "reason": f"r{i}",
                "message": "m",
            }
        )
    rules.append({"id": "catch_all", "priority": 0, "when": True, "verdict": "allow", "reason": "ok", "message": "m"})
    return {
        "schema": {"fields": schema(lists)},
        "verdicts": {"allow": {"ok": True, "stop": "allow"}, "block": {"ok": False, "stop": "block"}},
        "rules": rules,
    }


def write(root: Path, data: dict[str, Any]) -> Path:
    import yaml

    root.mkdir(parents=True, exist_ok=True)
    (root / "pack.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    return root


def child(args: argparse.Namespace) -> None:
    """One measurement in this process: prints a JSON line."""
    from stoprule.analysis import audit_pack, diff_packs
    from stoprule.analysis.backends import engine_of
    from stoprule.engine.build import compile_pack
    from stoprule.engine.evaluator import Evaluator

    with tempfile.TemporaryDirectory() as tmp:
        lists = args.variant == "lists"
        a = write(Path(tmp) / "a", pack(args.size, lists))
        t0 = time.perf_counter()
        ctx = compile_pack(a)
        compile_s = time.perf_counter() - t0
        t0, c0 = time.perf_counter(), time.process_time()
        if args.what == "audit":
            r = audit_pack(
                ctx.checked, backend=args.backend, timeout=args.timeout, engine=engine_of(Evaluator(ctx.compiled))
            )
            out = {"findings": len(r.findings), "unanswered": len(r.unanswered), "bugs": len(r.bugs),
                   "backend": r.backend}  # fmt: skip
        else:
            b = write(Path(tmp) / "b", pack(args.size, lists, flip=True))
            ctx_b = compile_pack(b)
            t0, c0 = time.perf_counter(), time.process_time()
            d = diff_packs(ctx.checked, ctx_b.checked, backend=args.backend, timeout=args.timeout)
            out = {"changes": len(d.changes), "unanswered": len(d.unanswered), "backend": d.backend}
        secs, cpu = time.perf_counter() - t0, time.process_time() - c0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    res = {"seconds": round(secs, 2), "cpu": round(cpu, 2), "compile": round(compile_s, 2), "peak_mb": round(peak)}
    print(json.dumps({**res, **out}))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", type=int, nargs="*", default=list(SIZES))
    p.add_argument("--variant", choices=["plain", "lists", "both"], default="both")
    p.add_argument("--backend", default="solver", choices=["auto", "exhaustive", "solver"])
    p.add_argument("--timeout", type=float, default=None, help="seconds per run (the audit's own --timeout)")
    p.add_argument("--what", choices=["audit", "diff", "both"], default="both")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--size", type=int, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        child(args)
        return
    print(f"bench_audit: {tree_state()}; backend {args.backend}; timeout {args.timeout}")
    print(f"{'variant':<8}{'rules':>6}  {'what':<6}{'seconds':>9}{'cpu s':>9}{'peak MB':>9}{'load':>6}  result")
    variants = ["plain", "lists"] if args.variant == "both" else [args.variant]
    whats = ["audit", "diff"] if args.what == "both" else [args.what]
    for variant in variants:
        for n in args.sizes:
            for what in whats:
                cmd = [sys.executable, __file__, "--child", "--size", str(n), "--variant", variant,
                       "--backend", args.backend, "--what", what]  # fmt: skip
                if args.timeout is not None:
                    cmd += ["--timeout", str(args.timeout)]
                proc = subprocess.run(cmd, capture_output=True, text=True)
                if proc.returncode != 0:
                    print(f"{variant:<8}{n:>6}  {what:<6}  failed: {proc.stderr.strip().splitlines()[-1:]}")
                    continue
                res = json.loads(proc.stdout.strip().splitlines()[-1])
                rest = {k: v for k, v in res.items() if k not in ("seconds", "cpu", "peak_mb")}
                load = os.getloadavg()[0]
                print(
                    f"{variant:<8}{n:>6}  {what:<6}{res['seconds']:>9.2f}{res['cpu']:>9.2f}{res['peak_mb']:>9}"
                    f"{load:>6.1f}  {rest}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
