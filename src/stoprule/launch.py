"""The command as ``stoprule init`` wires it: ``PYTHON -I -S .../stoprule/launch.py ARGS``
(:mod:`stoprule._util.launcher`). On the cold path, run as a file and so compiled at every
start: keep it short."""

import sys
from posix import _path_normpath, getcwd  # type: ignore[attr-defined]  # os's, without importing os

_here = _path_normpath(__file__ if __file__.startswith("/") else f"{getcwd()}/{__file__}").rsplit("/", 2)[0]
if _here not in sys.path:
    sys.path.append(_here)  # the folder holding the package (-S: no site)
if __name__ == "__main__":
    from stoprule._util.launcher import start

    start()
    from stoprule.cli.main import main

    raise SystemExit(main())
