"""The guard's cold start (it runs before every tool call) beside bare Python and the stop hook,
in the same run.

    python benchmarks/bench_guard.py [--runs 31]

Runs, round-robin after one warm-up each (bytecode cached in a temp dir, as an install has it),
in a project wired by ``stoprule init --harness claude-code`` (a git repository, a Stop payload
and its transcript as ``bench_coldstart.py`` makes them):

    bare          <venv>/bin/python -c pass
    guard         the command init wires: <venv>/bin/python -S -I .../agent/guard/__main__.py claude-code,
                  an ordinary Bash call (``ls -la src``), the answer: nothing
    guard-refuse  the same entry on a call it refuses (``stoprule blockers off``): JSON out, a journal line
    guard-cli     <venv>/bin/stoprule guard claude-code (the console script: pip's wrapper imports re)
    hook          <venv>/bin/stoprule hook claude-code < the Stop payload

Reports median wall and CPU time of each, their ratio to bare Python, and the guard's ratio to
the hook's (targets: the guard within 2x of bare Python, within 1.5x of the stop hook).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import tree_state  # noqa: E402
from bench_coldstart import hook_project, measure, venv_bin  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=31)
    args = ap.parse_args()
    bindir = venv_bin()
    python, script = str(bindir / "python"), str(bindir / "stoprule")
    with tempfile.TemporaryDirectory(prefix="stoprule-bench-guard-") as tmpdir:
        tmp = Path(tmpdir)
        env = {k: v for k, v in os.environ.items() if not k.startswith("STOPRULE_")}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env.update(
            PYTHONPYCACHEPREFIX=str(tmp / "pyc"),
            HOME=str(tmp / "home"),
            STOPRULE_CACHE_DIR=str(tmp / "cache"),
            XDG_STATE_HOME=str(tmp / "state"),
        )
        payload = hook_project(tmp, script, env)
        if payload is None:
            print("no git: the hook's project cannot be made")
            return 2
        proj = tmp / "proj"
        settings = json.loads((proj / ".claude" / "settings.json").read_text())
        wired = settings["hooks"]["PreToolUse"][0]["hooks"][0]["command"].split()
        call = {"session_id": "bench-session", "cwd": str(proj), "hook_event_name": "PreToolUse",
                "tool_name": "Bash", "tool_input": {"command": "ls -la src"}}  # fmt: skip
        ordinary, refused = tmp / "ordinary.json", tmp / "refused.json"
        ordinary.write_text(json.dumps(call))
        refused.write_text(json.dumps({**call, "tool_input": {"command": "stoprule blockers off"}}))
        env["CLAUDE_PROJECT_DIR"] = str(proj)
        cmds = {
            "bare": [python, "-c", "pass"],
            "guard": [*wired, "<", str(ordinary)],
            "guard-refuse": [*wired, "<", str(refused)],
            "guard-cli": [script, "guard", "claude-code", "<", str(ordinary)],
            "hook": [script, "hook", "claude-code", "<", str(payload)],
        }
        res = measure(cmds, env, str(proj), args.runs)
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, load average {os.getloadavg()[0]:.2f} (at the end)")
    print(f"tree: {tree_state()}; {args.runs} runs each, round-robin")
    wall = {k: statistics.median(v[0]) * 1000 for k, v in res.items()}
    cpu = {k: statistics.median(v[1]) * 1000 for k, v in res.items()}
    print(f"  {'command':<14} {'median wall':>12} {'x bare':>7} {'median cpu':>11} {'x bare':>7}")
    for k in cmds:
        w, c = wall[k] / wall["bare"], cpu[k] / cpu["bare"]
        print(f"  {k:<14} {wall[k]:9.1f} ms {w:6.2f}x {cpu[k]:8.1f} ms {c:6.2f}x")
    ratio, hook = wall["guard"] / wall["bare"], wall["guard"] / wall["hook"]
    print(
        f"guard: {ratio:.2f}x bare Python (target <= 2x: {'MET' if ratio <= 2 else 'NOT MET'}), "
        f"{hook:.2f}x the stop hook (target <= 1.5x: {'MET' if hook <= 1.5 else 'NOT MET'})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
