"""Cold start: a stop decided by ``stoprule hook`` in a fresh process (Claude Code and Codex), the
tool-call guard (when this stoprule has one), the resident mode, beside bare Python, ``python -S``,
a minimal Python stop hook and hookify's stop hook.

    python benchmarks/bench_coldstart.py [--runs 21] [--hookify PATH] [--phases N] [--importtime-runs N]
                                         [--cmd 'LABEL=COMMAND LINE' ...] [--only-cmd] [--baseline COMMIT]

The project is a scratch git repository with one commit, wired by ``stoprule init --harness
claude-code`` and ``--harness codex`` (their ``.stoprule/config.yaml``: the ledger on, every
provider), with the real transcripts recorded from those harnesses (tests/fixtures/hooks/*/recorded)
and their last recorded Stop payload pointed at it. Every run is the same stop (a clean tree, the
transcript's work done: allowed; what each row's last run decided is printed under the table), and
does the same work: every provider, one ``git status``, the verdict, the journaled ledger write
and its sync, the session record, the log line. Commands run round-robin (machine noise spreads
over all of them), after one warm-up each (it fills the compiled-pack and settings caches, and
bytecode: in a temp ``PYTHONPYCACHEPREFIX`` for the rows that honour it, in the tree's git-ignored
``__pycache__`` for the wired ``-I`` commands, as an install leaves it):

    bare       python -c pass                                   the floor: 1.0x
    python -S  python -S -c pass                                without site (for information)
    minimal    a Python hook: parse the payload, read the transcript's tail, one git status
    hookify    hookify's stop hook with one rule (skipped when hookify is not found, see below)
    stop cc    stoprule hook claude-code < payload   target: median wall <= 2.5x bare
    stop codex stoprule hook codex < payload         target: median wall <= 2.5x bare
               (both as init wired them: ``PYTHON -I -S .../stoprule/launch.py hook HARNESS``)
    stop script the same stop through the console script (``bin/stoprule hook claude-code``)
    guard      stoprule guard claude-code < a Bash PreToolUse payload (only when ``stoprule guard
               --help`` exits 0; init's wiring where it has one)   target: <= 2x bare
    resident   the wired stop hook answered by a resident process started for the run
               (``stoprule resident serve``)          aim: near 1x bare

Ratios are of medians of the same run. Wall time is the target; the CPU time of the process (from
``wait4``: the resident row's does not include the resident process's work) is printed beside it.
The load average is printed before and after: on a shared machine, quote both.

hookify (Anthropic's Claude Code plugin, Python, not part of stoprule) is looked for in ``--hookify
PATH`` or ``$STOPRULE_BENCH_HOOKIFY`` (the plugin's folder, or a clone or mirror of the
repository holding ``plugins/hookify``, read with ``git archive``), else in ``~/.claude/plugins``;
it is copied into the temp folder and run as Claude Code runs it (``python3
${CLAUDE_PLUGIN_ROOT}/hooks/stop.py``, here with the venv's Python) with one enabled stop rule.

``--phases N``: where one stop's time goes, in process (N fresh processes, medians): imports, the
settings, the pack, each provider, the evaluation, the loop guard's record, the ledger write, the
log. ``--importtime-runs N``: the top imports of ``python -X importtime`` (N runs).
``--baseline COMMIT``: the Claude Code stop of that commit (its ``src/`` and ``policies/``, this
tree's built engine), wired alike, in its own session, beside this tree's (before/after).
``--cmd 'LABEL=COMMAND LINE'`` times any other command line the same way (``{python}``,
``{stoprule}``, ``{payload}`` replaced; ``< FILE`` at the end feeds FILE on stdin); ``--only-cmd``
times only those beside bare Python.
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
REPO = HERE.parent
sys.path.insert(0, str(HERE))

from _common import tree_state  # noqa: E402

STOP_TARGET = 2.5
GUARD_TARGET = 2.0
RECORDED = REPO / "tests" / "fixtures" / "hooks"
GIT = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid", "-c", "commit.gpgsign=false"]

MINIMAL_HOOK = """\
import json, subprocess, sys
payload = json.load(sys.stdin)
with open(payload["transcript_path"], "rb") as fh:
    fh.seek(0, 2)
    fh.seek(max(0, fh.tell() - 65536))
    tail = fh.read().splitlines()[-20:]
status = subprocess.run(["git", "-C", payload["cwd"], "status", "--porcelain=v1", "-z"], capture_output=True)
print(json.dumps({}))
"""

HOOKIFY_RULE = """\
---
name: require-tests-run
enabled: true
event: stop
action: block
conditions:
  - field: transcript
    operator: not_contains
    pattern: npm test|pytest|cargo test
---

**Tests not detected in transcript!** Run the tests before stopping.
"""

# one stop in process, timed by phase (run by --phases in fresh interpreters): the functions the
# stop calls are wrapped, each phase's wall and CPU time printed as JSON
PHASES = r"""
import gc, time
gc.disable()  # as the wired stop runs (stoprule.cli.main.main)
w0, c0 = time.perf_counter(), time.process_time()
import io, sys
sys.path.insert(0, sys.argv.pop(1))  # as launch.py puts the install on the path (-I -S)
try:
    from stoprule._util.launcher import start  # as launch.py starts (its finders)
except ImportError:  # an older tree (--baseline): the launcher held it
    from stoprule.launch import SiteOnMiss
    start = lambda: sys.meta_path.append(SiteOnMiss)
start()
out = {}
def add(name, w, c):
    a = out.setdefault(name, [0.0, 0.0])
    a[0] += (time.perf_counter() - w) * 1000
    a[1] += (time.process_time() - c) * 1000
def wrap(mod, name, label):
    f = getattr(mod, name, None)
    if f is None:
        return
    def g(*a, **k):
        w, c = time.perf_counter(), time.process_time()
        try:
            return f(*a, **k)
        finally:
            add(label, w, c)
    setattr(mod, name, g)
w, c = time.perf_counter(), time.process_time()
import stoprule.cli.main as main, stoprule.cli.hook_cmd as hook_cmd, stoprule.cli.resident as resident
import stoprule.agent.hook.runner as runner, stoprule.agent.hook.providers as providers
import stoprule.agent.hook.frozen as frozen, stoprule.agent.hook.state as state
import stoprule.engine.packs as packs, stoprule.engine.evaluator as evaluator, stoprule._util.redact as redact
add("imports: the stop's modules", w, c)
wrap(runner, "settings_for", "settings (config, cached)")
wrap(state, "read_session", "session record: read")
wrap(frozen, "load", "frozen session: read")
wrap(frozen, "changes", "frozen session: what changed")
wrap(frozen, "pack_key", "frozen session: pack keys")
wrap(packs, "_compiler_stats", "pack: the compiler's stats")
wrap(packs, "_read", "pack: cache entry read and parsed")
wrap(packs, "from_data", "pack: compiled pack from the entry")
wrap(packs, "load_policy", "pack (all: cache check, load, evaluator)")
wrap(runner, "_apply_guard", "loop guard (session record written)")
wrap(hook_cmd, "record", "ledger write (journal, one sync)")
wrap(runner, "_safe_entry", "log line: redaction")
wrap(runner, "_log", "log line: write")
wrap(resident, "start", "resident: start (off)")
e = evaluator.Evaluator.evaluate
def evaluate(self, *a, **k):
    w, c = time.perf_counter(), time.process_time()
    try:
        return e(self, *a, **k)
    finally:
        add("evaluate (engine set-up, decision)", w, c)
evaluator.Evaluator.evaluate = evaluate
r = providers._run
def run_provider(name, *a):
    w, c = time.perf_counter(), time.process_time()
    try:
        return r(name, *a)
    finally:
        add(f"provider {name}", w, c)
providers._run = run_provider
w, c = time.perf_counter(), time.process_time()
main.run(sys.argv[1:], sys.stdin.buffer, io.StringIO(), io.StringIO())
add("the stop (after imports)", w, c)
add("total (after the interpreter's start)", w0, c0)
stdlib = sorted(m for m in ("json", "re", "enum", "typing", "dataclasses", "os") if m in sys.modules)
try:
    from stoprule._util.jsonout import dumps
except ImportError:  # an older tree (--baseline)
    from json import dumps
print(dumps(out))
print(dumps(stdlib))
"""


def venv_bin() -> Path:
    """The venv's bin dir: the running interpreter's if it is a venv, else the repo's .venv."""
    here = Path(sys.executable).parent
    if (here / "stoprule").exists():
        return here
    return REPO / ".venv" / "bin"


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"{one:.2f} (5 min: {five:.2f}) on {os.cpu_count()} cpus"


def _last_payload(harness: str) -> dict:
    """The harness's last recorded Stop payload: its last message is the transcript's last text (an
    earlier payload's is not, and the hook would wait for the transcript to catch up, as it does
    for a harness still writing it: up to 0.3 s)."""
    return json.loads((RECORDED / harness / "recorded" / "payloads.jsonl").read_text().splitlines()[-1])


def make_project(tmp: Path, script: str, env: dict[str, str]) -> dict[str, Path]:
    """The scratch project wired by ``stoprule init`` for Claude Code and Codex; the payload file of each."""
    proj = tmp / "proj"
    proj.mkdir()
    subprocess.run([*GIT, "init", "-q"], cwd=proj, check=True, capture_output=True)
    (proj / "README.md").write_text("bench\n")
    for harness in ("claude-code", "codex"):
        subprocess.run([script, "init", "--harness", harness], cwd=proj, env=env, check=True, capture_output=True)
    subprocess.run([*GIT, "add", "-A"], cwd=proj, check=True, capture_output=True)
    subprocess.run([*GIT, "commit", "-q", "-m", "init"], cwd=proj, check=True, capture_output=True)
    payloads = {}
    for harness in ("claude-code", "codex"):
        transcript = tmp / f"{harness}.jsonl"
        shutil.copyfile(RECORDED / harness / "recorded" / "transcript.jsonl", transcript)
        stop = dict(_last_payload(harness), cwd=str(proj), transcript_path=str(transcript))
        payloads[harness] = tmp / f"{harness}-stop.json"
        payloads[harness].write_text(json.dumps(stop))
    guard = {"session_id": "bench", "transcript_path": str(tmp / "claude-code.jsonl"), "cwd": str(proj),
             "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": "ls -la"}}  # fmt: skip
    payloads["guard"] = tmp / "guard.json"
    payloads["guard"].write_text(json.dumps(guard))
    payloads["project"] = proj
    return payloads


def wired_commands(project: Path) -> dict[str, list[str]]:
    """The commands ``stoprule init`` wrote: each harness's stop hook, and the guard's
    (``PreToolUse``) where init wires one."""
    from stoprule.agent.hook.wiring import TARGETS, find_entry

    out = {}
    for harness in ("claude-code", "codex"):
        t = TARGETS[harness]
        config = json.loads(Path(t.path(str(project), "local")).read_text())
        command = find_entry(config, t)
        assert command, f"init wired no stop hook for {harness}"
        out[harness] = shlex.split(command)
        for h in config.get("hooks", {}).get("PreToolUse", []):
            for entry in h.get("hooks", [h]):
                line = entry.get("command", "") if isinstance(entry, dict) else ""
                if harness == "claude-code" and "guard" in line and "stoprule" in line:
                    out["guard"] = shlex.split(line)
    return out


SESSION_START = True  # --no-session-start: False


def start_session(cmd: list[str], stop_file: Path, env: dict[str, str]) -> None:
    """The session of the Stop payload in ``stop_file`` started as its harness starts it: the
    session-start hook ``init`` wired (``cmd``, the stop's command, with ``--event session-start``),
    which records the git baseline (dirty files, flagged files, stashes, ignore files) and freezes
    the session, so the stops that follow check the work the session hid from ``git status`` too,
    as every stop of a real session does. Nothing with ``--no-session-start``."""
    if not SESSION_START:
        return
    stop = json.loads(stop_file.read_text())
    start = {k: stop[k] for k in ("session_id", "transcript_path", "cwd")}
    start.update(hook_event_name="SessionStart", source="startup")
    subprocess.run(
        [*cmd, "--event", "session-start"],
        input=json.dumps(start).encode(),
        env=env,
        cwd=stop["cwd"],
        check=True,
        capture_output=True,
    )


def find_hookify(given: str | None, tmp: Path) -> tuple[Path | None, str]:
    """hookify's plugin folder copied to ``tmp/plugins/hookify`` (None, and why, when not found)."""
    candidates = [given or os.environ.get("STOPRULE_BENCH_HOOKIFY") or ""]
    candidates += [str(p) for p in sorted(Path.home().glob(".claude/plugins/**/hookify")) if p.is_dir()]
    dest = tmp / "plugins" / "hookify"
    for c in filter(None, candidates):
        path = Path(c).expanduser()
        if (path / "hooks" / "stop.py").exists():
            shutil.copytree(path, dest)
            return dest, str(path)
        if (path / "plugins" / "hookify" / "hooks" / "stop.py").exists():
            shutil.copytree(path / "plugins" / "hookify", dest)
            return dest, str(path / "plugins" / "hookify")
        sub = ["archive", "HEAD", "plugins/hookify"]
        archive = subprocess.run(["git", f"--git-dir={path}", *sub], capture_output=True)
        if archive.returncode != 0:
            archive = subprocess.run(["git", "-C", str(path), *sub], capture_output=True)
        if archive.returncode == 0 and archive.stdout:
            out = tmp / "hookify-src"
            out.mkdir()
            subprocess.run(["tar", "-x", "-C", str(out)], input=archive.stdout, check=True)
            shutil.copytree(out / "plugins" / "hookify", dest)
            return dest, f"{path} (git archive HEAD plugins/hookify)"
    return None, "not found (--hookify PATH or $STOPRULE_BENCH_HOOKIFY: its plugin folder, or a clone)"


def baseline_tree(commit: str, tmp: Path, py: str) -> Path:
    """``src/`` and ``policies/`` of ``commit`` in ``tmp`` (its bytecode compiled, this tree's built
    C modules copied in where that commit has their folder: the engine, the accelerator,
    ``_native``): the folder holding its ``stoprule`` package."""
    out = tmp / "baseline"
    out.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", commit, "src", "policies"], capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", str(out)], input=archive.stdout, check=True)
    for so in (REPO / "src" / "stoprule").glob("**/*.so"):
        dest = out / so.relative_to(REPO)
        if dest.parent.is_dir():
            shutil.copy(so, dest)
    subprocess.run([py, "-m", "compileall", "-q", str(out / "src")], check=True, capture_output=True)
    return out / "src"


def run_once(cmd: list[str], env: dict[str, str], cwd: str) -> tuple[float, float, bytes]:
    """(wall seconds, child CPU seconds, standard error) of one run; fails loudly on exit code 2+.
    A command ending in ``<``, ``FILE`` reads FILE on stdin."""
    stdin_file = None
    if len(cmd) > 2 and cmd[-2] == "<":
        cmd, stdin_file = cmd[:-2], cmd[-1]
    fin = open(stdin_file, "rb") if stdin_file else subprocess.DEVNULL  # noqa: SIM115
    t0 = time.perf_counter()
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
    return wall, ru.ru_utime + ru.ru_stime, err


def measure(
    cmds: dict[str, tuple[list[str], dict[str, str]]], cwd: str, runs: int
) -> tuple[dict[str, tuple[list, list]], dict[str, str]]:
    """The wall and CPU times of each command's runs, and what its last run said on stderr."""
    for cmd, env in cmds.values():  # warm-up: the compiled-pack and settings caches, the bytecode
        run_once(cmd, env, cwd)
    out: dict[str, tuple[list, list]] = {k: ([], []) for k in cmds}
    said: dict[str, str] = {}
    for _ in range(runs):
        for name, (cmd, env) in cmds.items():
            w, c, err = run_once(cmd, env, cwd)
            out[name][0].append(w)
            out[name][1].append(c)
            said[name] = err.decode("utf-8", "replace")
    return out, said


def report(res: dict[str, tuple[list, list]], labels: dict[str, str], targets: dict[str, float]) -> bool:
    med = {k: statistics.median(v[0]) * 1000 for k, v in res.items()}
    cpu = {k: statistics.median(v[1]) * 1000 for k, v in res.items()}
    base, base_cpu = med["bare"], cpu["bare"]
    width = max(len(labels[k]) for k in res)
    head = f"{'median wall':>11} {'/ bare':>7} {'min wall':>9} {'median cpu':>11} {'/ bare':>7}"
    print(f"  {'command':<{width}} {head}  target (wall)")
    met = True
    for k in res:
        ratio = med[k] / base
        verdict = ""
        if k in targets:
            ok = ratio <= targets[k]
            met &= ok
            verdict = f"<= {targets[k]:g}x: {'MET' if ok else 'NOT MET'}"
        print(
            f"  {labels[k]:<{width}} {med[k]:8.1f} ms {ratio:6.2f}x {min(res[k][0]) * 1000:6.1f} ms {cpu[k]:8.1f} ms "
            f"{cpu[k] / base_cpu:6.2f}x  {verdict}"
        )
    return met


def phases(
    cmd: list[str], payload: Path, env: dict[str, str], cwd: str, runs: int, harness: str = "claude-code"
) -> None:
    """Where one stop's time goes: medians over ``runs`` fresh processes (wall, CPU). ``cmd``: the
    interpreter and its flags as init wired them, then the folder holding the ``stoprule`` package."""
    acc: dict[str, list[tuple[float, float]]] = {}
    for _ in range(runs):
        p = subprocess.run(
            [*cmd[:-1], "-c", PHASES, cmd[-1], "hook", harness],
            input=payload.read_bytes(),
            env=env,
            cwd=cwd,
            capture_output=True,
            check=True,
        )
        lines = p.stdout.decode().splitlines()
        for name, (w, c) in json.loads(lines[-2]).items():
            acc.setdefault(name, []).append((w, c))
        stdlib = json.loads(lines[-1])
    print(f"\n== where one {harness} stop's time goes (in process; medians of {runs} fresh processes; load {_load()})")
    print(f"  {'phase':<42} {'wall':>9} {'cpu':>9}")
    for name, vals in acc.items():
        wall, cpu = statistics.median(v[0] for v in vals), statistics.median(v[1] for v in vals)
        print(f"  {name:<42} {wall:6.2f} ms {cpu:6.2f} ms")
    print(f"  of json, re, enum, typing, dataclasses, os, the stop imported: {', '.join(stdlib) or 'none'}")


def importtime(cmd: list[str], payload: Path, env: dict[str, str], cwd: str, runs: int) -> None:
    """The top imports of the wired stop (``cmd``), ``python -X importtime``: medians of ``runs``."""
    per: dict[str, list[int]] = {}
    for _ in range(runs):
        p = subprocess.run(
            [cmd[0], "-X", "importtime", *cmd[1:]], input=payload.read_bytes(), env=env, cwd=cwd, capture_output=True
        )
        for line in p.stderr.decode(errors="replace").splitlines():
            if line.startswith("import time:") and "self [us]" not in line:
                _self, cum, name = line[len("import time:") :].split("|", 2)
                per.setdefault(name.rstrip()[1:], []).append(int(cum))
    both = {k: v for k, v in per.items() if len(v) == runs}
    print(f"\n== python -X importtime, the stop's imports: top 15 by cumulative time (median of {runs} runs, ms)")
    for k in sorted(both, key=lambda k: -statistics.median(both[k]))[:15]:
        print(f"  {k.strip():<44} {statistics.median(both[k]) / 1000:7.2f}")
    print(f"  modules imported: {len(both)} ({sum(1 for k in both if k.strip().startswith('stoprule'))} of stoprule)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=21, help="timed runs per command (after one warm-up)")
    ap.add_argument("--hookify", metavar="PATH", help="hookify's plugin folder, or a clone of its repository")
    ap.add_argument("--phases", type=int, default=0, metavar="N", help="break one stop down by phase (N processes)")
    ap.add_argument("--importtime-runs", type=int, default=0, metavar="N")
    ap.add_argument("--cmd", action="append", default=[], metavar="LABEL=COMMAND LINE", help="also time this")
    ap.add_argument("--only-cmd", action="store_true", help="time only the --cmd command lines (and bare python)")
    ap.add_argument("--baseline", metavar="COMMIT", help="also time the wired stop of this commit (before/after)")
    ap.add_argument(
        "--no-session-start",
        action="store_true",
        help="time stops of sessions that never ran the session-start hook (no git baseline: a harness without one)",
    )
    args = ap.parse_args()
    global SESSION_START
    SESSION_START = not args.no_session_start

    vb = venv_bin()
    py, script = str(vb / "python"), str(vb / "stoprule")
    tmp = Path(tempfile.mkdtemp(prefix="stoprule-coldstart-"))
    server = None
    try:
        base_env = {
            k: v for k, v in os.environ.items() if not k.startswith("STOPRULE_") and k != "PYTHONDONTWRITEBYTECODE"
        }
        base_env.update(
            STOPRULE_CACHE_DIR=str(tmp / "cache"),
            PYTHONPYCACHEPREFIX=str(tmp / "pycache"),
            HOME=os.environ.get("HOME", str(tmp)),
        )
        (tmp / "run-none").mkdir(mode=0o700)
        (tmp / "run-resident").mkdir(mode=0o700)
        fresh = dict(base_env, XDG_RUNTIME_DIR=str(tmp / "run-none"))  # no resident process: decided in process
        warm = dict(base_env, XDG_RUNTIME_DIR=str(tmp / "run-resident"))
        files = make_project(tmp, script, fresh)
        proj = str(files["project"])
        minimal = tmp / "minimal_hook.py"
        minimal.write_text(MINIMAL_HOOK)

        cmds: dict[str, tuple[list[str], dict[str, str]]] = {"bare": ([py, "-c", "pass"], fresh)}
        labels = {"bare": "python -c pass"}
        targets: dict[str, float] = {}
        if not args.only_cmd:
            cmds["nosite"] = ([py, "-S", "-c", "pass"], fresh)
            labels["nosite"] = "python -S -c pass"
            cmds["minimal"] = ([py, str(minimal), "<", str(files["claude-code"])], fresh)
            labels["minimal"] = "minimal Python hook (payload, transcript tail, git status)"
            hookify, where = find_hookify(args.hookify, tmp)
            if hookify is not None:
                (files["project"] / ".claude" / "hookify.require-tests.local.md").write_text(HOOKIFY_RULE)
                for git in (["add", "-A"], ["commit", "-q", "-m", "hookify's rule"]):  # a clean tree, as before
                    subprocess.run([*GIT, *git], cwd=proj, check=True, capture_output=True)
                hk_env = dict(fresh, CLAUDE_PLUGIN_ROOT=str(hookify))
                cmds["hookify"] = ([py, str(hookify / "hooks" / "stop.py"), "<", str(files["claude-code"])], hk_env)
                labels["hookify"] = "hookify stop hook, one rule (python3 hooks/stop.py)"
            wired = wired_commands(files["project"])
            for harness, key in (("claude-code", "stop cc"), ("codex", "stop codex")):
                start_session(wired[harness], files[harness], fresh)
                cmds[key] = ([*wired[harness], "<", str(files[harness])], fresh)
                labels[key] = f"stoprule hook {harness} < payload (fresh process, as init wired it)"
                targets[key] = STOP_TARGET
            cmds["stop script"] = ([script, "hook", "claude-code", "<", str(files["claude-code"])], fresh)
            labels["stop script"] = "the same through the console script (bin/stoprule hook claude-code)"
            has_guard = subprocess.run([script, "guard", "--help"], env=fresh, capture_output=True).returncode == 0
            if has_guard:
                launcher = wired["claude-code"][: wired["claude-code"].index("hook")]
                guard = wired.get("guard") or [*launcher, "guard", "claude-code"]
                cmds["guard"] = ([*guard, "<", str(files["guard"])], fresh)
                labels["guard"] = "stoprule guard claude-code < Bash PreToolUse (as init wired it, else so)"
                targets["guard"] = GUARD_TARGET
            server = subprocess.Popen(
                [py, "-I", "-m", "stoprule", "resident", "serve", "--idle", "600"],
                env=warm,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            sock = tmp / "run-resident" / "stoprule" / "resident.sock"
            deadline = time.monotonic() + 60
            while not sock.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            # its own session: the frozen session holds the hook's XDG_* variables, and this one's differ
            resident_stop = tmp / "claude-code-resident-stop.json"
            payload = json.loads(files["claude-code"].read_text())
            resident_stop.write_text(json.dumps(dict(payload, session_id=payload["session_id"] + "-resident")))
            start_session(wired["claude-code"], resident_stop, warm)
            cmds["resident"] = ([*wired["claude-code"], "<", str(resident_stop)], warm)
            labels["resident"] = "stoprule hook claude-code, resident process (aim ~1x)"
        if args.baseline:
            before = baseline_tree(args.baseline, tmp, py)
            cc = wired_commands(files["project"])["claude-code"]
            launcher = cc[: cc.index("hook")]
            argv = [a if not a.endswith("launch.py") else str(before / "stoprule" / "launch.py") for a in launcher]
            # its own session: the session frozen by this tree's stops selected this tree's bundled pack
            before_stop = tmp / "claude-code-baseline-stop.json"
            payload = json.loads(files["claude-code"].read_text())
            before_stop.write_text(json.dumps(dict(payload, session_id=payload["session_id"] + "-baseline")))
            own_cache = dict(fresh, STOPRULE_CACHE_DIR=str(tmp / "cache-baseline"))  # (its compiler differs)
            start_session([*argv, "hook", "claude-code"], before_stop, own_cache)
            cmds["baseline"] = ([*argv, "hook", "claude-code", "<", str(before_stop)], own_cache)
            labels["baseline"] = f"the same stop by commit {args.baseline} (fresh process, wired alike)"
        for spec in args.cmd:
            label, _, line = spec.partition("=")
            line = line.format(python=py, stoprule=script, payload=str(files["claude-code"]))
            cmds[label] = (shlex.split(line), fresh)
            labels[label] = label + ": " + line.replace(str(vb) + "/", "").replace(str(tmp) + "/", "")

        print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus; venv {vb}")
        print(f"tree: {tree_state()}")
        print(
            "project: a git repository with one commit, `stoprule init --harness claude-code` and `--harness codex`"
            " (ledger on, every provider); the recorded Claude Code and Codex transcripts and last Stop payloads,"
            + (" each session started by its wired session-start hook" if SESSION_START else " no session start")
        )
        if not args.only_cmd:
            print(f"hookify: {where}")
            print(f"guard: {'timed' if has_guard else 'not timed: this stoprule has no `guard` command'}")
        print(f"{args.runs} timed runs per command after one warm-up, round-robin; load average before: {_load()}")
        res, said = measure(cmds, proj, args.runs)
        print(f"\n== median wall and ratio to bare Python (same run); bytecode cached; load after: {_load()}")
        met = report(res, labels, targets)
        if targets:
            verdict = "all MET" if met else "NOT all met"
            print(f"  targets: {verdict} (stop <= {STOP_TARGET}x, guard <= {GUARD_TARGET}x)")
            base = statistics.median(res["bare"][0])
            for key, target in targets.items():
                ratio = statistics.median(res[key][0]) / base
                met_it = "MET" if ratio <= target else "NOT MET"
                print(f"    {key:<10} {ratio:5.2f}x wall (target <= {target:g}x): {met_it}")
        print("  what each stop's last run decided (its stderr line):")
        for name, text in said.items():
            line = next((ln for ln in text.splitlines() if ln.startswith("stoprule hook:")), None)
            if line is not None:
                print(f"    {name}: {line.replace(str(tmp), '$TMP')[:150]}")
        wired_cc = wired_commands(files["project"])["claude-code"]
        if args.phases:
            launch = next(a for a in wired_cc if a.endswith("launch.py"))
            flags = wired_cc[: wired_cc.index(launch)]
            for harness in ("claude-code", "codex"):
                phases([*flags, str(Path(launch).parent.parent)], files[harness], fresh, proj, args.phases, harness)
            if args.baseline:
                print(f"  (the same for commit {args.baseline}:)")
                phases([*flags, str(before)], before_stop, own_cache, proj, args.phases)
        if args.importtime_runs:
            importtime(wired_cc, files["claude-code"], fresh, proj, args.importtime_runs)
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
