"""Wall time of one ``stoprule hook claude-code`` process beside ``python -c pass``.

    python benchmarks/bench_hook.py [--runs 21] [--sizes 1,100]

Synthetic Claude Code transcripts of each size in MB (tool calls, results, a todo list
near the end) are written to a temp dir. Runs go round-robin (bare, then each size) after
a warm-up that fills the compiled-pack and config caches, each hook run with a new
session id (so its transcript is read cold: the worst case per stop). Bytecode is cached
in a temp dir (PYTHONDONTWRITEBYTECODE unset, PYTHONPYCACHEPREFIX set).

Targets: <= 60 ms above bare Python at 1 MB; 100 MB within 10 % of 1 MB.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import tree_state  # noqa: E402


def venv_bin() -> Path:
    here = Path(sys.executable).parent
    return here if (here / "stoprule").exists() else HERE.parent / ".venv" / "bin"


def _line(obj: dict) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode() + b"\n"


def transcript(path: Path, mb: int) -> None:
    """A Claude Code transcript of about ``mb`` MB."""
    target = mb * 1024 * 1024
    env = {"sessionId": "bench", "cwd": "/bench", "version": "2.1.240"}
    with path.open("wb") as fh:
        size, i = 0, 0
        while size < target - 4096:
            chunk = _line({**env, "type": "user", "uuid": f"u{i}", "message": {"role": "user", "content": f"step {i}"}})
            chunk += _line(
                {
                    **env,
                    "type": "assistant",
                    "uuid": f"a{i}",
                    "message": {
                        "id": f"m{i}",
                        "role": "assistant",
                        "content": [
                            {
                                "type": "tool_use",
                                "id": f"t{i}",
                                "name": "Read",
                                "input": {"file_path": f"/bench/f{i}.py"},
                            }
                        ],
                    },
                }
            )
            chunk += _line(
                {
                    **env,
                    "type": "user",
                    "uuid": f"r{i}",
                    "message": {
                        "role": "user",
                        "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": "x = 1\n" * 120}],
                    },
                }
            )
            fh.write(chunk)
            size += len(chunk)
            i += 1
        todos = [{"content": "Write parser", "status": "completed", "activeForm": "w"},
                 {"content": "Write tests", "status": "pending", "activeForm": "w"}]  # fmt: skip
        fh.write(
            _line(
                {
                    **env,
                    "type": "assistant",
                    "uuid": "z",
                    "message": {
                        "id": "mz",
                        "role": "assistant",
                        "content": [{"type": "tool_use", "id": "tz", "name": "TodoWrite", "input": {"todos": todos}}],
                    },
                }
            )
        )


def timed(cmd: list[str], env: dict[str, str], cwd: str, data: bytes | None) -> float:
    t0 = time.perf_counter()
    p = subprocess.run(cmd, input=data, capture_output=True, env=env, cwd=cwd)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"{cmd} exited {p.returncode}: {p.stderr.decode()[:500]}")
    return wall


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--sizes", default="1,100", help="transcript sizes in MB (default 1,100)")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    vb = venv_bin()
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        (t / "proj" / ".stoprule").mkdir(parents=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith("STOPRULE_") and k != "PYTHONDONTWRITEBYTECODE"}
        env.update(STOPRULE_CACHE_DIR=str(t / "cache"), PYTHONPYCACHEPREFIX=str(t / "pyc"), HOME=str(t / "home"))
        paths = {}
        for mb in sizes:
            paths[mb] = t / f"t{mb}.jsonl"
            transcript(paths[mb], mb)
        bare = [str(vb / "python"), "-c", "pass"]
        hook = [str(vb / "stoprule"), "hook", "claude-code"]
        cwd = str(t / "proj")

        def stop(mb: int, n: int) -> bytes:
            return json.dumps(
                {
                    "session_id": f"bench-{mb}-{n}",
                    "prompt_id": "p",
                    "cwd": cwd,
                    "hook_event_name": "Stop",
                    "stop_hook_active": False,
                    "last_assistant_message": "done",
                    "transcript_path": str(paths[mb]),
                }
            ).encode()

        timed(bare, env, cwd, None)
        for mb in sizes:
            timed(hook, env, cwd, stop(mb, -1))
        results: dict[str, list[float]] = {"bare": [], **{f"{mb} MB": [] for mb in sizes}}
        for n in range(args.runs):
            results["bare"].append(timed(bare, env, cwd, None))
            for mb in sizes:
                results[f"{mb} MB"].append(timed(hook, env, cwd, stop(mb, n)))
        entry = json.loads((t / "proj" / ".stoprule" / "hook.log").read_text().splitlines()[-1])
    med = {k: statistics.median(v) * 1000 for k, v in results.items()}
    print(
        f"stoprule hook claude-code, {args.runs} runs each, medians ({tree_state()}; Python {sys.version.split()[0]})"
    )
    print(f"  python -c pass        {med['bare']:7.1f} ms")
    for mb in sizes:
        k = f"{mb} MB"
        print(f"  hook, {k:>7} transcript {med[k]:7.1f} ms  (+{med[k] - med['bare']:.1f} ms over bare)")
    if len(sizes) >= 2:
        a, b = med[f"{sizes[0]} MB"], med[f"{sizes[-1]} MB"]
        print(f"  {sizes[-1]} MB vs {sizes[0]} MB: {100 * (b - a) / a:+.1f} %  (target: within 10 %)")
    print(f"  last decision: {entry.get('verdict', {}).get('reason')} (the todo list was found)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
