"""Print the real sessions of the tier's scenarios (for docs/agents.md):

    python tests/harness/show_sessions.py HARNESS [SCENARIO ...]

Each scenario (scenarios.py) runs once in the real harness against the scripted model;
the output is what the model was sent (->), what it answered (<-) and each stop's decision.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harnesses import PINNED, run_session  # noqa: E402
from scenarios import SCENARIOS  # noqa: E402


def main(harness: str, names: list[str]) -> None:
    package, version, _ = PINNED[harness]
    for name in names or list(SCENARIOS):
        turns, default = SCENARIOS[name](__import__("harnesses").DRIVERS[harness])
        s = run_session(harness, Path(tempfile.mkdtemp(prefix="stoprule-show-")), turns, default)
        print(f"# {name}: {package} {version}, exit {s.result.returncode if s.result else '?'}")
        print("\n".join(s.transcript()))
        print()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
