"""Install the real harness programs at their pinned versions (harnesses.PINNED) into
``$STOPRULE_HARNESS_CACHE`` (default ``~/.cache/stoprule-harnesses``), outside the tree.

    python tests/harness/install.py [HARNESS ...]

Each goes to its own folder, named by harness and version, with ``npm install --prefix``;
one already there is not installed again (``STOPRULE_HARNESS_LATEST=1``: the newest releases).
Exits non-zero when npm is missing or fails.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harnesses import PINNED, binary, cache_dir, install, version  # noqa: E402


def main(names: list[str]) -> int:
    for name in names or list(PINNED):
        install(name)
        print(f"{name}: {PINNED[name][0]}@{version(name)} at {binary(name)}")
    print(f"cache: {cache_dir()}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
