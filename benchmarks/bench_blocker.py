"""One `blocker` call through a warm `stoprule mcp` server (seed 003: <= 50 ms median).

Starts `python -m stoprule mcp` in a temporary project, talks to it with the `mcp`
SDK's stdio client, warms it up (pack loaded, first write done), then times N
`blocker` calls end to end (client request -> server -> store append + fsync +
blockers.md re-render -> response), each a distinct blocker (no dedupe shortcut),
and prints the median, p90 and max. Needs the `mcp` extra.

    .venv/bin/python benchmarks/bench_blocker.py [N]      # default N = 200
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
from _common import REPO, tree_state
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

TARGET_MS = 50.0


async def main(n: int) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        (project / ".stoprule").mkdir()
        # per-run limit raised so that every call is a real write
        (project / ".stoprule" / "config.yaml").write_text(f"blockers:\n  max_per_run: {n + 50}\n")
        env = {**os.environ, "STOPRULE_POLICY": str(REPO / "policies"), "STOPRULE_SESSION": "bench"}
        params = StdioServerParameters(command=sys.executable, args=["-m", "stoprule", "mcp"], cwd=tmp, env=env)
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            for i in range(10):  # warm-up: pack compiled/cached, files created
                await session.call_tool(
                    "blocker",
                    {
                        "category": "missing_dependency",
                        "question": f"warm {i}?",
                        "context": "warm-up",
                        "blocksProgress": True,
                    },
                )
            times = []
            for i in range(n):
                args = {"category": "missing_dependency", "question": f"Which credentials for service {i}?",
                        "context": "integration tests", "blocksProgress": i % 2 == 0}  # fmt: skip
                t0 = time.perf_counter()
                res = await session.call_tool("blocker", args)
                times.append((time.perf_counter() - t0) * 1000)
                assert not res.is_error, res
        med = statistics.median(times)
        p90 = statistics.quantiles(times, n=10)[-1]
        print(f"commit {tree_state()}")
        print(
            f"blocker via MCP stdio, warm server, {n} calls: median {med:.1f} ms, p90 {p90:.1f} ms, "
            f"max {max(times):.1f} ms (target median <= {TARGET_MS:.0f} ms)"
        )
        return 0 if med <= TARGET_MS else 1


if __name__ == "__main__":
    sys.exit(anyio.run(main, int(sys.argv[1]) if len(sys.argv) > 1 else 200))
