"""Cold start: ``stoprule eval`` of one fact and ``stoprule hook claude-code`` of one Stop
payload as fresh processes, beside ``python -c pass``.

    python benchmarks/bench_coldstart.py [--runs 21] [--importtime-runs 5] [--no-hook]
                                         [--cmd 'LABEL=COMMAND LINE' ...] [--only-cmd]

Runs, round-robin (so machine noise spreads evenly), after one warm-up run each
(the warm-up fills the compiled-pack and hook-config caches, in a private temp dir):

    bare      <venv>/bin/python -c pass
    script    <venv>/bin/stoprule eval FACT.json       (the console script)
    module    <venv>/bin/python -m stoprule eval FACT.json
    hook      <venv>/bin/stoprule hook claude-code < PAYLOAD.json

The hook runs as it does in a project wired by ``stoprule init --harness claude-code``:
``.stoprule/config.yaml`` as init writes it (ledger on, every provider), a git repository
with a commit, a small transcript, and a Claude Code Stop payload naming them (session id,
prompt id, cwd, transcript_path, stop_hook_active, last_assistant_message). Every run is
the same stop of the same session and turn (after ``loop_cap`` blocks the loop guard
allows it; the work per run is the same: providers, git status, verdict, ledger append,
session record, log line). ``--no-hook`` leaves it out (also when git is missing).

Reports the median wall time and the median CPU time (user+sys of the child,
from wait4) of each, and the difference to bare Python (target: <= 30 ms).

Two environments are measured:

    pyc       PYTHONDONTWRITEBYTECODE unset and PYTHONPYCACHEPREFIX=<tmp>: bytecode is
              cached in a temp dir (nothing is written into the repo). This is what an
              install gives (pip compiles bytecode; for an editable install see
              benchmarks/README.md): the target is judged here.
    as-is     the environment as inherited, for information only: with
              PYTHONDONTWRITEBYTECODE=1 and no bytecode in src/, every start compiles the
              modules from source (a figure that follows the machine's load, not stoprule)

The verdict is given on both the wall and the CPU difference: on a loaded machine
wall time includes waiting for a core, CPU time does not.

``--cmd 'LABEL=COMMAND LINE'`` (repeatable) times any other command line the same way
(``{python}``, ``{stoprule}``, ``{fact}`` and ``{payload}`` are replaced by the venv's python,
the console script, the fact file and the hook's Stop payload; ``< FILE`` at the end feeds
FILE on stdin), e.g. ``--cmd 'hookfact={stoprule} hook claude-code < {fact}'``;
``--only-cmd`` times only those (beside bare Python).

Also: a few runs with STOPRULE_NO_CACHE=1 (a cache miss: YAML + pydantic + compile),
and ``python -X importtime -m stoprule eval FACT.json`` (and ``hook claude-code``): the
top 15 imports by cumulative time (median over --importtime-runs runs).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import tree_state  # noqa: E402

from facts import generate  # noqa: E402

TARGET_MS = 30.0


def venv_bin() -> Path:
    """The venv's bin dir: the running interpreter's if it is a venv, else the repo's .venv."""
    here = Path(sys.executable).parent
    if (here / "stoprule").exists():
        return here
    return HERE.parent / ".venv" / "bin"


def _transcript(path: Path) -> None:
    """A small Claude Code transcript: a prompt, a todo list, a failed tool result, a reply."""
    env = {"sessionId": "bench-session", "cwd": "/bench", "version": "2.1.240", "isSidechain": False}
    todos = [
        {"content": "Write parser", "status": "completed", "activeForm": "Writing parser"},
        {"content": "Write tests", "status": "completed", "activeForm": "Writing tests"},
    ]
    lines = [
        {"type": "user", "uuid": "u1", "message": {"role": "user", "content": "Build the parser and its tests"}},
        {"type": "assistant", "uuid": "u2", "message": {"id": "m1", "role": "assistant", "content": [
            {"type": "tool_use", "id": "t1", "name": "TodoWrite", "input": {"todos": todos}}]}},
        {"type": "user", "uuid": "u3", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "Todos have been modified successfully"}]}},
        {"type": "assistant", "uuid": "u4", "message": {"id": "m2", "role": "assistant", "content": [
            {"type": "tool_use", "id": "t2", "name": "Bash", "input": {"command": "pytest"}}]}},
        {"type": "user", "uuid": "u5", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t2", "content": "4 passed", "is_error": False}]}},
        {"type": "assistant", "uuid": "u6", "message": {"id": "m3", "role": "assistant", "content": [
            {"type": "text", "text": "The parser and its tests are written; all tests pass."}]}},
    ]  # fmt: skip
    path.write_text("".join(json.dumps({**env, **line}) + "\n" for line in lines))


def hook_project(tmp: Path, script: str, env: dict[str, str]) -> Path | None:
    """A project wired as ``stoprule init --harness claude-code`` does, in a git repository with
    one commit, and a Stop payload for it; returns the payload file (None without git)."""
    proj = tmp / "proj"
    proj.mkdir()
    git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid", "-c", "commit.gpgsign=false"]
    try:
        subprocess.run([*git, "init", "-q"], cwd=proj, check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    (proj / "README.md").write_text("bench\n")
    subprocess.run([script, "init", "--harness", "claude-code"], cwd=proj, env=env, check=True, capture_output=True)
    subprocess.run([*git, "add", "-A"], cwd=proj, check=True, capture_output=True)
    subprocess.run([*git, "commit", "-q", "-m", "init"], cwd=proj, check=True, capture_output=True)
    _transcript(tmp / "transcript.jsonl")
    payload = {
        "session_id": "bench-session",
        "prompt_id": "3f1c8a52-0d0e-4b59-9a55-2f6b1c0e7d11",
        "transcript_path": str(tmp / "transcript.jsonl"),
        "cwd": str(proj),
        "permission_mode": "default",
        "hook_event_name": "Stop",
        "stop_hook_active": False,
        "last_assistant_message": "The parser and its tests are written; all tests pass.",
    }
    path = tmp / "payload.json"
    path.write_text(json.dumps(payload))
    return path


def run_once(cmd: list[str], env: dict[str, str], cwd: str) -> tuple[float, float]:
    """(wall seconds, child CPU seconds) of one run; fails loudly on exit code 2+.
    A command ending in ``<``, ``FILE`` reads FILE on stdin."""
    stdin_file = None
    if len(cmd) > 2 and cmd[-2] == "<":
        cmd, stdin_file = cmd[:-2], cmd[-1]
    t0 = time.perf_counter()
    fin = open(stdin_file, "rb") if stdin_file else subprocess.DEVNULL  # noqa: SIM115
    p = subprocess.Popen(cmd, env=env, cwd=cwd, stdin=fin, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    if stdin_file:
        fin.close()  # type: ignore[union-attr]
    p.returncode = os.waitstatus_to_exitcode(status)
    err = p.stderr.read() if p.stderr else b""
    if p.stderr:
        p.stderr.close()
    if p.returncode not in (0, 1):
        raise SystemExit(f"command failed ({p.returncode}): {' '.join(cmd)}\n{err.decode(errors='replace')}")
    return wall, ru.ru_utime + ru.ru_stime


def measure(cmds: dict[str, list[str]], env: dict[str, str], cwd: str, runs: int) -> dict[str, tuple[list, list]]:
    for cmd in cmds.values():  # warm-up: fills the compiled-pack cache (and the pyc cache)
        run_once(cmd, env, cwd)
    out: dict[str, tuple[list, list]] = {k: ([], []) for k in cmds}
    for _ in range(runs):
        for name, cmd in cmds.items():
            w, c = run_once(cmd, env, cwd)
            out[name][0].append(w)
            out[name][1].append(c)
    return out


def report(title: str, res: dict[str, tuple[list, list]], labels: dict[str, str]) -> dict[str, float]:
    print(f"\n== {title}")
    med = {k: statistics.median(v[0]) * 1000 for k, v in res.items()}
    cpu = {k: statistics.median(v[1]) * 1000 for k, v in res.items()}
    base, base_cpu = med["bare"], cpu["bare"]
    print(f"  {'command':<46} {'median wall':>12} {'vs bare':>9} {'median cpu':>11} {'vs bare':>9} {'min wall':>9}")
    for k in res:
        mn = min(res[k][0]) * 1000
        print(
            f"  {labels[k]:<46} {med[k]:9.1f} ms {med[k] - base:+7.1f}ms {cpu[k]:8.1f} ms {cpu[k] - base_cpu:+7.1f}ms"
            f" {mn:6.1f} ms"
        )
    for k in res:
        if k == "bare":
            continue
        d, dc = med[k] - base, cpu[k] - base_cpu
        print(
            f"  {labels[k]}: {d:+.1f} ms wall, {dc:+.1f} ms CPU above bare python -> target <= {TARGET_MS:.0f} ms:"
            f" wall {'MET' if d <= TARGET_MS else 'NOT MET'}, CPU {'MET' if dc <= TARGET_MS else 'NOT MET'}"
        )
    return med


def importtime(
    cmd: list[str], env: dict[str, str], cwd: str, runs: int, stdin_file: Path | None = None
) -> dict[str, list[int]]:
    """module -> cumulative microseconds per run (only modules seen in every run kept)."""
    per: dict[str, list[int]] = {}
    for _ in range(runs):
        data = stdin_file.read_bytes() if stdin_file else None
        p = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, input=data)
        p.stderr = p.stderr.decode(errors="replace")
        if p.returncode not in (0, 1):
            raise SystemExit(p.stderr)
        for line in p.stderr.splitlines():
            if not line.startswith("import time:") or "self [us]" in line:
                continue
            _self_us, cum_us, name = line[len("import time:") :].split("|", 2)
            name = name.rstrip()[1:]  # keep the nesting indent: top-level imports have none
            per.setdefault(name, []).append(int(cum_us))
    return {k: v for k, v in per.items() if len(v) == runs}


def print_importtime(
    what: str,
    cmd: list[str],
    env_asis: dict[str, str],
    env_pyc: dict[str, str],
    cwd: str,
    runs: int,
    stdin_file: Path | None,
) -> None:
    """The top 15 imports of ``cmd`` by cumulative time, as-is and with bytecode cached."""
    a = importtime(cmd, env_asis, cwd, runs, stdin_file)
    b = importtime(cmd, env_pyc, cwd, runs, stdin_file)
    print(f"\n== python -X importtime -m stoprule {what}: top 15 by cumulative time (median of {runs} runs, ms)")
    print(f"  {'module':<40} {'as-is':>8} {'pyc':>8}")
    top = sorted(a, key=lambda k: -statistics.median(a[k]))[:15]
    for k in top:
        mb = f"{statistics.median(b[k]) / 1000:8.1f}" if k in b else "       -"
        print(f"  {k.strip():<40} {statistics.median(a[k]) / 1000:8.1f} {mb}")
    roots_a = sum(statistics.median(v) for k, v in a.items() if not k.startswith(" "))
    roots_b = sum(statistics.median(v) for k, v in b.items() if not k.startswith(" "))
    print(f"  {'sum of top-level imports':<40} {roots_a / 1000:8.1f} {roots_b / 1000:8.1f}")
    print(f"  modules imported: {len(b)}")
    heavy = [m for m in ("yaml", "pydantic", "durable", "durable.lang") if m in {k.strip() for k in a}]
    print(f"  heavy modules imported on the warm path: {heavy or 'none (no yaml, pydantic, durable.lang)'}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=21, help="timed runs per command (after one warm-up)")
    ap.add_argument("--importtime-runs", type=int, default=5)
    ap.add_argument("--nocache-runs", type=int, default=5)
    ap.add_argument("--cmd", action="append", default=[], metavar="LABEL=COMMAND LINE", help="also time this")
    ap.add_argument("--only-cmd", action="store_true", help="time only the --cmd command lines (and bare python)")
    ap.add_argument("--no-hook", action="store_true", help="do not time `stoprule hook claude-code`")
    args = ap.parse_args()
    if args.runs < 15:
        print("note: fewer than 15 runs requested")

    vb = venv_bin()
    py = str(vb / "python")
    script = str(vb / "stoprule")
    tmp = Path(tempfile.mkdtemp(prefix="stoprule-coldstart-"))
    try:
        fact = generate(1, seed=7)[0]
        fact_path = tmp / "fact.json"
        fact_path.write_text(json.dumps(fact))
        cwd = str(tmp)  # no ./.stoprule/policies here: the bundled pack is selected
        base_env = {k: v for k, v in os.environ.items() if k not in ("STOPRULE_POLICY", "STOPRULE_NO_CACHE")}
        base_env["STOPRULE_CACHE_DIR"] = str(tmp / "cache")
        env_asis = dict(base_env)
        env_pyc = {k: v for k, v in base_env.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env_pyc["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")

        payload = hook_project(tmp, script, env_pyc)
        cmds = {
            "bare": [py, "-c", "pass"],
            "script": [script, "eval", str(fact_path)],
            "module": [py, "-m", "stoprule", "eval", str(fact_path)],
        }
        labels = {
            "bare": "python -c pass",
            "script": "stoprule eval fact.json (console script)",
            "module": "python -m stoprule eval fact.json",
        }
        if payload is not None and not args.no_hook:
            cmds["hook"] = [script, "hook", "claude-code", "<", str(payload)]
            labels["hook"] = "stoprule hook claude-code < payload.json"
        if args.only_cmd:
            cmds = {"bare": cmds["bare"]}
        for spec in args.cmd:
            label, _, line = spec.partition("=")
            line = line.format(python=py, stoprule=script, fact=str(fact_path), payload=str(payload))
            cmds[label] = shlex.split(line)
            shown = line.replace(str(fact_path), "fact.json").replace(str(payload), "payload.json")
            labels[label] = label + ": " + shown.replace(str(vb) + "/", "")
        print(
            f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, load average {os.getloadavg()[0]:.2f}; venv {vb}"
        )
        print(f"tree: {tree_state()}")
        print(f"PYTHONDONTWRITEBYTECODE in the inherited environment: {os.environ.get('PYTHONDONTWRITEBYTECODE')!r}")
        print(f"fact: {json.dumps(fact, sort_keys=True)[:160]}...")
        if payload is None:
            print("hook: not timed (git is not available to make the project)")
        else:
            print(f"hook payload: {payload.read_text()[:160]}... (project: stoprule init, git repo, ledger on)")
        print(f"{args.runs} timed runs per command after one warm-up, round-robin")

        res_pyc = measure(cmds, env_pyc, cwd, args.runs)
        report(
            "TARGET: pyc environment, bytecode cached in a temp PYTHONPYCACHEPREFIX (compiled-pack cache warm)",
            res_pyc,
            labels,
        )
        print(f"  load average: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cpus")
        if args.only_cmd:
            return
        res_asis = measure(cmds, env_asis, cwd, args.runs)
        report("for information: the as-is environment (compiled-pack cache warm)", res_asis, labels)

        env_nc = dict(env_asis, STOPRULE_NO_CACHE="1")
        nc = {"bare": cmds["bare"], "script": cmds["script"]}
        res_nc = measure(nc, env_nc, cwd, args.nocache_runs)
        report(
            f"cache miss: STOPRULE_NO_CACHE=1 (YAML + pydantic + compile each run; {args.nocache_runs} runs)",
            res_nc,
            labels,
        )

        it_cmds = {"eval fact.json": ([py, "-X", "importtime", "-m", "stoprule", "eval", str(fact_path)], None)}
        if "hook" in cmds:
            it_cmds["hook claude-code < payload.json"] = (
                [py, "-X", "importtime", "-m", "stoprule", "hook", "claude-code"],
                payload,
            )
        for what, (it_cmd, stdin_file) in it_cmds.items():
            print_importtime(what, it_cmd, env_asis, env_pyc, cwd, args.importtime_runs, stdin_file)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
